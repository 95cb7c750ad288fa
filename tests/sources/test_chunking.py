"""Chunking (spec §3.3), line remapping and per-chunk byte limits (§3.4)."""

from __future__ import annotations

import hashlib
from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.sources.chunking import (
    Chunk,
    chunk_markdown,
    hash_text,
    remap_chunk_lines,
    split_for_input_limit,
    weighted_length,
)

# Characters that exercise every weight class: ASCII (1), Latin-1 (1), CJK and Hangul (4),
# emoji (2 UTF-16 units, weight 2), CJK Extension B (2 units, weight 4), and whitespace.
CHARACTERS = st.one_of(
    st.sampled_from("abcdefgh XYZ.#-é\t\r"),
    st.characters(min_codepoint=0x4E00, max_codepoint=0x4E2F),
    st.characters(min_codepoint=0xAC00, max_codepoint=0xAC0F),
    st.characters(min_codepoint=0x1F600, max_codepoint=0x1F60F),
    st.characters(min_codepoint=0x20000, max_codepoint=0x2000F),
)
LINES = st.lists(st.text(CHARACTERS, max_size=150), max_size=40)
TOKENS = st.integers(min_value=1, max_value=40)
OVERLAP = st.integers(min_value=0, max_value=60)


def max_chars(tokens: int) -> int:
    return max(32, tokens * 4)


def is_blank(text: str) -> bool:
    return not text.strip()


def shrink_to_weight(line: str, limit: int) -> str:
    while weighted_length(line) > limit:
        line = line[:-1]
    return line


def test_hash_text_is_the_lowercase_hex_sha256_of_the_utf8_text() -> None:
    assert hash_text("héllo 日本") == hashlib.sha256("héllo 日本".encode()).hexdigest()


def test_weighted_length_counts_cjk_four_emoji_two_and_everything_else_one() -> None:
    assert weighted_length("") == 0
    assert weighted_length("plain ascii") == 11
    assert weighted_length("café") == 4
    assert weighted_length("日本語") == 12
    assert weighted_length("한국") == 8
    assert weighted_length("😀") == 2
    assert weighted_length("𠀀") == 4
    assert weighted_length("a日😀𠀀") == 1 + 4 + 2 + 4


def test_empty_and_blank_content_give_no_chunks() -> None:
    assert chunk_markdown("") == []
    assert chunk_markdown("\n  \n\t\n") == []


def test_short_content_is_one_chunk_with_its_text_lines_and_hash() -> None:
    assert chunk_markdown("# Title\n\nbody\r\nend") == [
        Chunk(1, 4, "# Title\n\nbody\r\nend", hash_text("# Title\n\nbody\r\nend"))
    ]


def test_a_trailing_newline_makes_a_final_empty_line() -> None:
    [chunk] = chunk_markdown("one\ntwo\n")
    assert (chunk.start_line, chunk.end_line, chunk.text) == (1, 3, "one\ntwo\n")


def test_chunks_fill_up_to_max_chars_and_carry_whole_lines_within_the_overlap() -> None:
    # Each line costs 10 (9 characters + newline); maxChars 40 holds four; overlap 20 carries two.
    lines = [f"line {i:04d}" for i in range(1, 9)]
    chunks = chunk_markdown("\n".join(lines), tokens=10, overlap=5)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 4), (3, 6), (5, 8)]
    assert chunks[1].text == "\n".join(lines[2:6])


def test_no_overlap_means_disjoint_chunks() -> None:
    lines = [f"line {i:04d}" for i in range(1, 9)]
    chunks = chunk_markdown("\n".join(lines), tokens=10, overlap=0)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 4), (5, 8)]


def test_a_tail_larger_than_the_overlap_is_not_carried() -> None:
    # OpenClaw would carry the whole 35-character line and make a 71-character second chunk.
    chunks = chunk_markdown("a" * 35 + "\n" + "b" * 35, tokens=10, overlap=5)
    assert [(c.start_line, c.end_line, c.text) for c in chunks] == [(1, 1, "a" * 35), (2, 2, "b" * 35)]


def test_carried_lines_are_dropped_when_the_next_segment_would_not_fit() -> None:
    content = "a" * 20 + "\n" + "b" * 9 + "\n" + "c" * 35
    chunks = chunk_markdown(content, tokens=10, overlap=5)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 2), (3, 3)]


def test_max_chars_is_at_least_32() -> None:
    chunks = chunk_markdown("x" * 100, tokens=1, overlap=0)
    assert [c.text for c in chunks] == ["x" * 32, "x" * 32, "x" * 32, "x" * 4]
    assert {(c.start_line, c.end_line) for c in chunks} == {(1, 1)}


def test_a_long_cjk_line_is_resliced_by_tokens() -> None:
    line = "漢" * 500
    chunks = chunk_markdown(line, tokens=400, overlap=80)
    assert [len(c.text) for c in chunks] == [400, 100]
    assert all(weighted_length(c.text) <= 1600 for c in chunks)


def test_astral_characters_are_never_cut_in_half() -> None:
    line = "a" + "😀" * 20 + "𠀀" * 20
    chunks = chunk_markdown(line, tokens=8, overlap=0)
    assert "".join(c.text for c in chunks).replace("\n", "") == line
    for chunk in chunks:
        chunk.text.encode("utf-8")  # a lone surrogate would not encode
        assert weighted_length(chunk.text) <= 32


@settings(deadline=None, max_examples=300)
@given(lines=LINES, tokens=TOKENS, overlap=OVERLAP)
def test_chunks_cover_every_non_blank_line_in_order_within_max_chars(
    lines: list[str], tokens: int, overlap: int
) -> None:
    chunks = chunk_markdown("\n".join(lines), tokens=tokens, overlap=overlap)
    for line_no, line in enumerate(lines, 1):
        if not is_blank(line):
            assert any(c.start_line <= line_no <= c.end_line for c in chunks), line_no
    for chunk in chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= max(1, len(lines))
        assert weighted_length(chunk.text) <= max_chars(tokens)
        assert not is_blank(chunk.text)
        assert chunk.hash == hash_text(chunk.text)
        chunk.text.encode("utf-8")
    for earlier, later in pairwise(chunks):
        assert earlier.start_line <= later.start_line
        assert earlier.end_line <= later.end_line


@settings(deadline=None, max_examples=200)
@given(lines=LINES, tokens=TOKENS)
def test_without_overlap_chunks_lose_and_split_no_character(lines: list[str], tokens: int) -> None:
    content = "\n".join(lines)
    chunks = chunk_markdown(content, tokens=tokens, overlap=0)
    assert "".join("".join(c.text for c in chunks).split()) == "".join(content.split())


@settings(deadline=None, max_examples=300)
@given(lines=LINES, tokens=TOKENS, overlap=OVERLAP)
def test_consecutive_chunks_share_at_most_the_overlap(lines: list[str], tokens: int, overlap: int) -> None:
    # With every line short enough to be one segment, chunks are runs of whole lines.
    lines = [shrink_to_weight(line, max_chars(tokens)) for line in lines]
    chunks = chunk_markdown("\n".join(lines), tokens=tokens, overlap=overlap)
    for chunk in chunks:
        assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
    for earlier, later in pairwise(chunks):
        assert later.start_line > earlier.start_line
        assert later.end_line > earlier.end_line
        shared = lines[later.start_line - 1 : earlier.end_line]
        if shared:
            assert weighted_length("\n".join(shared)) <= overlap * 4


def test_remap_replaces_lines_through_the_map_and_keeps_unknown_ones() -> None:
    chunks = [Chunk(1, 2, "a", "h"), Chunk(2, 5, "b", "h", ts_ms=7), Chunk(0, 1, "c", "h")]
    remapped = remap_chunk_lines(chunks, [10, 12, 15])
    assert [(c.start_line, c.end_line) for c in remapped] == [(10, 12), (12, 5), (0, 10)]
    assert remapped[1].ts_ms == 7
    assert remap_chunk_lines(chunks, []) == chunks


def test_chunks_within_the_byte_limit_are_left_alone() -> None:
    chunk = Chunk(3, 4, "héllo", hash_text("héllo"), ts_ms=9)
    assert split_for_input_limit([chunk], 6) == [chunk]


def test_oversized_chunks_split_into_pieces_that_keep_lines_and_time() -> None:
    text = "é" * 5 + "abc"  # 13 bytes
    pieces = split_for_input_limit([Chunk(3, 4, text, hash_text(text), ts_ms=9)], 5)
    assert [p.text for p in pieces] == ["éé", "éé", "éabc"]
    assert all((p.start_line, p.end_line, p.ts_ms) == (3, 4, 9) for p in pieces)
    assert all(p.hash == hash_text(p.text) for p in pieces)


def test_a_character_wider_than_a_tiny_limit_becomes_its_own_piece() -> None:
    pieces = split_for_input_limit([Chunk(1, 1, "😀a", hash_text("😀a"))], 2)
    assert [p.text for p in pieces] == ["😀", "a"]


@settings(deadline=None, max_examples=300)
@given(text=st.text(CHARACTERS, min_size=1, max_size=300), max_bytes=st.integers(min_value=4, max_value=64))
def test_split_pieces_fit_the_limit_and_join_back_to_the_original(text: str, max_bytes: int) -> None:
    pieces = split_for_input_limit([Chunk(2, 7, text, hash_text(text), ts_ms=5)], max_bytes)
    assert "".join(p.text for p in pieces) == text
    assert all(len(p.text.encode("utf-8")) <= max_bytes for p in pieces)
    assert all((p.start_line, p.end_line, p.ts_ms) == (2, 7, 5) for p in pieces)
