"""The session-start brief: MEMORY.md's head and the newest daily notes' headings, within a budget.

Read through the daemon (`memory_get`: the agent the daemon serves, its read rules). `auto` leaves it
out when the host already loads that very MEMORY.md into the session: Claude Code loads the CLAUDE.md
files from the working directory up, `~/.claude/CLAUDE.md` and its own auto memory
(`~/.claude/projects/<project>/memory/MEMORY.md`), and what they import with `@path`; Codex loads
AGENTS.md files. When the workspace's MEMORY.md is one of those (or imported by one), the host has it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
from collections.abc import Callable
from pathlib import Path

HEADER = (
    "<memoryd-brief>\nLong-term memory (memoryd): the head of MEMORY.md and the newest daily notes' "
    "headings; memory_search finds the rest.\n"
)
FOOTER = "</memoryd-brief>"
HEAD_LINES = 60
DAILY_NOTES = 2
DAYS_BACK = 7
FLUSH = (
    "<memoryd-flush>\nThe conversation was just compacted. Before going on, save the durable facts of the "
    "part that was summarised (decisions, preferences, lasting facts, open todos) with memory_write; search "
    "memory first and do not save what is already there; never save secrets.\n</memoryd-flush>"
)
_IMPORT = re.compile(r"(?:^|\s)@(\S+)")

Get = Callable[[str, int], str | None]
"""memory_get of `path`'s first `lines` lines through the daemon; None when the file is missing."""


def _instruction_files(host: str, cwd: str, home: Path) -> list[Path]:
    names = ("CLAUDE.md", "CLAUDE.local.md") if host == "claude-code" else ("AGENTS.md", "AGENTS.override.md")
    found: list[Path] = []
    if cwd:
        here = Path(cwd)
        for folder in (here, *here.parents):
            found += [folder / name for name in names]
            found.append(folder / ".claude" / "CLAUDE.md")
    found += [home / ".claude" / "CLAUDE.md"] if host == "claude-code" else [home / ".codex" / "AGENTS.md"]
    return found


def host_loads(host: str, cwd: str, transcript_path: str, memory_file: Path, home: Path | None = None) -> bool:
    """The host already puts `memory_file` in the session: it is one of its instruction or auto-memory
    files, or one of those imports it (`@path`)."""
    home = home or Path(os.environ.get("HOME") or Path.home())
    if not memory_file.exists():
        return False
    candidates = _instruction_files(host, cwd, home)
    if host == "claude-code" and transcript_path:
        candidates.append(Path(transcript_path).parent / "memory" / "MEMORY.md")
    for path in candidates:
        with contextlib.suppress(OSError):
            if path.exists() and (os.path.samefile(path, memory_file) or _imports(path, memory_file, home)):
                return True
    return False


def _imports(instructions: Path, memory_file: Path, home: Path) -> bool:
    text = instructions.read_text(encoding="utf-8", errors="replace")[:200_000]
    for target in _IMPORT.findall(text):
        path = Path(target.replace("~", str(home), 1) if target.startswith("~") else target)
        path = path if path.is_absolute() else instructions.parent / path
        with contextlib.suppress(OSError):
            if path.exists() and os.path.samefile(path, memory_file):
                return True
    return False


def headings(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.lstrip().startswith("#")]


_DAILY = re.compile(r"^\d{4}-\d{2}-\d{2}\.md$")


def daily_notes(workspace: Path | None, today: dt.date | None = None) -> list[str]:
    """The daily notes to look at, newest first: those in the workspace's `memory/` when this machine's
    configuration knows the workspace, else the last DAYS_BACK days' names (the daemon says which exist)."""
    if workspace is not None:
        with contextlib.suppress(OSError):
            names = sorted((n for n in os.listdir(workspace / "memory") if _DAILY.match(n)), reverse=True)
            return [f"memory/{n}" for n in names[: DAILY_NOTES * 3]]
    day = today or dt.date.today()
    return [f"memory/{day - dt.timedelta(days=back)}.md" for back in range(DAYS_BACK)]


def brief(get: Get, max_chars: int, names: list[str]) -> str:
    """The brief within `max_chars` (frame included); empty when memory holds neither file."""
    room = max_chars - len(HEADER) - len(FOOTER) - 1
    if room <= 0:
        return ""
    notes: list[str] = []
    for name in names:
        if len(notes) == DAILY_NOTES:
            break
        text = get(name, 400)
        if text is not None and (marks := headings(text)):
            notes.append(f"{name}: {'; '.join(marks)}")
    tail = "\n".join(n if len(n) <= room // 2 else n[: room // 2 - 1] + "…" for n in notes)
    head = ""
    for name in ("MEMORY.md", "memory.md"):
        text = get(name, HEAD_LINES)
        if text is not None and text.strip():
            space = room - len(tail) - len(name) - 3
            body = text.strip()
            if space > 40:
                head = f"{name}:\n{body if len(body) <= space else body[: space - 1].rstrip() + '…'}"
            break
    parts = [p for p in (head, tail) if p]
    return HEADER + "\n".join(parts) + "\n" + FOOTER if parts else ""
