"""FAQ pages as notes: every question heading a question, its answer's first line the evidence, and
the questions themselves kept out of the notes."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.errors import SourceError
from memoryd.eval import faq

PAGE = """# Tool FAQ

* [How do I pick a colour?](#colour)
* [Where is the config?](#config)

## How do I pick a colour?

Run the tool with a flag,
wrapped over two lines.

```sh
tool --colour red
```

### Colours on Windows

Use a terminal that speaks ANSI.

## My output is garbled!

Set `LANG` to a UTF-8 locale.

<h2 name="config">
Where is the config?
</h2>

- in `~/.config/tool`
- or `$TOOL_CONFIG`
"""


def test_every_question_heading_is_a_question_and_its_answer_follows() -> None:
    entries = faq.parse_faq(PAGE)
    assert [e.question for e in entries] == [
        "How do I pick a colour?",
        "My output is garbled!",  # at the question level, so a question without "?"
        "Where is the config?",
    ]
    colour = entries[0].answer
    assert colour[0] == "Run the tool with a flag, wrapped over two lines."  # a paragraph is one line
    assert "tool --colour red" in colour and "### Colours on Windows" in colour  # a sub-heading stays
    assert entries[2].answer == ("- in `~/.config/tool`", "- or `$TOOL_CONFIG`")


def test_notes_hold_the_answers_but_no_question_and_evidence_is_the_answers_first_line(tmp_path: Path) -> None:
    (tmp_path / "tool.md").write_text(PAGE, encoding="utf-8")
    (tmp_path / "other.md").write_text("# Other\n\n## Why?\n\nBecause.\n", encoding="utf-8")
    data = faq.load_faq(tmp_path, groups=2)
    assert [g.agent_id for g in data.groups] == ["faq-1", "faq-2"]
    tool = next(g for g in data.groups if "memory/tool.md" in g.files)
    note = tool.files["memory/tool.md"]
    lines = note.splitlines()
    for q in tool.questions:
        assert q.question not in note
        ((path, line),) = q.lines
        assert path == "memory/tool.md"
        assert lines[line - 1] == next(e.answer[0] for e in faq.parse_faq(PAGE) if e.question == q.question)
    assert "(#colour)" not in note  # the table of contents is gone with the questions


def test_a_directory_without_pages_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no FAQ pages"):
        faq.load_faq(tmp_path)
