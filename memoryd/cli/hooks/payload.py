"""The hosts' hook input, as their documentation defines it, read into one small record.

Claude Code (https://code.claude.com/docs/en/hooks): every event carries `session_id`,
`transcript_path`, `cwd` and `hook_event_name`; `UserPromptSubmit` adds `prompt`, `SessionStart`
`source` (startup, resume, clear, compact), `PreCompact` `trigger` (manual, auto), `SessionEnd` `reason`.
Codex CLI (https://developers.openai.com/codex/hooks, schemas in codex-rs/hooks/schema/generated): the
same names, with `transcript_path` nullable, plus `turn_id` and `model`; it has no `SessionEnd`.
Fields memoryd does not use are ignored; a missing one is empty.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import orjson

from memoryd.errors import ProtocolError

Host = Literal["claude-code", "codex"]
HOSTS: tuple[Host, ...] = ("claude-code", "codex")
EVENTS: dict[Host, tuple[str, ...]] = {
    "claude-code": ("SessionStart", "UserPromptSubmit", "PreCompact", "SessionEnd", "Stop"),
    "codex": ("SessionStart", "UserPromptSubmit", "PreCompact", "Stop"),
}
"""The events each host documents that memoryd answers (recall, brief, capture)."""
CAPTURE_EVENTS = frozenset({"PreCompact", "SessionEnd", "Stop"})
MAX_INPUT_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class HookInput:
    """One hook call: which host and event, and what the host said about it."""

    host: Host
    event: str
    session_id: str = ""
    transcript_path: str = ""
    cwd: str = ""
    prompt: str = ""
    source: str = ""
    """SessionStart: startup, resume, clear or compact."""


def event_name(host: Host, given: str) -> str:
    """The host's spelling of `given` (`userpromptsubmit` -> `UserPromptSubmit`); ProtocolError if unknown."""
    for known in EVENTS[host]:
        if known.lower() == given.replace("-", "").replace("_", "").lower():
            return known
    raise ProtocolError(f"{host} has no hook event {given!r} memoryd answers (known: {', '.join(EVENTS[host])})")


def parse(host: Host, event: str, raw: bytes) -> HookInput:
    """The host's JSON (stdin) for `event`; ProtocolError for anything that is not a JSON object, or that
    names another event than the one the command line says."""
    if len(raw) > MAX_INPUT_BYTES:
        raise ProtocolError(f"hook input longer than {MAX_INPUT_BYTES} bytes")
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(f"hook input is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ProtocolError("hook input is not a JSON object")
    named = data.get("hook_event_name")
    if isinstance(named, str) and named and named != event:
        raise ProtocolError(f"hook input is for {named!r}, the command line says {event!r}")

    def text(key: str) -> str:
        value = data.get(key)
        return value if isinstance(value, str) else ""

    return HookInput(
        host=host,
        event=event,
        session_id=text("session_id"),
        transcript_path=text("transcript_path"),
        cwd=text("cwd"),
        prompt=text("prompt"),
        source=text("source"),
    )


def answer(event: str, context: str) -> str:
    """The host's JSON for `context` added before the model sees the turn: both hosts document
    `{"hookSpecificOutput": {"hookEventName": E, "additionalContext": …}}` for SessionStart and
    UserPromptSubmit (Codex's output schemas refuse any other key in hookSpecificOutput)."""
    out = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}
    return orjson.dumps(out).decode() + "\n"
