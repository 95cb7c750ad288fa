"""aider chat histories as transcripts: sessions, messages, held-out requests and their answers."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from memoryd.errors import SourceError
from memoryd.eval import aider
from memoryd.eval.cli import LOADERS
from memoryd.sources.transcripts import parse_transcript

LONG = " ".join(f"word{i}" for i in range(60))


def history(requests: int = 6) -> str:
    """A made-up aider history (not anyone's data): commands, tool output, an /ask and its echo."""
    parts = [
        "",
        "# aider chat started at 2025-03-01 10:00:00",
        "",
        "> aider --model some-model  ",
        "> Aider v0.80.0  ",
        "",
        "#### /add src/app.py  ",
        "> Added src/app.py to the chat  ",
        "",
        "#### /ask why does the retry loop in fetch_rows never stop after three attempts  ",
        "",
        "#### why does the retry loop in fetch_rows never stop after three attempts  ",
        "",
        f"The counter is reset inside the loop. {LONG}",
        "",
        "```python",
        "attempts = 0",
        "```",
        "",
        "> Tokens: 1.2k sent, 300 received.  ",
        "",
        "Move it above the loop instead.",
        "",
        "#### Add file to the chat? (Y)es/(N)o [Yes]: y  ",
        "",
        "# aider chat started at 2025-03-02 09:30:00",
        "",
    ]
    for n in range(requests):
        request = f"#### please rename the helper number {n} to load_config_{n} everywhere  "
        parts += [request, "", f"Renamed {n}. {LONG}", ""]
    parts += ["#### ok", "", "Done.", ""]
    return "\n".join(parts)


def test_sessions_keep_user_and_assistant_text_without_commands_or_tool_output() -> None:
    first, second = aider.parse_history(history())
    assert [m.role for m in first.messages] == ["user", "assistant"]
    assert first.messages[0].text == "why does the retry loop in fetch_rows never stop after three attempts"
    answer = first.messages[1].text
    assert answer.startswith("The counter is reset inside the loop.")
    assert "attempts = 0" in answer and answer.endswith("Move it above the loop instead.")
    assert "Tokens" not in answer and "(Y)es" not in answer
    assert len(second.messages) == 14 and second.messages[-1].text == "Done."


def test_architect_mode_relaying_its_answer_to_the_editor_is_not_a_user_message() -> None:
    plan = " ".join(f"step{i} edit the parser" for i in range(12))
    text = "\n".join(
        [
            "# aider chat started at 2025-03-01 10:00:00",
            "#### /architect plan the parser rewrite please, step by step",
            "",
            f"Here is the plan. {plan} Then run the tests.",
            "",
            f"#### {plan}",  # aider hands the architect's plan to the editor model
            "",
            "Applied the edits.",
            "#### yes",  # short and found in no answer: the user's own
            "",
            "Done.",
        ]
    )
    (session,) = aider.parse_history(text)
    assert [m.role for m in session.messages] == ["user", "assistant", "user", "assistant"]
    assert session.messages[1].text.endswith("Applied the edits.")
    assert session.messages[2].text == "yes"


def test_questions_are_held_out_and_their_evidence_is_the_answer(tmp_path: Path) -> None:
    (tmp_path / "Tool.md").write_text(history())
    data = aider.load_aider(tmp_path)
    (group,) = data.groups
    assert group.agent_id == "tool"
    assert sorted(group.files) == ["sessions/tool-01.jsonl", "sessions/tool-02.jsonl"]
    assert data.counts["eligible"] == 7 and len(group.questions) == 7  # "ok" is too short to ask
    texts = {q.question for q in group.questions}
    for rel, body in group.files.items():
        parsed = parse_transcript(body.encode())
        for line in parsed.content.splitlines():
            assert not any(t in line for t in texts)  # a question cannot find itself
        records = [orjson.loads(r) for r in body.splitlines()]
        assert all(r["message"]["role"] == "assistant" for r in records if "Renamed" in str(r))
        if rel.endswith("-02.jsonl"):
            assert records[0]["timestamp"] == "2025-03-02T09:30:01.000Z"
    retry = next(q for q in group.questions if "retry" in q.question)
    assert retry.category == 1  # the answer holds a code fence
    ((path, number),) = retry.lines
    record = orjson.loads(group.files[path].splitlines()[number - 1])
    assert record["message"]["content"][0]["text"].startswith("The counter is reset")
    assert {q.category for q in group.questions if "rename" in q.question} == {2}


def test_a_project_with_too_few_requests_is_left_out(tmp_path: Path) -> None:
    (tmp_path / "big.md").write_text(history())
    (tmp_path / "small.md").write_text(history(requests=2))
    data = aider.load_aider(tmp_path)
    assert [g.agent_id for g in data.groups] == ["big"]
    assert data.counts["skipped_projects"] == 1
    with pytest.raises(SourceError, match="yields a question"):
        aider.load_aider(_only(tmp_path / "only-small", history(requests=2)))


def _only(folder: Path, text: str) -> Path:
    folder.mkdir()
    (folder / "x.md").write_text(text)
    return folder


def test_repeated_requests_and_quoted_requests_are_not_questions(tmp_path: Path) -> None:
    text = history() + "\n#### please rename the helper number 1 to load_config_1 everywhere\n\nAgain. " + LONG + "\n"
    (tmp_path / "p.md").write_text(text)
    (group,) = aider.load_aider(tmp_path).groups
    assert not any("number 1 " in q.question for q in group.questions)


def test_registered_as_an_eval_set(tmp_path: Path) -> None:
    (tmp_path / "p.md").write_text(history())
    assert LOADERS["aider"](tmp_path, False).name == "aider"
    with pytest.raises(SourceError):
        LOADERS["aider"](tmp_path / "missing", False)
