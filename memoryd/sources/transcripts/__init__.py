"""Session transcripts (JSONL) as indexable text with a map back to their lines (spec §3.6).

One adapter per tool that writes transcripts — OpenClaw (`openclaw`), Claude Code (`claude_code`),
Codex CLI (`codex`) — chosen per file by sniffing its records (`parse`), each producing the same
`Transcript`: one content line per message (`User: …` / `Assistant: …`), whitespace collapsed and
secrets masked, a `line_map` tying each content line to its JSONL line so results cite the
transcript itself, and `timestamps_ms` dating each message. Only what the person and the model said
is kept; what the tool injected, tool calls and their output, thinking and images are not.
"""

from memoryd.sources.transcripts.model import (
    CLAUDE_CODE,
    CODEX,
    EMPTY,
    FORMATS,
    OPENCLAW,
    UNKNOWN,
    Transcript,
)
from memoryd.sources.transcripts.names import is_transcript_name
from memoryd.sources.transcripts.openclaw import DREAMING_BOOTSTRAP_TYPE, DREAMING_RUN_PREFIX
from memoryd.sources.transcripts.parse import chunk_transcript, parse_transcript
from memoryd.sources.transcripts.timestamps import parse_iso_timestamp_ms

__all__ = [
    "CLAUDE_CODE",
    "CODEX",
    "DREAMING_BOOTSTRAP_TYPE",
    "DREAMING_RUN_PREFIX",
    "EMPTY",
    "FORMATS",
    "OPENCLAW",
    "UNKNOWN",
    "Transcript",
    "chunk_transcript",
    "is_transcript_name",
    "parse_iso_timestamp_ms",
    "parse_transcript",
]
