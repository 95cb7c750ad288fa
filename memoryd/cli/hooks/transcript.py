"""What the hook reads from transcripts itself: the previous user turn, and which project a session is.

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
import re
from pathlib import Path

import orjson

TAIL_BYTES = 256 * 1024
HEAD_BYTES = 64 * 1024
_NOT_WORD = re.compile(r"[^A-Za-z0-9]")


def project_key(cwd: str) -> str:
    """A working directory as Claude Code names its project folder (`/home/me/app` -> `-home-me-app`)."""
    return _NOT_WORD.sub("-", os.path.normpath(cwd)) if cwd else ""


def current_project(host: str, cwd: str, transcript_path: str) -> str:
    """This session's project: Claude Code's own folder name when the transcript lies in one, else the
    working directory's key."""
    if host == "claude-code" and transcript_path:
        parent = Path(transcript_path).parent
        if parent.parent.name == "projects":
            return parent.name
    return project_key(cwd)


def same_project(current: str, other: str) -> bool:
    """`other` is `current` or a folder below it (a session started in the repo's subfolder)."""
    return bool(current) and (other == current or other.startswith(current + "-"))


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


def codex_session_cwd(path: Path) -> str:
    """The working directory a Codex rollout file records in its first line (`session_meta`)."""
    try:
        with open(path, "rb") as fh:
            first = fh.readline(HEAD_BYTES)
        record = orjson.loads(first)
    except (OSError, orjson.JSONDecodeError):
        return ""
    payload = record.get("payload") if isinstance(record, dict) else None
    cwd = payload.get("cwd") if isinstance(payload, dict) else None
    return cwd if isinstance(cwd, str) else ""
