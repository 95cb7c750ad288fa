"""Session transcripts: names, JSONL parsing, line maps, timestamps and chunking (spec §3.6)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.sources.chunking import hash_text
from memoryd.sources.transcripts import (
    Transcript,
    chunk_transcript,
    is_transcript_name,
    parse_iso_timestamp_ms,
    parse_transcript,
)


def jsonl(*lines: object) -> bytes:
    """One JSONL line per item: dicts/lists are serialised, strings and bytes are taken as they are."""
    out: list[bytes] = []
    for line in lines:
        if isinstance(line, bytes):
            out.append(line)
        elif isinstance(line, str):
            out.append(line.encode())
        else:
            out.append(json.dumps(line, ensure_ascii=False).encode())
    return b"\n".join(out)


def message(role: str, content: object, **extra: Any) -> dict[str, Any]:
    return {"type": "message", "message": {"role": role, "content": content}, **extra}


@pytest.mark.parametrize(
    "name",
    [
        "abc.jsonl",
        "2f1c-session.jsonl",
        "abc.jsonl.reset.2026-01-02T03-04-05Z",
        "abc.jsonl.deleted.2026-01-02T03-04-05.123Z",
    ],
)
def test_transcripts_and_their_reset_and_deleted_archives_are_eligible(name: str) -> None:
    assert is_transcript_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "sessions.json",
        "sessions.json.bak.3",
        "abc.jsonl.bak.2026-01-02T03-04-05Z",
        "abc.json",
        "abc.jsonl.reset.2026-01-02",
        "abc.jsonl.reset.2026-01-02T03:04:05Z",
        "abc.jsonl.deleted.2026-01-02T03-04-05.12Z",
        "abc.jsonl.deleted.2026-01-02T03-04-05Z\n",
        "notes.md",
    ],
)
def test_backups_and_other_files_are_not_transcripts(name: str) -> None:
    assert not is_transcript_name(name)


def test_user_and_assistant_text_becomes_labelled_lines_mapped_to_their_jsonl_lines() -> None:
    data = jsonl(
        {"type": "session", "id": "s1"},
        message("user", "Hello   there\n\n how are you?"),
        "",
        message("toolResult", "tool output"),
        {"type": "message", "message": {"role": "system", "content": "be nice"}},
        message(
            "assistant", [{"type": "text", "text": "Fine,"}, {"type": "image"}, {"type": "text", "text": " thanks "}]
        ),
        {"type": "custom", "customType": "note"},
        message("assistant", [{"type": "toolCall", "name": "x"}]),
        message("user", "   "),
        message("assistant", "Bye."),
    )
    t = parse_transcript(data)
    assert t.content == "User: Hello there how are you?\nAssistant: Fine, thanks\nAssistant: Bye."
    assert t.line_map == (2, 6, 10)
    assert t.timestamps_ms == (0, 0, 0)
    assert t.malformed_lines == 0
    assert not t.dreaming


def test_malformed_lines_are_counted_and_skipped_but_blank_lines_are_not_counted() -> None:
    data = jsonl(
        "{not json",
        "[1, 2]",
        "42",
        '"text"',
        "   ",
        "\u00a0\u3000",
        "\r",
        message("user", "kept"),
        '{"type": "message", "message": {"role": "user", "content": "trailing comma",}}',
    )
    t = parse_transcript(data)
    assert t.content == "User: kept"
    assert t.line_map == (8,)
    assert t.malformed_lines == 5


def test_records_with_odd_shapes_are_skipped_without_error() -> None:
    data = jsonl(
        {"type": "message"},
        {"type": "message", "message": "hello"},
        {"type": "message", "message": {"role": ["user"], "content": "x"}},
        {"type": "message", "message": {"role": "user", "content": 42}},
        {"type": "message", "message": {"role": "user", "content": [None, 1, "x", {"type": "text", "text": 5}]}},
        {"type": ["message"], "message": {"role": "user", "content": "x"}},
        message("assistant", "ok"),
    )
    t = parse_transcript(data)
    assert (t.content, t.line_map, t.malformed_lines) == ("Assistant: ok", (7,), 0)


def test_invalid_utf8_is_replaced_and_parsing_goes_on() -> None:
    data = b'{"type":"message","message":{"role":"user","content":"caf\xc3 ok \xff"}}\n' + jsonl(
        message("assistant", "next")
    )
    t = parse_transcript(data)
    assert t.content == "User: caf\ufffd ok \ufffd\nAssistant: next"
    assert t.line_map == (1, 2)


def test_json_that_only_javascript_accepts_is_read() -> None:
    lone_surrogate = r'{"type":"message","message":{"role":"user","content":"a\ud800b"}}'
    huge_number = r'{"type":"message","timestamp":1e400,"message":{"role":"user","content":"big"}}'
    t = parse_transcript(jsonl(lone_surrogate, huge_number, "NaN"))
    assert t.content == "User: a\ufffdb\nUser: big"
    assert t.timestamps_ms == (0, 0)
    assert t.malformed_lines == 1
    t.content.encode("utf-8")


def test_secrets_in_messages_are_redacted() -> None:
    t = parse_transcript(jsonl(message("user", "my key is OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwxyz1234")))
    assert t.content == "User: my key is OPENAI_API_KEY=sk-a…"


def test_a_pem_block_in_a_message_is_masked_after_whitespace_is_collapsed() -> None:
    pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\nkqhkiG9w0BAQEF\n-----END PRIVATE KEY-----"
    t = parse_transcript(jsonl(message("assistant", f"here:\n{pem}\ndone")))
    assert t.content == "Assistant: here: -----BEGIN PRIVATE KEY----- …redacted… -----END PRIVATE KEY----- done"


def test_timestamps_prefer_the_message_then_the_record_and_read_seconds_and_iso() -> None:
    data = jsonl(
        {
            "type": "message",
            "timestamp": 1_700_000_000_000,
            "message": {"role": "user", "content": "a", "timestamp": 5},
        },
        {"type": "message", "timestamp": 1_700_000_000, "message": {"role": "user", "content": "b"}},
        {"type": "message", "timestamp": "2024-05-01T10:00:00.000Z", "message": {"role": "user", "content": "c"}},
        {"type": "message", "message": {"role": "user", "content": "d", "timestamp": "2024-05-01T12:00:00+02:00"}},
        {"type": "message", "timestamp": "not a date", "message": {"role": "user", "content": "e"}},
        {"type": "message", "timestamp": True, "message": {"role": "user", "content": "f", "timestamp": -3}},
        {"type": "message", "timestamp": 1.5, "message": {"role": "user", "content": "g", "timestamp": "bad"}},
    )
    t = parse_transcript(data)
    assert t.timestamps_ms == (5000, 1_700_000_000_000, 1_714_557_600_000, 1_714_557_600_000, 0, 0, 1500)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-05-01T10:00:00.000Z", 1_714_557_600_000),
        ("2024-05-01T10:00:00Z", 1_714_557_600_000),
        ("2024-05-01t10:00z", 1_714_557_600_000),
        ("2024-05-01T11:30:00+01:30", 1_714_557_600_000),
        ("2024-05-01T05:00:00-0500", 1_714_557_600_000),
        ("2024-05-01 10:00:00", 1_714_557_600_000),
        ("2024-05-01T10:00:00.1234567Z", 1_714_557_600_123),
        ("2024-05-01", 1_714_521_600_000),
        ("2024-05", 1_714_521_600_000),
        ("2024", 1_704_067_200_000),
        ("+002024-05-01T10:00:00Z", 1_714_557_600_000),
        ("2024-04-30T24:00:00Z", 1_714_521_600_000),
        ("2024-02-29", 1_709_164_800_000),
        ("2023-02-29", 0),
        ("2024-13-01", 0),
        ("2024-05-01T25:00Z", 0),
        ("1970-01-01T00:00:00Z", 0),
        ("1969-12-31", 0),
        ("-000000-01-01", 0),
        ("yesterday", 0),
        ("", 0),
    ],
)
def test_iso_timestamps_are_read_as_date_parse_reads_them(text: str, expected: int) -> None:
    assert parse_iso_timestamp_ms(text) == expected


def test_the_hash_covers_content_line_map_and_timestamps() -> None:
    t = parse_transcript(jsonl("", message("user", "hi", timestamp=2), message("assistant", "yo")))
    assert t.hash == hash_text("User: hi\nAssistant: yo\n2,3\n2000,0")


def test_an_empty_transcript_has_no_content_and_no_chunks() -> None:
    t = parse_transcript(b"")
    assert t == Transcript("", (), (), hash_text("\n\n"), 0, False)
    assert chunk_transcript(t, 400, 80) == []


def test_the_dreaming_bootstrap_record_flags_the_transcript() -> None:
    bootstrap = {
        "type": "custom",
        "customType": "openclaw:bootstrap-context:full",
        "data": {"runId": "dreaming-narrative-42"},
    }
    other_run = {**bootstrap, "data": {"runId": "cron-7"}}
    assert parse_transcript(jsonl(bootstrap, message("user", "x"))).dreaming
    assert not parse_transcript(jsonl(other_run, message("user", "x"))).dreaming


def test_transcript_chunks_cite_jsonl_lines_and_carry_their_newest_timestamp() -> None:
    records: list[object] = []
    for i in range(30):
        records.append(message("user" if i % 2 else "assistant", f"message number {i:02d}", timestamp=1000 + i))
        records.append({"type": "toolResult", "content": "noise"})
    t = parse_transcript(jsonl(*records))
    chunks = chunk_transcript(t, tokens=30, overlap=10)
    assert len(chunks) > 3
    jsonl_lines = jsonl(*records).split(b"\n")
    for chunk in chunks:
        first = json.loads(jsonl_lines[chunk.start_line - 1])
        last = json.loads(jsonl_lines[chunk.end_line - 1])
        assert chunk.text.splitlines()[0].endswith(first["message"]["content"])
        assert chunk.text.splitlines()[-1].endswith(last["message"]["content"])
        assert chunk.ts_ms == last["timestamp"] * 1000


WORDS = st.text(st.sampled_from("abcdefgh XYZ 0123 é日😀\t\n"), max_size=40)
RECORDS = st.one_of(
    st.builds(message, st.sampled_from(["user", "assistant"]), WORDS),
    st.builds(
        lambda role, texts: message(role, [{"type": "text", "text": t} for t in texts]),
        st.sampled_from(["user", "assistant"]),
        st.lists(WORDS, max_size=3),
    ),
    st.builds(lambda text: message("toolResult", text), WORDS),
    st.builds(lambda text: {"type": "custom", "data": text}, WORDS),
    st.sampled_from(["", "  ", "{broken", "[]", "null"]),
)


def expected_text(record: dict[str, Any]) -> str:
    content = record["message"]["content"]
    texts = [content] if isinstance(content, str) else [block["text"] for block in content]
    return " ".join(" ".join(text.split()) for text in texts if text.split())


@settings(deadline=None, max_examples=200)
@given(records=st.lists(RECORDS, max_size=25))
def test_every_content_line_points_at_the_record_it_came_from(records: list[object]) -> None:
    data = jsonl(*records)
    t = parse_transcript(data)
    lines = t.content.split("\n") if t.content else []
    assert len(lines) == len(t.line_map) == len(t.timestamps_ms)
    assert list(t.line_map) == sorted(set(t.line_map))
    expected = []
    for line_no, record in enumerate(records, 1):
        if isinstance(record, dict) and record["type"] == "message" and record["message"]["role"] != "toolResult":
            text = expected_text(record)
            if text:
                label = "User" if record["message"]["role"] == "user" else "Assistant"
                expected.append((line_no, f"{label}: {text}"))
    assert list(zip(t.line_map, lines, strict=True)) == expected
    assert t.malformed_lines == sum(1 for r in records if r in ("{broken", "[]", "null"))


@settings(deadline=None, max_examples=300)
@given(data=st.binary(max_size=400))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    t = parse_transcript(data)
    assert len(t.line_map) == len(t.timestamps_ms) == (len(t.content.split("\n")) if t.content else 0)
    t.content.encode("utf-8")
