"""What the hook reads from transcripts itself: the previous user turn (a session's project: `project`).

Claude Code writes `~/.claude/projects/<project>/<session id>.jsonl`, `<project>` being the session's
working directory with every character other than a letter or digit turned into `-`; its user turns
are `{"type": "user", "message": {"role": "user", "content": …}}`. Codex writes
`~/.codex/sessions/YYYY/MM/DD/rollout-…-<session id>.jsonl`, whose first record (`session_meta`)
holds the `cwd`, and whose user turns are `response_item` messages of role `user` (or `event_msg`
`user_message`). Only the file's tail (or first line) is read: this runs before every prompt.
"""

from __future__ import annotations

import contextlib
import os

import orjson

TAIL_BYTES = 256 * 1024


def _texts(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    out = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") in ("text", "input_text"):
            text = block.get("text")
            if isinstance(text, str):
                out.append(text)
    return out


def _user_text(record: object) -> str:
    """The user's own words in one transcript record of either host; empty for anything else."""
    if not isinstance(record, dict):
        return ""
    kind = record.get("type")
    if kind == "user" and not record.get("isMeta"):
        message = record.get("message")
        if isinstance(message, dict) and message.get("role") == "user":
            return " ".join(_texts(message.get("content"))).strip()
    payload = record.get("payload")
    if isinstance(payload, dict):
        if kind == "response_item" and payload.get("type") == "message" and payload.get("role") == "user":
            return " ".join(t for t in _texts(payload.get("content")) if not t.lstrip().startswith("<")).strip()
        if kind == "event_msg" and payload.get("type") == "user_message":
            message = payload.get("message")
            return message.strip() if isinstance(message, str) else ""
    return ""


def previous_user_turn(path: str, prompt: str) -> str:
    """The last user turn of the transcript at `path` that is not `prompt` itself (the host may or may
    not have written the new prompt before the hook runs); empty when none is found or readable."""
    if not path:
        return ""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - TAIL_BYTES))
            tail = fh.read(TAIL_BYTES)
    except OSError:
        return ""
    current = " ".join(prompt.split())
    for line in reversed(tail.splitlines()):
        if b'"user' not in line:
            continue
        with contextlib.suppress(orjson.JSONDecodeError):
            text = _user_text(orjson.loads(line))
            if text and not text.startswith("<") and " ".join(text.split()) != current:
                return text
    return ""
