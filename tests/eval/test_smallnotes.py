"""The one-note workspaces: every question's evidence is the fact line it asks about."""

from __future__ import annotations

from pathlib import Path

from memoryd.eval import smallnotes
from memoryd.eval.cli import LOADERS


def test_each_question_points_at_its_fact_line() -> None:
    data = smallnotes.load_smallnotes()
    assert len(data.groups) == len(smallnotes.NOTES)
    for group, (facts, asked) in zip(data.groups, smallnotes.NOTES, strict=True):
        lines = group.files[smallnotes.NOTE].splitlines()
        for q, (question, fact) in zip(group.questions, asked, strict=True):
            ((path, line),) = q.lines
            assert (path, q.question) == (smallnotes.NOTE, question)
            assert lines[line - 1] == facts[fact]


def test_paraphrases_share_no_content_word_with_their_line() -> None:
    data = smallnotes.load_smallnotes()
    by_text = {q.question: q.category for g in data.groups for q in g.questions}
    assert by_text["what editor do I use"] == 1  # "Uses Neovim with the lazy.nvim setup"
    assert by_text["how do I take my coffee"] == 2  # "Favourite coffee: ..."
    assert data.counts["paraphrases"] == sum(1 for c in by_text.values() if c == 1)


def test_registered_and_the_path_is_ignored() -> None:
    assert LOADERS["smallnotes"](Path("-"), False).name == "smallnotes"
