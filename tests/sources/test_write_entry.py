"""What memory_write appends and where: the pure part (checking the text, placing the block)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.errors import WriteRefusedError
from memoryd.sources.write.entry import MAX_TEXT_BYTES, Entry, check_entry, place, stamp_line
from tests.sources.secret_formats import TOKENS, Planted, pem

STAMP = "_2026-12-01 14:03 +01:00_"

markdown_lines = st.lists(
    st.one_of(
        st.sampled_from(["", "   ", "# Title", "## Decisions", "### Sub", "```", "~~~~", "- item", "text"]),
        st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n"), max_size=20),
    ),
    max_size=12,
)
simple_lines = st.lists(
    st.one_of(
        st.sampled_from(["", "# Title", "## Decisions", "## Notes", "### Sub", "```", "- item"]),
        st.text(alphabet="abc xyz.#`~", max_size=12).filter(lambda t: not t.startswith(("#", "`", "~", " "))),
    ),
    max_size=12,
)
"""Markdown whose headings and fences are all well-formed, so the test can find them by their first character."""
entry_texts = st.text(
    alphabet=st.characters(blacklist_categories=["Cs", "Cc"], whitelist_characters="\n\t"), min_size=1, max_size=80
).filter(lambda t: t.strip() and "```" not in t and "~~~" not in t)


def _apply(existing: str, entry: Entry, title: str = "2026-12-01") -> tuple[str, int, int]:
    placed = place(existing.encode(), entry, STAMP, title=title)
    return existing + placed.block.decode(), placed.start_line, placed.end_line


@given(markdown_lines, st.booleans(), entry_texts, st.none() | st.sampled_from(["Decisions", "Notes"]))
def test_the_block_is_appended_and_the_lines_are_the_entry(
    lines: list[str], final_newline: bool, text: str, heading: str | None
) -> None:
    existing = "\n".join(lines) + ("\n" if final_newline and lines else "")
    entry = check_entry(text, heading)
    result, start, end = _apply(existing, entry)
    assert result.startswith(existing)  # append only: not a byte of the old content changes
    numbered = result.split("\n")
    assert numbered[start - 1 : end] == [STAMP, *entry.text.split("\n")]
    assert result.endswith(entry.text + "\n")
    assert numbered[start - 2].strip() == ""  # a blank line before the entry: it is a block of its own


@given(simple_lines, entry_texts)
def test_an_entry_filed_under_a_heading_has_that_heading_as_its_last_heading_above(lines: list[str], text: str) -> None:
    existing = "\n".join(lines)
    result, start, _ = _apply(existing, check_entry(text, "Decisions"))
    above = result.split("\n")[: start - 1]
    fenced = False
    last = None
    for line in above:
        if line == "```":
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            last = line
    assert not fenced  # the entry never lands inside a code block
    assert last == "## Decisions"


def test_a_new_file_gets_its_title_and_the_entry_starts_on_line_3() -> None:
    result, start, end = _apply("", check_entry("We chose Postgres.", None))
    assert result == f"# 2026-12-01\n\n{STAMP}\nWe chose Postgres.\n"
    assert (start, end) == (3, 4)


def test_the_last_section_is_reused_and_an_earlier_one_is_started_again_at_the_end() -> None:
    existing = "# 2026-12-01\n\n## Decisions\n\nOld decision.\n\n## Todo\n\n- [ ] call Bob\n"
    under_todo, _, _ = _apply(existing, check_entry("Buy milk.", "todo"))
    assert under_todo == existing + f"\n{STAMP}\nBuy milk.\n"
    under_decisions, start, _ = _apply(existing, check_entry("Tabs.", "Decisions"))
    assert under_decisions == existing + f"\n## Decisions\n\n{STAMP}\nTabs.\n"
    assert start == existing.count("\n") + 4  # blank, heading, blank, stamp
    assert place(existing.encode(), check_entry("x", "Decisions"), STAMP, title="t").created_heading


def test_a_heading_inside_code_is_not_a_section_and_an_open_fence_is_closed_first() -> None:
    existing = "## Decisions\n\n```\n## not a heading\n"
    result, start, _ = _apply(existing, check_entry("Fence closed.", "Decisions"))
    assert result == existing + f"```\n\n{STAMP}\nFence closed.\n"
    assert result.split("\n")[start - 1] == STAMP


def test_a_file_without_a_final_newline_keeps_its_last_line_whole() -> None:
    result, start, _ = _apply("# Memory\n\nlast line", check_entry("Next.", None), title="Memory")
    assert result == f"# Memory\n\nlast line\n\n{STAMP}\nNext.\n"
    assert start == 5


def test_text_is_normalised_but_kept_as_written() -> None:
    entry = check_entry("\r\n  \n  - one\r\n  - two  \r\n\n", "  ## Prefs  ")
    assert entry == Entry("  - one\n  - two", "Prefs")


@pytest.mark.parametrize(
    ("text", "heading", "message"),
    [
        ("", None, "text is empty"),
        (" \n\t\n", None, "text is empty"),
        ("a" * (MAX_TEXT_BYTES + 1), None, f"text is {MAX_TEXT_BYTES + 1:,} bytes"),
        ("é" * (MAX_TEXT_BYTES // 2 + 1), None, "at most 16,384 (16 KiB)"),
        ("bell\x07", None, "control character (U+0007)"),
        ("nul\x00byte", None, "control character (U+0000)"),
        ("```python\nprint(1)\n", None, "opens a code fence on its line 1"),
        ("note", "  ##  ", "heading is empty"),
        ("note", "x" * 201, "heading is 201 characters"),
    ],
)
def test_bad_text_or_heading_is_refused_saying_why(text: str, heading: str | None, message: str) -> None:
    with pytest.raises(WriteRefusedError) as refused:
        check_entry(text, heading)
    assert message in str(refused.value)


def test_exactly_16_kib_of_utf8_is_accepted() -> None:
    assert len(check_entry("é" * (MAX_TEXT_BYTES // 2), None).text.encode()) == MAX_TEXT_BYTES


def _token(name: str, seed: int) -> Planted:
    secret = TOKENS[name](random.Random(seed))
    return Planted(f"Deploy key: {secret}", (secret,))


@pytest.mark.parametrize(
    ("planted", "kind"),
    [
        (_token("github ghp_", 1), "github-token"),
        (_token("anthropic sk-ant-", 2), "anthropic-key"),
        (_token("aws key id", 3), "aws-access-key-id"),
        (pem(random.Random(4)), "private-key"),
        (Planted("my password is Tr0ub4dor&3xyz", ("Tr0ub4dor&3xyz",)), "password-in-prose"),
        (Planted("db at postgres://bob:s3cr3tpass@db.example.com/app", ("s3cr3tpass",)), "url-password"),
    ],
)
def test_a_secret_is_refused_by_its_kind_and_never_repeated(planted: Planted, kind: str) -> None:
    one_line = planted.text.split("\n")[0] if kind != "private-key" else None
    for text, heading in ((planted.text, None), ("fine", one_line)):
        if heading is None and text == "fine":
            continue
        with pytest.raises(WriteRefusedError) as refused:
            check_entry(text, heading)
        assert kind in str(refused.value)
        for secret in planted.secrets:
            assert secret not in str(refused.value)
            assert secret[4:12] not in str(refused.value)


def test_the_stamp_is_local_time_with_its_offset() -> None:
    moment = datetime(2026, 12, 1, 14, 3, 59, tzinfo=timezone(timedelta(hours=-5, minutes=-30)))
    assert stamp_line(moment) == "_2026-12-01 14:03 -05:30_"
