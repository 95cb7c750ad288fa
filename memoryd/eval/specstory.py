"""SpecStory exports (`.specstory/history/*.md`) as transcripts: coding-agent sessions of Cursor, VS Code
Copilot, Claude Code and Gemini CLI, as the SpecStory extension writes them and many repositories commit them.

The input is a directory with one sub-directory per project, each holding that project's history
files (directly or under `.specstory/history/`); the user fetches them, nothing is shipped. Each file
is one session. Its time is the title line's, `# <title> (2025-03-14 10:22Z)` or `# 2026-06-10
08:18:43Z` (or the older `## <title> (8/22/2024, 2:05:19 PM)`), when it says UTC (`Z`); else the file
name's, `2025-03-14_10-22-05Z-some-title.md` (UTC, with or without the `Z`); else the title's local
time taken as UTC; a file with none sorts first, at the epoch. SpecStory renames a file as a session's
title changes and repositories commit every name, so one session often comes as several files: those
with the same session id (`<!-- ... Session <uuid> ... -->`) are one session, and so is a file without
one and the files created in the same minute (the minute of its file name); the copy with the most
message text is kept.

Parsing: `_**User**_` (or `_**User (<time>)**_`) opens a user turn, `_**Assistant**_` or `_**Agent
(<model>, <mode>)**_` an assistant turn; consecutive assistant turns (an agent writes a header before
every tool call) are one answer. Dropped: `<think>…</think>` (also opened mid-line), `<tool-use …>…
</tool-use>` and `<details>…</details>` blocks opened at a line's start (tool calls, their results,
searched files), `### Rule:` blocks (a rule file the tool pasted in) and `Tool use: **…**` blocks (an
older export's tool call and its output), each up to the next `---`, HTML comments, the `---` turn
separators, code fences left empty, and the fence without a language right after a shell command's
fence (what the command printed, in the older exports); a dropped block never runs past the next
speaker line. Then the rule of `memoryd.eval.chatlog` per project, with `MAX_CHARS` of message text.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from memoryd.errors import SourceError
from memoryd.eval import chatlog
from memoryd.eval.chatlog import Message, Session
from memoryd.eval.dataset import EvalSet, Group

HISTORY_DIR = Path(".specstory") / "history"
MAX_CHARS = 2 * chatlog.MAX_CHARS
"""Message text kept per project: twice aider's, as an agent's answers narrate every step and hold
whole diffs, and a quarter of a million characters is often one or two sessions."""
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SESSION_ID = re.compile(r"<!--[^\n]*\bSession ([0-9a-fA-F-]{36})\b")
_SPEAKER = re.compile(r"^_\*\*(User|Assistant|Agent)\b[^\n]*\*\*_\s*$")
_TITLE = re.compile(r"^#{1,2} (.*?)\s*$")
_ISO = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})(?::(\d{2}))?(Z)?")
_US = re.compile(r"(\d{1,2})/(\d{1,2})/(\d{4}),? (\d{1,2}):(\d{2})(?::(\d{2}))? ?([AP]M)", re.IGNORECASE)
_FILE_TIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})_(\d{2})-(\d{2})(?:-(\d{2}))?Z?(?:[-_.]|$)")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([^`\s]*)[^`]*$")
_SHELLS = frozenset({"bash", "sh", "shell", "zsh", "console", "powershell", "pwsh", "cmd", "terminal"})
_INLINE_COMMENT = re.compile(r"<!--.*?-->")
_BLANK_RUN = re.compile(r"\n{3,}")


@dataclass(frozen=True, slots=True)
class _Block:
    """What is being dropped, and how it ends."""

    kind: str  # "think" | "tool-use" | "details" | "comment" | "to-separator"
    depth: int = 0  # open <details> tags (kind "details")


def session_time(name: str, text: str) -> datetime | None:
    """The session's start (module docstring): the title's when in UTC, else the file name's, else the
    title's local time; None when neither says."""
    title = _title_time(text)
    if title is not None and title[1]:
        return title[0]
    found = _FILE_TIME.match(name)
    if found is not None:
        return _safe_datetime(tuple(int(g) if g else 0 for g in found.groups()))
    return title[0] if title is not None else None


def _title_time(text: str) -> tuple[datetime, bool] | None:
    """The first heading's time and whether it is UTC, looking no further than the first speaker line."""
    for line in text[:8000].splitlines()[:40]:
        if _SPEAKER.match(line):
            return None
        heading = _TITLE.match(line)
        if heading is None:
            continue
        title = heading.group(1)
        iso = _ISO.search(title)
        if iso is not None:
            at = _safe_datetime(tuple(int(g) if g else 0 for g in iso.groups()[:6]))
            if at is not None:
                return at, iso.group(7) is not None
        us = _US.search(title)
        if us is not None:
            mo, d, y, h, mi = (int(g) for g in us.groups()[:5])
            s = int(us.group(6) or 0)
            h = h % 12 + (12 if us.group(7).upper() == "PM" else 0)
            at = _safe_datetime((y, mo, d, h, mi, s))
            if at is not None:
                return at, False
    return None


def _safe_datetime(parts: Sequence[int]) -> datetime | None:
    """Year, month, day, hour, minute, second as a UTC time; None when they name none."""
    y, mo, d, h, mi, s = parts
    try:
        return datetime(y, mo, d, h, mi, s, tzinfo=UTC)
    except ValueError:
        return None


def _turns(text: str) -> Iterator[tuple[str, list[str]]]:
    """Each speaker's turn: its role and its kept lines (module docstring)."""
    role: str | None = None
    kept: list[str] = []
    block: _Block | None = None
    for raw in text.replace("\0", "").splitlines():
        line = raw.rstrip()
        speaker = _SPEAKER.match(line)
        if speaker is not None:
            if role is not None:
                yield role, kept
            role = "user" if speaker.group(1) == "User" else "assistant"
            kept, block = [], None
            continue
        if role is None:
            continue
        if block is not None:
            block, rest = _inside(block, line)
            if rest.strip():
                kept.append(rest)
            continue
        block, line = _opens(line)
        if line.strip() != "---":
            kept.append(line)
    if role is not None:
        yield role, kept


def _opens(line: str) -> tuple[_Block | None, str]:
    """The block `line` opens (None when it opens none, or closes it on the same line) and what is kept of it."""
    if line.startswith("<tool-use"):
        return (None if "</tool-use>" in line else _Block("tool-use")), ""
    if line.startswith("<details"):
        depth = line.count("<details") - line.count("</details>")
        return (_Block("details", depth) if depth > 0 else None), ""
    if line.startswith(("### Rule:", "Tool use: **")):
        return _Block("to-separator"), ""
    if "<think>" in line:
        before, _, after = line.partition("<think>")
        if "</think>" in after:
            return None, before + after.partition("</think>")[2]
        return _Block("think"), before
    line = _INLINE_COMMENT.sub("", line)
    if "<!--" in line:
        return _Block("comment"), line.partition("<!--")[0]
    return None, line


def _inside(block: _Block, line: str) -> tuple[_Block | None, str]:
    """The block still open after `line`, and what of `line` is kept (text after a closing tag)."""
    if block.kind == "think":
        return (None, line.partition("</think>")[2]) if "</think>" in line else (block, "")
    if block.kind == "tool-use":
        return (None, "") if "</tool-use>" in line else (block, "")
    if block.kind == "details":
        depth = block.depth + line.count("<details") - line.count("</details>")
        return (_Block("details", depth), "") if depth > 0 else (None, "")
    if block.kind == "comment":
        return (None, line.partition("-->")[2]) if "-->" in line else (block, "")
    return (None, "") if line.strip() == "---" else (block, "")


def _clean(lines: Sequence[str]) -> str:
    """A turn's kept lines as text, without empty code fences or the output fence after a shell command's
    (a fence without a language right after it: what the command printed)."""
    out: list[str] = []
    after_shell = False  # the last thing kept was a shell command's fence (blank lines aside)
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            out.append(lines[i])
            after_shell = after_shell and not lines[i].strip()
            i += 1
            continue
        mark, info = opening.group(1), opening.group(2).lower()
        end = next((j for j in range(i + 1, len(lines)) if _closes(lines[j], mark)), len(lines))
        body = lines[i + 1 : end]
        if any(line.strip() for line in body) and not (after_shell and not info):
            out.extend(lines[i : end + 1])
            after_shell = info in _SHELLS
        else:
            after_shell = False
        i = end + 1
    return _BLANK_RUN.sub("\n\n", "\n".join(out)).strip()


def _closes(line: str, mark: str) -> bool:
    stripped = line.strip()
    return stripped.startswith(mark[0] * len(mark)) and not stripped.lstrip(mark[0])


def parse_export(text: str) -> list[Message]:
    """One SpecStory file's messages: user turns as they are, consecutive assistant turns joined."""
    messages: list[Message] = []
    for role, lines in _turns(text):
        body = _clean(lines)
        if not body:
            continue
        last = messages[-1] if messages else None
        if role == "assistant" and last is not None and last.role == "assistant":
            last.text += "\n\n" + body
        else:
            messages.append(Message(role, body))
    return messages


@dataclass(slots=True)
class _File:
    name: str
    started: datetime | None
    session_id: str | None
    minute: str | None  # when the session was created, for files without a session id
    messages: list[Message]

    @property
    def size(self) -> int:
        return sum(len(m.text) for m in self.messages)


def _read_file(name: str, text: str) -> _File:
    found = _SESSION_ID.search(text[:4000])
    created = _FILE_TIME.match(name)
    started = session_time(name, text)
    minute = created.group(0)[:16] if created is not None else started.strftime("%Y-%m-%d_%H-%M") if started else None
    return _File(name, started, found.group(1).lower() if found else None, minute, parse_export(text))


def project_sessions(files: Sequence[tuple[str, str]]) -> list[Session]:
    """A project's files (name, text) as its sessions in time order, each session once (module docstring):
    files with the same session id are one session, and a file without one is the session of its
    creation minute (that of the one file with an id created then, if there is one)."""
    parsed = [f for f in (_read_file(name, text) for name, text in files) if f.messages]
    ids_by_minute: dict[str, set[str]] = {}
    for f in parsed:
        if f.session_id is not None and f.minute is not None:
            ids_by_minute.setdefault(f.minute, set()).add(f.session_id)
    by_session: dict[str, _File] = {}
    for f in parsed:
        ids = ids_by_minute.get(f.minute, set()) if f.minute is not None else set()
        if f.session_id is not None:
            key = f"id {f.session_id}"
        elif len(ids) == 1:
            key = f"id {next(iter(ids))}"
        elif f.minute is not None:
            key = f"minute {f.minute}"
        else:
            key = f"file {f.name}"
        held = by_session.get(key)
        if held is None or (f.size, f.name) > (held.size, held.name):
            by_session[key] = f
    ordered = sorted(by_session.values(), key=lambda f: (f.started or EPOCH, f.name))
    return [Session(f.started or EPOCH, f.messages) for f in ordered]


def _history_files(project: Path) -> list[Path]:
    nested = project / HISTORY_DIR
    folder = nested if nested.is_dir() else project
    return sorted(p for p in folder.iterdir() if p.suffix == ".md" and p.is_file())


def load_specstory(path: Path, *, max_chars: int = MAX_CHARS) -> EvalSet:
    """Every project sub-directory of `path`, one workspace each."""
    try:
        projects = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
        listed = [(p, _history_files(p)) for p in projects]
    except OSError as exc:
        raise SourceError(f"cannot read the SpecStory directory {path}: {exc.strerror or exc}") from exc
    listed = [(p, files) for p, files in listed if files]
    if not listed:
        raise SourceError(f"no SpecStory histories (<project>/*.md) in {path}")
    digest = hashlib.sha256()
    totals = chatlog.new_totals()
    groups: list[Group] = []
    for project, pages in listed:
        texts: list[tuple[str, str]] = []
        for page in pages:
            try:
                data = page.read_bytes()
            except OSError as exc:
                raise SourceError(f"cannot read SpecStory history {page}: {exc.strerror or exc}") from exc
            digest.update(f"{project.name}/{page.name}".encode() + b"\0" + data)
            texts.append((page.name, data.decode("utf-8", errors="replace")))
        group = chatlog.convert(chatlog.project_id(project.name), project_sessions(texts), totals, max_chars=max_chars)
        if group is not None:
            groups.append(group)
    if not groups:
        raise SourceError(f"no SpecStory project in {path} yields a question")
    return EvalSet("specstory", "SpecStory chats", tuple(groups), chatlog.CATEGORY_NAMES, digest.hexdigest(), totals)
