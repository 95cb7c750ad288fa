"""LoCoMo loading, evidence repair, conversion to transcripts, and qrels by (file, line)."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.errors import SourceError
from memoryd.eval import locomo
from memoryd.eval.locomo import Repair
from memoryd.sources.transcripts import parse_transcript
from tests.eval.conftest import tiny_sample, write_dataset

S1 = "sessions/session_01.jsonl"
S2 = "sessions/session_02.jsonl"


def test_each_session_becomes_one_transcript_with_one_line_per_turn(tiny_path: Path) -> None:
    (conv,) = locomo.load_locomo(tiny_path).conversations
    files = locomo.workspace_files(conv)
    assert sorted(files) == [S1, S2]
    assert [len(text.splitlines()) for text in files.values()] == [5, 5]
    assert all(text.endswith("\n") for text in files.values())


def test_a_turn_is_a_compact_message_record_with_its_shared_image_caption(tiny_path: Path) -> None:
    (conv,) = locomo.load_locomo(tiny_path).conversations
    second = locomo.workspace_files(conv)[S1].splitlines()[1]
    assert second == (
        '{"type":"message","timestamp":"2023-05-08T13:56:30.000Z","message":{"role":"assistant",'
        '"content":[{"type":"text","text":"Bob: Congrats Alice! I started learning the cello in March. '
        '[shares a photo of a cello leaning on a chair]"}]}}'
    )


def role_of(line: str) -> str:
    role: str = orjson.loads(line)["message"]["role"]
    return role


def test_roles_follow_the_speakers_so_they_alternate_even_when_bob_opens(tiny_path: Path) -> None:
    (conv,) = locomo.load_locomo(tiny_path).conversations
    files = locomo.workspace_files(conv)
    roles = {path: [role_of(line) for line in text.splitlines()] for path, text in files.items()}
    assert roles[S1] == ["user", "assistant", "user", "assistant", "user"]
    assert roles[S2] == ["assistant", "user", "assistant", "user", "assistant"]


def test_timestamps_start_at_the_session_date_and_step_thirty_seconds(tiny_path: Path) -> None:
    (conv,) = locomo.load_locomo(tiny_path).conversations
    lines = locomo.workspace_files(conv)[S2].splitlines()
    stamps = [orjson.loads(line)["timestamp"] for line in lines]
    assert stamps[:3] == ["2023-06-19T10:04:00.000Z", "2023-06-19T10:04:30.000Z", "2023-06-19T10:05:00.000Z"]


def test_memoryds_own_transcript_reader_maps_each_turn_to_its_line(tiny_path: Path) -> None:
    (conv,) = locomo.load_locomo(tiny_path).conversations
    parsed = parse_transcript(locomo.workspace_files(conv)[S1].encode())
    assert parsed.line_map == (1, 2, 3, 4, 5)
    assert parsed.malformed_lines == 0
    assert parsed.content.splitlines()[3] == "Assistant: Bob: My sister Petra moved to Lisbon for work."


@pytest.mark.parametrize(
    ("raw", "fixed"),
    [
        ("D2:1", ("D2:1",)),
        ("D:11:26", ("D11:26",)),
        ("D30:05", ("D30:5",)),
        ("D8:6; D9:17", ("D8:6", "D9:17")),
        ("D9:1 D4:4 D4:6", ("D9:1", "D4:4", "D4:6")),
        ("D", ()),
        ("", ()),
    ],
)
def test_evidence_ids_are_repaired(raw: str, fixed: tuple[str, ...]) -> None:
    assert locomo.repair_evidence_id(raw) == fixed


@given(st.integers(0, 999), st.integers(0, 999), st.sampled_from(["D{s}:{t}", "D:{s}:{t}", "D{s}:{t:03d}"]))
def test_any_spelling_of_an_id_repairs_to_the_canonical_one(session: int, turn: int, form: str) -> None:
    assert locomo.repair_evidence_id(form.format(s=session, t=turn)) == (f"D{session}:{turn}",)


def test_qrels_point_at_the_lines_of_the_evidence_turns(tiny_path: Path) -> None:
    (conv,) = locomo.load_locomo(tiny_path).conversations
    by_question = {q.question: q for q in locomo.qrels(conv)}
    assert len(by_question) == 4  # the question without evidence is skipped
    assert by_question["What is the name of Alice's greyhound?"].lines == {(S1, 1)}
    multi_hop = by_question["Where does Bob's sister Petra live, and what did she send him?"]
    assert multi_hop.lines == {(S1, 4), (S2, 3)}
    assert by_question["Where does Comet love running?"].lines == {(S1, 3)}
    assert by_question["What did Bob paint for the library?"].lines == {(S1, 5), (S2, 4)}
    assert [q.category for q in locomo.qrels(conv)] == [4, 1, 4, 5]


def test_repairs_and_ids_naming_no_turn_are_recorded(tiny_path: Path) -> None:
    (conv,) = locomo.load_locomo(tiny_path).conversations
    assert conv.repairs == (
        Repair("conv-t1:q0003", "D:1:3", ("D1:3",)),
        Repair("conv-t1:q0004", "D1:5; D2:04", ("D1:5", "D2:4")),
        Repair("conv-t1:q0004", "D", ()),
    )
    adversarial = conv.questions[3]
    assert (adversarial.evidence, adversarial.unresolved) == (("D1:5", "D2:4"), ("D7:2",))
    assert locomo.counts([conv]) == {
        "conversations": 1,
        "sessions": 2,
        "turns": 10,
        "questions": 5,
        "skipped_no_evidence": 1,
        "evidence_repairs": 3,
        "unresolved_evidence": 1,
    }


def test_pooled_workspaces_name_each_transcript_after_its_conversation(two_conversations_path: Path) -> None:
    first, second = locomo.load_locomo(two_conversations_path).conversations
    assert sorted(locomo.workspace_files(second, pooled=True)) == [
        "sessions/conv-t2_session_01.jsonl",
        "sessions/conv-t2_session_02.jsonl",
    ]
    assert locomo.qrels(second, pooled=True)[0].lines == {("sessions/conv-t2_session_01.jsonl", 1)}
    assert locomo.qrels(first, pooled=True)[0].qid == "conv-t1:q0001"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56)),
        ("12:28 am on 8 November, 2023", datetime(2023, 11, 8, 0, 28)),
        ("12:05 pm on 29 February, 2024", datetime(2024, 2, 29, 12, 5)),
    ],
)
def test_session_dates_are_read_without_a_locale(text: str, expected: datetime) -> None:
    assert locomo.parse_session_date(text) == expected


@pytest.mark.parametrize("text", ["yesterday", "1:56 pm on 8 Maytember, 2023", "1:56 pm on 30 Feb, 2023"])
def test_an_unreadable_session_date_is_a_source_error(text: str) -> None:
    with pytest.raises(SourceError, match="session date"):
        locomo.parse_session_date(text)


def test_unreadable_or_misshapen_files_are_source_errors(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="cannot read"):
        locomo.load_locomo(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(SourceError, match="not JSON"):
        locomo.load_locomo(tmp_path / "bad.json")
    (tmp_path / "empty.json").write_text("[]", encoding="utf-8")
    with pytest.raises(SourceError, match="non-empty list"):
        locomo.load_locomo(tmp_path / "empty.json")
    broken = tiny_sample()
    del broken["qa"]
    with pytest.raises(SourceError, match="conv-t1: unexpected layout"):
        locomo.load_locomo(write_dataset(tmp_path / "broken.json", [broken]))


def test_rewriting_a_workspace_keeps_equal_files_and_drops_stale_ones(
    tiny_path: Path,
    tmp_path: Path,
) -> None:
    (conv,) = locomo.load_locomo(tiny_path).conversations
    root = tmp_path / "ws"
    locomo.write_workspace(root, {**locomo.workspace_files(conv), "sessions/session_09.jsonl": "{}\n"})
    os.utime(root / S1, ns=(1_000_000_000, 1_000_000_000))
    locomo.write_workspace(root, locomo.workspace_files(conv))
    assert sorted(p.name for p in (root / "sessions").iterdir()) == ["session_01.jsonl", "session_02.jsonl"]
    assert (root / S1).stat().st_mtime_ns == 1_000_000_000
    assert (root / S2).read_text(encoding="utf-8") == locomo.workspace_files(conv)[S2]
