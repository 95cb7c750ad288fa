"""The snippet window: what matched is shown, within the budget, as a slice of the chunk's own lines."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.search.scoring import utf16_len
from memoryd.search.snippets import best_window, query_stems
from memoryd.search.terms import contains, fold

NOTE = "\n".join(
    [f"- Day {i}: weekly planning for project alpha, ticket {i}, reviewed with the team." for i in range(25)]
    + ["- Uses Neovim with the lazy.nvim setup for editing."]
)


def test_a_line_appended_to_a_long_note_is_shown() -> None:
    window = best_window(NOTE, query_stems("which Neovim setup do I use"))
    assert "Uses Neovim with the lazy.nvim setup" in window.text
    assert window.last_line == 25
    assert utf16_len(window.text) <= 700
    assert window.first_line > 0  # earlier lines fill the budget back, the head is not shown
    assert window.text[window.match_at :].startswith("- Day 24")  # where the window proper opens, past them


def test_the_window_opens_one_line_before_the_line_that_matches() -> None:
    # An answer's first line often holds fewer of the question's words than the next: it leads the window in.
    text = NOTE.replace("- Day 12: weekly planning", "- Day 12: the dentist appointment moved, weekly planning")
    window = best_window(text, query_stems("when is the dentist appointment"))
    assert window.first_line == 11
    assert window.text.startswith(
        "- Day 11: weekly planning for project alpha, ticket 11, reviewed with the team.\n- Day 12: the dentist"
    )
    assert window.match_at == 0  # no context taken back: the snippet opens on its match


def test_a_window_covering_more_query_words_wins() -> None:
    lines = [f"Line {i} about gardening and compost." for i in range(40)]
    lines[5] = "The tomatoes need water."
    lines[30] = "The tomatoes were planted beside the basil in April."
    window = best_window("\n".join(lines), query_stems("tomatoes basil April"))
    assert "planted beside the basil" in window.text and "need water" not in window.text
    assert window.first_line <= 30 and window.last_line == 39  # it reached the end: earlier lines fill it back


def test_a_line_longer_than_the_budget_opens_at_its_matching_sentence() -> None:
    filler = " ".join(f"Sentence {i} talks about the build pipeline and its caches." for i in range(40))
    text = f"{filler} The staging database password rotation happens every ninety days. {filler}"
    window = best_window(text, query_stems("password rotation staging"))
    assert window.text.startswith("Sentence 39 talks about the build pipeline and its caches. The staging database")
    assert (window.first_line, window.last_line) == (0, 0)
    assert utf16_len(window.text) <= 700


def test_a_chunk_within_the_budget_and_a_hit_without_query_words_are_served_from_the_head() -> None:
    short = "one\ntwo\nthree"
    assert best_window(short, query_stems("three")).text == short
    unmatched = best_window(NOTE, query_stems("quasar"))
    first = best_window(NOTE, query_stems("Day 0 weekly"))
    assert first.first_line == 0 and first.text.startswith("- Day 0:")  # the chunk's first line: nothing leads in
    assert NOTE.startswith(unmatched.text) and unmatched.first_line == 0
    assert unmatched.last_line == unmatched.text.count("\n")


def test_stems_fold_diacritics_and_endings_as_the_keyword_leg_does() -> None:
    assert query_stems("Réunions meetings") == ("reunion", "meeting")
    window = best_window("x " * 400 + "\nLa réunion est lundi.", query_stems("reunion"))
    assert "réunion" in window.text


_WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "neovim", "tomato", "ünïcode", "日本語", "x" * 30])
_SEPARATORS = st.sampled_from([" ", " ", " ", "\n", ". ", ", "])
_TEXTS = st.lists(st.tuples(_WORDS, _SEPARATORS), min_size=1, max_size=400).map(
    lambda pairs: "".join(w + s for w, s in pairs)
)


@settings(max_examples=200, deadline=None)
@given(text=_TEXTS, query=st.lists(_WORDS, min_size=1, max_size=3).map(" ".join), budget=st.integers(80, 900))
def test_windows_are_slices_of_the_lines_they_name_within_the_budget(text: str, query: str, budget: int) -> None:
    stems = query_stems(query)
    window = best_window(text, stems, budget)
    assert utf16_len(window.text) <= budget
    lines = text.split("\n")
    assert 0 <= window.first_line <= window.last_line < len(lines)
    assert window.text in "\n".join(lines[window.first_line : window.last_line + 1])
    if utf16_len(text) > budget and any(contains(fold(text), s) for s in stems):
        assert any(s in fold(window.text) for s in stems)  # what matched is shown
    assert 0 <= window.match_at < max(1, utf16_len(window.text))
    if window.match_at:  # context was taken back before the match: the match opens a piece that matched
        rest = window.text.encode("utf-16-le", errors="surrogatepass")[2 * window.match_at :]
        assert any(s in fold(rest.decode("utf-16-le", errors="surrogatepass")) for s in stems)
