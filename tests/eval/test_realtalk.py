"""REALTALK chats as transcripts: one line per message at its own time, evidence slips repaired."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.errors import SourceError
from memoryd.eval import realtalk
from memoryd.sources.transcripts import parse_transcript


def tiny_chat() -> dict[str, Any]:
    """Two sessions of a made-up chat in REALTALK's layout (not REALTALK data)."""
    return {
        "name": {"speaker_1": "Ana", "speaker_2": "ben"},
        "session_1": [
            {"clean_text": "I got a  kayak!", "speaker": "Ana", "date_time": "29.12.2023, 22:42:04", "dia_id": "D1:1"},
            {"clean_text": "Where?", "speaker": "Ben", "date_time": "30.12.2023, 00:32:20", "dia_id": "D1:2"},
            {"clean_text": "At the lake shop", "speaker": "Ana", "date_time": "30.12.2023, 00:33:00", "dia_id": "D1:3"},
        ],
        "session_1_date_time": "29.12.2023, 22:42:04",
        "session_2": [
            {"clean_text": "Paddled today", "speaker": "Ana", "date_time": "02.01.2024, 09:00:00", "dia_id": "D2:1"},
        ],
        "qa": [
            {"question": "What did Ana buy?", "answer": "a kayak", "evidence": ["D1:1-D1:3"], "category": 1},
            {"question": "When did Ana paddle?", "answer": "2 Jan", "evidence": ["D2:1."], "category": 2},
            {"question": "Does Ben swim?", "answer": "?", "evidence": ["D9:9", ""], "category": 3},
        ],
    }


def write(tmp_path: Path, chat: dict[str, Any], name: str = "Chat_1_Ana_Ben.json") -> Path:
    (tmp_path / name).write_bytes(orjson.dumps(chat))
    return tmp_path


def test_each_message_is_one_line_with_its_own_time_and_role(tmp_path: Path) -> None:
    data = realtalk.load_realtalk(write(tmp_path, tiny_chat()))
    (group,) = data.groups
    assert group.agent_id == "chat-1-ana-ben"
    parsed = parse_transcript(group.files["sessions/session_01.jsonl"].encode())
    assert parsed.content.splitlines() == [
        "User: Ana: I got a kayak!",
        "Assistant: Ben: Where?",
        "User: Ana: At the lake shop",
    ]
    assert parsed.line_map == (1, 2, 3)
    first = orjson.loads(group.files["sessions/session_01.jsonl"].splitlines()[1])
    assert first["timestamp"] == "2023-12-30T00:32:20.000Z"


def test_evidence_ranges_are_expanded_and_questions_without_evidence_skipped(tmp_path: Path) -> None:
    data = realtalk.load_realtalk(write(tmp_path, tiny_chat()))
    (group,) = data.groups
    by_question = {q.question: q for q in group.questions}
    assert by_question["What did Ana buy?"].lines == {("sessions/session_01.jsonl", n) for n in (1, 2, 3)}
    assert by_question["When did Ana paddle?"].lines == {("sessions/session_02.jsonl", 1)}
    assert "Does Ben swim?" not in by_question
    assert (data.counts["skipped_no_evidence"], data.counts["unresolved_evidence"]) == (1, 1)


@given(st.integers(1, 40), st.integers(1, 80), st.integers(0, 5))
def test_a_range_names_every_turn_from_first_to_last(session: int, first: int, extra: int) -> None:
    last = first + extra
    expected = [f"D{session}:{t}" for t in range(first, last + 1)]
    assert realtalk.parse_evidence(f"D{session}:{first}-D{session}:{last}") == expected
    assert realtalk.parse_evidence(f"D{session}:{first}-{last}") == expected


def test_glued_and_dotted_ids_are_split() -> None:
    assert realtalk.parse_evidence("D13:45:D20:19") == ["D13:45", "D20:19"]
    assert realtalk.parse_evidence("D5:12;D5:16") == ["D5:12", "D5:16"]
    assert realtalk.parse_evidence("D5:3.") == ["D5:3"]
    assert realtalk.parse_evidence("") == []


def test_an_empty_or_broken_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no REALTALK chats"):
        realtalk.load_realtalk(tmp_path)
    broken = tiny_chat()
    del broken["name"]
    with pytest.raises(SourceError, match=r"Chat_2\.json: unexpected layout"):
        realtalk.load_realtalk(write(tmp_path, broken, "Chat_2.json"))
