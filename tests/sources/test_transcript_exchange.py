"""Transcripts chunked by exchange: a question and its answer stay together, windows carry their question."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.sources.chunking import CHARS_PER_TOKEN, Chunk, weighted_length
from memoryd.sources.transcripts import Transcript, chunk_transcript
from memoryd.sources.transcripts.exchange import QUESTION_CHARS, USER_LABEL, clip, date_line, exchanges

DAY_MS = 86_400_000
JAN_5_2026 = 1_767_571_200_000  # 2026-01-05T00:00:00Z


def transcript(said: Sequence[tuple[str, str, int]], gap: int = 2) -> Transcript:
    """A parsed transcript of (role, text, ts_ms) messages, message i on JSONL line 2 + gap * i."""
    lines = [("User: " if role == "user" else "Assistant: ") + text for role, text, _ in said]
    line_map = tuple(2 + gap * i for i in range(len(said)))
    return Transcript("\n".join(lines), line_map, tuple(ts for _, _, ts in said), "h", 0, False)


def body(chunk: Chunk) -> list[str]:
    """The chunk's lines after its date line."""
    lines = chunk.text.split("\n")
    return lines[1:] if lines[0].endswith(")") and "(20" in lines[0] else lines


def test_the_date_line_names_the_day_in_words_and_iso() -> None:
    assert date_line([0, JAN_5_2026 + 3_600_000]) == "5 January 2026 (2026-01-05)"
    assert (
        date_line([JAN_5_2026, JAN_5_2026 + DAY_MS + 5])
        == "5 January 2026 (2026-01-05) \u2013 6 January 2026 (2026-01-06)"
    )
    assert date_line([0, 0]) == ""


def test_exchanges_pair_user_runs_with_the_answers_after_them() -> None:
    lines = ["Assistant: hi", "User: a", "User: b", "Assistant: c", "Assistant: d", "User: e"]
    assert exchanges(lines) == [range(0, 1), range(1, 5), range(5, 6)]
    assert exchanges([]) == []


def test_short_exchanges_are_packed_whole_and_dated() -> None:
    said = [("user", "Where is the backup?", JAN_5_2026), ("assistant", "In /srv/backup.", JAN_5_2026 + 1000)] * 3
    chunks = chunk_transcript(transcript(said), 400, 80, "exchange")
    assert len(chunks) == 1
    (chunk,) = chunks
    assert chunk.text.split("\n")[0] == "5 January 2026 (2026-01-05)"
    assert (chunk.start_line, chunk.end_line, chunk.ts_ms) == (2, 12, JAN_5_2026 + 1000)


def test_a_question_is_never_cut_from_its_answer_at_a_packing_boundary() -> None:
    said = [(r, f"{r} message {i} " + "word " * 20, JAN_5_2026 + i) for i in range(40) for r in ("user", "assistant")]
    chunks = chunk_transcript(transcript(said, gap=1), 100, 20, "exchange")
    assert len(chunks) > 3
    for chunk in chunks:
        lines = body(chunk)
        assert lines[0].startswith(USER_LABEL) and lines[-1].startswith("Assistant: ")
        assert weighted_length(chunk.text) <= 100 * CHARS_PER_TOKEN


def test_a_long_answer_is_cut_into_windows_each_carrying_its_question_and_citing_its_record() -> None:
    said = [
        ("user", "earlier question", JAN_5_2026),
        ("assistant", "earlier answer", JAN_5_2026 + 1),
        ("user", "Why does the CI build fail?", JAN_5_2026 + 2),
        ("assistant", "Because the runner image lacks libfoo. " * 60, JAN_5_2026 + 3),
        ("assistant", "Also pin the compiler version.", JAN_5_2026 + 4),
    ]
    chunks = chunk_transcript(transcript(said), 100, 20, "exchange")
    windows = [c for c in chunks if "libfoo" in c.text]
    assert len(windows) > 2
    for w in windows:
        assert body(w)[0] == "User: Why does the CI build fail?"
        assert body(w)[1].startswith("Assistant: ")
        assert w.start_line == 6  # the question's record
        assert weighted_length(w.text) <= 100 * CHARS_PER_TOKEN
    assert windows[1].text.split("\n")[-1].startswith("Assistant: \u2026")  # inside the long message
    assert chunks[-1].end_line == 10 and chunks[-1].ts_ms == JAN_5_2026 + 4
    assert chunks[0].text.endswith("Assistant: earlier answer") and chunks[0].end_line == 4


def test_a_long_question_is_windowed_whole_and_its_answer_carries_its_start() -> None:
    question = "please read this log " + "line of log output " * 99 + "end"
    said = [("user", question, JAN_5_2026), ("assistant", "The log shows a timeout.", JAN_5_2026 + 1)]
    chunks = chunk_transcript(transcript(said), 100, 20, "exchange")
    answer = chunks[-1]
    assert answer.text.endswith("Assistant: The log shows a timeout.")
    carried = body(answer)[0]
    assert carried.startswith("User: please read this log") and carried.endswith("\u2026")
    assert weighted_length(carried) <= min(QUESTION_CHARS, 100)
    assert (answer.start_line, answer.end_line) == (2, 4)
    whole = "".join(line.removeprefix("User: ").removeprefix("\u2026") for c in chunks[:-1] for line in body(c))
    assert whole == question


def test_lines_mode_is_unchanged() -> None:
    said = [("user", "q", 0), ("assistant", "a", 0)]
    t = transcript(said)
    assert chunk_transcript(t, 400, 80) == chunk_transcript(t, 400, 80, "lines")
    assert chunk_transcript(t, 400, 80, "lines")[0].text == "User: q\nAssistant: a"
    assert chunk_transcript(t, 400, 80, "exchange")[0].text == "User: q\nAssistant: a"  # no date known


def test_clip_marks_its_cut() -> None:
    assert clip("short", 10) == "short"
    assert clip("a" * 20, 10) == "a" * 9 + "\u2026"
    assert weighted_length(clip("日" * 20, 10)) <= 10


ROLES = st.sampled_from(["user", "assistant"])
TEXTS = st.one_of(
    st.text(st.sampled_from("abc xyz 12"), min_size=1, max_size=30).map(lambda s: s.strip() or "x"),
    st.integers(min_value=50, max_value=900).map(lambda n: ("long words " * n)[:n].strip()),
    st.text(st.sampled_from("日本語 ab"), min_size=1, max_size=200).map(lambda s: s.strip() or "y"),
)
MESSAGES = st.lists(st.tuples(ROLES, TEXTS, st.integers(min_value=0, max_value=3 * DAY_MS)), max_size=25)


def question_of(lines: Sequence[str], ex: range) -> str:
    """The exchange's user messages as one line, as a window carries it (before clipping)."""
    asked = [line.removeprefix(USER_LABEL) for line in lines[ex.start : ex.stop] if line.startswith(USER_LABEL)]
    return USER_LABEL + " ".join(asked) if asked else ""


def said(line: str) -> str:
    """A chunk line without the label and ellipsis a window opening inside a message gets, or a clip's."""
    for label in ("User: \u2026", "Assistant: \u2026"):
        if line.startswith(label):
            line = line[len(label) :]
    return line.removesuffix("\u2026")


@settings(deadline=None, max_examples=300)
@given(messages=MESSAGES, tokens=st.integers(min_value=40, max_value=200), overlap=st.integers(0, 60))
def test_exchange_chunks_hold_every_message_and_cite_exactly(
    messages: list[tuple[str, str, int]], tokens: int, overlap: int
) -> None:
    t = transcript([(role, text, JAN_5_2026 + ts if ts else 0) for role, text, ts in messages])
    lines = t.content.split("\n") if messages else []
    chunks = chunk_transcript(t, tokens, min(overlap, tokens - 1), "exchange")
    record = {line: i for i, line in enumerate(t.line_map)}
    groups = exchanges(lines)
    assert [i for g in groups for i in g] == list(range(len(lines)))  # every message in exactly one exchange
    of = {i: g for g in groups for i in g}
    seen: set[int] = set()
    for c in chunks:
        first, last = record[c.start_line], record[c.end_line]  # cites records that hold messages
        stamps = t.timestamps_ms[first : last + 1]
        assert c.ts_ms == max(stamps)
        assert c.text.split("\n")[0] == date_line(stamps) or not date_line(stamps)
        assert weighted_length(c.text) <= tokens * CHARS_PER_TOKEN
        text = body(c)
        assert said(text[-1]) in lines[last]  # the last line cited is the last one said
        question = question_of(lines, of[first])
        assert said(text[0]) in lines[first] or (first == of[last].start and question.startswith(said(text[0])))
        for line in text:
            assert any(said(line) in lines[i] for i in range(first, last + 1)) or question.startswith(said(line))
        seen.update(range(first, last + 1))
    assert seen == set(range(len(lines)))


@settings(deadline=None, max_examples=200)
@given(messages=MESSAGES, tokens=st.integers(min_value=40, max_value=200))
def test_every_window_of_an_answer_carries_its_question(messages: list[tuple[str, str, int]], tokens: int) -> None:
    t = transcript([(role, text, 0) for role, text, _ in messages])
    lines = t.content.split("\n") if messages else []
    record = {line: i for i, line in enumerate(t.line_map)}
    for c in chunk_transcript(t, tokens, 10, "exchange"):
        first, last = record[c.start_line], record[c.end_line]
        ex = next(g for g in exchanges(lines) if last in g)
        if lines[last].startswith(USER_LABEL) or not lines[ex.start].startswith(USER_LABEL):
            continue  # no answer in the chunk's last exchange, or an answer to no question
        assert first <= ex.start  # cites the question's record, or an earlier exchange packed whole with it
        if first == ex.start:
            assert body(c)[0].startswith(lines[ex.start][:8])  # the question, or its first message
        else:
            assert lines[ex.start] in body(c)
