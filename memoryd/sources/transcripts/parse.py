"""A JSONL transcript of any known tool as one `Transcript`: its format is sniffed from its records.

Each line is parsed once and handed to the adapter whose record types it carries (the types are
disjoint: OpenClaw's `message` with a `message` object, Claude Code's `user` / `assistant`, Codex's
enveloped `response_item` / `event_msg` and its older bare items). The file's format is then:
OpenClaw if it holds any OpenClaw message record — so a file OpenClaw's parser read is read exactly
as before, whatever else it holds —, else the format of its first message record, else the format
of its first record only one tool writes (a Claude Code file of summaries alone is Claude Code's,
just empty), else `unknown` (JSON or garbage no adapter understands) or "" (blank). Only the chosen
adapter's messages are redacted and kept. Parsing never raises.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from memoryd.sources.chunking import Chunk, chunk_markdown, hash_text
from memoryd.sources.redact import redact
from memoryd.sources.transcripts import claude_code, codex, openclaw
from memoryd.sources.transcripts.exchange import chunk_exchanges
from memoryd.sources.transcripts.jsonl import LineCount, records
from memoryd.sources.transcripts.model import (
    CLAUDE_CODE,
    CODEX,
    EMPTY,
    OPENCLAW,
    UNKNOWN,
    Said,
    Transcript,
)
from memoryd.sources.transcripts.text import LONE_SURROGATE

_LABELS = {"user": "User: ", "assistant": "Assistant: "}


@dataclass(slots=True)
class _Seen:
    """What the records of one file said, per adapter, before a format is chosen."""

    openclaw: list[Said] = field(default_factory=list)
    claude: list[Said] = field(default_factory=list)
    codex_items: list[Said] = field(default_factory=list)
    codex_events: list[tuple[dict[str, Any], int, object, bool]] = field(default_factory=list)
    """(payload, line, time, slow) of `event_msg` records, read only when the rollout has no message items."""
    openclaw_messages: bool = False  # a record OpenClaw's parser reads as a message was seen
    first_message_format: str = ""  # of the first Claude Code / Codex message record
    first_marked_format: str = ""  # of the first record only one tool writes
    codex_has_items: bool = False  # a user/assistant message item was seen (events then repeat it)
    codex_subagent: bool = False
    dreaming: bool = False
    objects: int = 0

    def message(self, fmt: str) -> None:
        if not self.first_message_format:
            self.first_message_format = fmt

    def marked(self, fmt: str) -> None:
        if not self.first_marked_format:
            self.first_marked_format = fmt


def _read(data: bytes, subagents: bool) -> tuple[_Seen, LineCount]:
    seen = _Seen()
    count = LineCount()
    for line_no, record, slow in records(data, count):
        seen.objects += 1
        kind = record.get("type")
        if not isinstance(kind, str):
            if codex.is_bare_header(record):
                seen.marked(CODEX)
            continue
        if kind == "message":
            message = record.get("message")
            if isinstance(message, dict):
                seen.openclaw_messages = True
                if (line := openclaw.said(record, message, line_no, slow)) is not None:
                    seen.openclaw.append(line)
            elif codex.is_bare_item(record) and (role := codex.message_role(record)) is not None:
                seen.message(CODEX)
                seen.codex_has_items = True
                if (line := codex.item_said(record, role, line_no, None, slow)) is not None:
                    seen.codex_items.append(line)
        elif kind in claude_code.MESSAGE_TYPES:
            message = record.get("message")
            if isinstance(message, dict):
                seen.message(CLAUDE_CODE)
                if (line := claude_code.said(record, message, line_no, slow, subagents=subagents)) is not None:
                    seen.claude.append(line)
        elif kind in codex.ENVELOPE_TYPES:
            payload = record.get("payload")
            if not isinstance(payload, dict):
                continue
            seen.marked(CODEX)
            ts = record.get("timestamp")
            if kind == "response_item" and (role := codex.message_role(payload)) is not None:
                seen.message(CODEX)
                seen.codex_has_items = True
                if (line := codex.item_said(payload, role, line_no, ts, slow)) is not None:
                    seen.codex_items.append(line)
            elif kind == "event_msg":
                if not seen.codex_has_items:
                    seen.codex_events.append((payload, line_no, ts, slow))
            elif kind == "session_meta" and codex.is_subagent_meta(payload):
                seen.codex_subagent = True
        elif kind == "custom":
            seen.marked(OPENCLAW)
            if not seen.dreaming:
                seen.dreaming = openclaw.is_dreaming_bootstrap(record)
        elif kind in claude_code.OTHER_TYPES:
            seen.marked(CLAUDE_CODE)
        elif kind in openclaw.HEADER_TYPES:
            seen.marked(OPENCLAW)
    return seen, count


def _choose(seen: _Seen, count: LineCount, subagents: bool) -> tuple[str, list[Said]]:
    if seen.openclaw_messages:
        return OPENCLAW, seen.openclaw
    fmt = seen.first_message_format or seen.first_marked_format
    if fmt == CLAUDE_CODE:
        return fmt, seen.claude
    if fmt == CODEX:
        if seen.codex_subagent and not subagents:
            return fmt, []
        if seen.codex_has_items:
            return fmt, seen.codex_items
        return fmt, [line for event in seen.codex_events if (line := codex.event_said(*event)) is not None]
    if fmt == OPENCLAW:
        return fmt, []
    return (UNKNOWN if seen.objects or count.malformed else EMPTY), []


def parse_transcript(data: bytes, *, subagents: bool = False) -> Transcript:
    """The indexable text of a JSONL transcript of any known format; never raises on bad input.

    `subagents`: keep sub-agent turns (Claude Code sidechains, Codex sub-agent rollouts).
    """
    seen, count = _read(data, subagents)
    fmt, said = _choose(seen, count, subagents)
    lines: list[str] = []
    for line in said:
        text = LONE_SURROGATE.sub("\ufffd", line.text) if line.slow else line.text
        lines.append(_LABELS[line.role] + redact(text))
    line_map = tuple(line.line_no for line in said)
    timestamps = tuple(line.ts_ms for line in said)
    content = "\n".join(lines)
    digest = hash_text(f"{content}\n{','.join(map(str, line_map))}\n{','.join(map(str, timestamps))}")
    return Transcript(content, line_map, timestamps, digest, count.malformed, seen.dreaming, fmt)


def chunk_transcript(
    t: Transcript, tokens: int, overlap: int, by: Literal["lines", "exchange"] = "lines"
) -> list[Chunk]:
    """Chunks of the transcript text, dated by their newest message, cited by JSONL line.

    `by`: `lines` packs message lines as a note's are packed; `exchange` keeps each question with its
    answer and dates every chunk in its text (`memoryd.sources.transcripts.exchange`). Content that is
    not one line per message (never written by `parse_transcript`) is chunked by lines."""
    if by == "exchange":
        lines = t.content.split("\n") if t.line_map else []
        if len(lines) == len(t.line_map):
            return chunk_exchanges(t, lines, tokens, overlap)
    line_map = t.line_map
    stamps = t.timestamps_ms
    size = len(line_map)
    out: list[Chunk] = []
    for chunk in chunk_markdown(t.content, tokens, overlap):
        start, end = chunk.start_line, chunk.end_line
        out.append(
            Chunk(
                line_map[start - 1] if 1 <= start <= size else start,
                line_map[end - 1] if 1 <= end <= size else end,
                chunk.text,
                chunk.hash,
                max(stamps[start - 1 : end], default=0),
            )
        )
    return out
