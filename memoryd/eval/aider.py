"""Coding-agent chats (aider's `.aider.chat.history.md`) as transcripts: the agent-shaped dev set.

The shape the other sets lack and the held-out set has: a user asking a coding assistant for
changes and explanations, the assistant answering at length with code, file names, commands and
edit blocks. Many public repositories commit aider's history file; the input is a directory of
them, one `<project>.md` each (the user picks and fetches them; nothing is shipped).

Parsing aider's markdown: `# aider chat started at <time>` opens a session; a run of `#### ` lines
is one user message; `> ` lines are aider's own output (tool runs, token counts, prompts) and are
left out; every other line is the assistant's answer, and one answer runs until the next user
message, whatever tool output interrupts it. Commands (`/add`, `/run`, `/model`, ...) are not
messages; `/ask`, `/code` and `/architect` lose their prefix, and aider's echo of the same text
right after is dropped, as is architect mode's relay of the architect's answer to the editor model
(a `####` message found word for word in the answer before it). Each session becomes
`sessions/<project>-<nn>.jsonl` (one OpenClaw message record per message, at the session's start
time plus one second per message). A project keeps its
sessions, in order, up to `chatlog.MAX_CHARS` of message text.

The questions, by the rule `memoryd.eval.chatlog` shares with the other chat-log sets: a user request
of 6-60 words that reads as English, occurs in no other message and got an answer of 50 words or more
is held out of the transcript and asked; its evidence is the answer's line.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from memoryd.errors import SourceError
from memoryd.eval import chatlog
from memoryd.eval.chatlog import Message, Session
from memoryd.eval.dataset import EvalSet, Group

__all__ = ["Message", "Session", "convert", "load_aider", "parse_history"]

_STARTED = re.compile(r"^# aider chat started at (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})")
_PROMPT_PREFIXES = ("/ask", "/code", "/architect")
RELAY_MIN_WORDS = 30
"""A shorter message found in the answer before it ("yes", a file name) is the user's, not a relay."""


def _user_text(lines: Sequence[str]) -> str | None:
    """A user block as a message: None for aider commands and prompts it answered for the user."""
    text = "\n".join(lines).strip()
    if not text or "(Y)es/(N)o" in text:
        return None
    if text.startswith("/"):
        command, _, rest = text.partition(" ")
        if command not in _PROMPT_PREFIXES or not rest.strip():
            return None
        text = rest.strip()
    return text


def _relayed(said: str, last: Message | None) -> bool:
    """Architect mode hands the architect's answer to the editor model as a `####` message: a long
    "user" message found word for word in the answer just before it is that relay, not the user."""
    if last is None or last.role != "assistant":
        return False
    words = said.split()
    return len(words) >= RELAY_MIN_WORDS and " ".join(words) in " ".join(last.text.split())


def parse_history(text: str) -> list[Session]:
    """The sessions of one aider history file, each a list of user and assistant messages."""
    sessions: list[Session] = []
    current: Session | None = None
    user: list[str] = []
    answer: list[str] = []

    def flush_user() -> None:
        if current is not None and user:
            said = _user_text(user)
            last_user = next((m for m in reversed(current.messages) if m.role == "user"), None)
            echo = bool(current.messages) and current.messages[-1] is last_user and last_user is not None
            repeated = echo and last_user is not None and last_user.text == said
            previous = current.messages[-1] if current.messages else None
            if said is not None and not repeated and not _relayed(said, previous):
                current.messages.append(Message("user", said))
        user.clear()

    def flush_answer() -> None:
        body = "\n".join(answer).strip()
        if current is not None and body and current.messages:
            last = current.messages[-1]
            if last.role == "assistant":
                last.text += "\n\n" + body
            else:
                current.messages.append(Message("assistant", body))
        answer.clear()

    for raw in text.splitlines():
        line = raw.rstrip()
        started = _STARTED.match(line)
        if started:
            flush_user()
            flush_answer()
            current = Session(datetime.strptime(started.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC))
            sessions.append(current)
        elif line.startswith("####"):
            flush_answer()
            user.append(line[5:] if line.startswith("#### ") else line[4:])
        elif line.startswith(">"):
            flush_user()
            flush_answer()
        else:
            flush_user()
            answer.append(line)
    flush_user()
    flush_answer()
    return [s for s in sessions if s.messages]


def convert(project: str, text: str, totals: dict[str, int]) -> Group | None:
    """One project's history as a workspace and its questions (None when it yields too few)."""
    return chatlog.convert(project, parse_history(text), totals)


def load_aider(path: Path) -> EvalSet:
    """Every `*.md` aider history in the directory `path`, one workspace per file."""
    try:
        pages = sorted(p for p in path.iterdir() if p.suffix == ".md" and p.is_file())
    except OSError as exc:
        raise SourceError(f"cannot read the aider directory {path}: {exc.strerror or exc}") from exc
    if not pages:
        raise SourceError(f"no aider chat histories (*.md) in {path}")
    digest = hashlib.sha256()
    totals = chatlog.new_totals()
    groups: list[Group] = []
    for page in pages:
        try:
            data = page.read_bytes()
        except OSError as exc:
            raise SourceError(f"cannot read aider history {page}: {exc.strerror or exc}") from exc
        digest.update(page.name.encode() + b"\0" + data)
        group = convert(chatlog.project_id(page.stem), data.decode("utf-8", errors="replace"), totals)
        if group is not None:
            groups.append(group)
    if not groups:
        raise SourceError(f"no aider history in {path} yields a question")
    return EvalSet("aider", "aider chats", tuple(groups), chatlog.CATEGORY_NAMES, digest.hexdigest(), totals)
