"""OpenClaw's transcript records (spec §3.6), read exactly as OpenClaw's `buildSessionEntry` reads them.

Records `{"type":"message","message":{"role":"user"|"assistant","content":…}}`: a string content,
or the `{"type":"text"}` blocks of a block list joined by one space (images, tool calls and thinking
are not text); every other role and record type is skipped. The time is the first usable of
`message.timestamp` and the record's `timestamp`. A `custom` bootstrap record of a dreaming run
flags the transcript.
"""

from __future__ import annotations

from typing import Any

from memoryd.sources.transcripts.model import Role, Said
from memoryd.sources.transcripts.text import joined, normalize
from memoryd.sources.transcripts.timestamps import first_timestamp_ms

DREAMING_BOOTSTRAP_TYPE = "openclaw:bootstrap-context:full"
DREAMING_RUN_PREFIX = "dreaming-narrative-"
HEADER_TYPES = frozenset({"session", "model_change", "thinking_level_change", "compaction", "branch_summary"})
"""Record types only OpenClaw writes besides messages: a file of nothing else is OpenClaw's, just empty."""


def message_text(content: object) -> str:
    """A string content, or the text blocks of a block list joined by one space; "" if none."""
    if isinstance(content, str):
        return normalize(content)
    if not isinstance(content, list):
        return ""
    texts: list[str] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            if isinstance(text, str):
                texts.append(text)
    return joined(texts)


def said(record: dict[str, Any], message: dict[str, Any], line_no: int, slow: bool) -> Said | None:
    """The message of one `type: "message"` record whose `message` is an object; None if it holds none."""
    role = message.get("role")
    if role not in ("user", "assistant"):
        return None
    text = message_text(message.get("content"))
    if not text:
        return None
    who: Role = "user" if role == "user" else "assistant"
    return Said(line_no, who, text, first_timestamp_ms(message.get("timestamp"), record.get("timestamp")), slow)


def is_dreaming_bootstrap(record: dict[str, Any]) -> bool:
    data = record.get("data")
    if record.get("customType") != DREAMING_BOOTSTRAP_TYPE or not isinstance(data, dict):
        return False
    run_id = data.get("runId")
    return isinstance(run_id, str) and run_id.startswith(DREAMING_RUN_PREFIX)
