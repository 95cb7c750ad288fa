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
right after is dropped. Each session becomes `sessions/<project>-<nn>.jsonl` (one OpenClaw message
record per message, at the session's start time plus one second per message). A project keeps its
sessions, in order, up to `MAX_CHARS` of message text.

Questions, by a fixed rule (no qrels exist): a user request is a question when it has 6 to 60
words, is mostly ASCII (the English shape the packaged model reads), is the only user message of
the project with that text, appears in no other message, and got an answer of at least 50 words.
Of those, the `QUESTIONS` whose id hashes lowest are asked (a project with fewer than
`MIN_QUESTIONS` is left out); the evidence is the line of the answer
(the assistant message), and the question's own message is left out of the transcript, so it can
never find itself: what is searched is what the assistant answered, as a later session's "how did
we fix the road spawning?" would search it. Category 1: the answer holds code (a fence or an edit
block); 2: prose only. One workspace per project, so each index is also asked another project's
questions (abstention).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import MappingProxyType

import orjson

from memoryd.errors import SourceError
from memoryd.eval.dataset import EvalSet, Group, Qrel

CATEGORY_NAMES: Mapping[int, str] = MappingProxyType({1: "code answer", 2: "prose answer"})
SESSIONS_DIR = "sessions"
MAX_CHARS = 250_000
"""Message text kept per project (whole sessions, in order): bounds the index and embedding cost."""
QUESTIONS = 40
"""Questions per project (those whose id hashes lowest among the eligible requests)."""
MIN_QUESTIONS = 5
"""A project with fewer eligible requests is left out (too small a history to search)."""
MIN_WORDS, MAX_WORDS, MIN_ANSWER_WORDS = 6, 60, 50
MIN_ASCII_SHARE = 0.9
_STARTED = re.compile(r"^# aider chat started at (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})")
_PROMPT_PREFIXES = ("/ask", "/code", "/architect")
_WORD = re.compile(r"\w+")
_CODE = re.compile(r"^\s*(```|~~~|<<<<<<< SEARCH|>>>>>>> REPLACE)", re.MULTILINE)


@dataclass(slots=True)
class Message:
    role: str  # "user" | "assistant"
    text: str


@dataclass(slots=True)
class Session:
    started: datetime
    messages: list[Message] = field(default_factory=list)


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
            if said is not None and not (echo and last_user is not None and last_user.text == said):
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


def _words(text: str) -> int:
    return len(_WORD.findall(text))


def _ascii_share(text: str) -> float:
    letters = [c for c in text if c.isalpha()]
    return sum(c.isascii() for c in letters) / len(letters) if letters else 0.0


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _kept(sessions: Sequence[Session]) -> list[Session]:
    kept: list[Session] = []
    total = 0
    for s in sessions:
        size = sum(len(m.text) for m in s.messages)
        if kept and total + size > MAX_CHARS:
            break
        kept.append(s)
        total += size
    return kept


@dataclass(frozen=True, slots=True)
class _Ask:
    qid: str
    session: int
    index: int  # the user message's index in its session
    text: str
    category: int


def _eligible(project: str, sessions: Sequence[Session]) -> list[_Ask]:
    """Every user request the rule accepts (module docstring), in order."""
    users = [_norm(m.text) for s in sessions for m in s.messages if m.role == "user"]
    counts = {u: users.count(u) for u in set(users)}
    every = [(si, mi, _norm(m.text)) for si, s in enumerate(sessions) for mi, m in enumerate(s.messages)]
    found: list[_Ask] = []
    for si, s in enumerate(sessions):
        for mi, m in enumerate(s.messages):
            if m.role != "user" or mi + 1 >= len(s.messages) or s.messages[mi + 1].role != "assistant":
                continue
            words, answer = _words(m.text), s.messages[mi + 1].text
            norm = _norm(m.text)
            if not MIN_WORDS <= words <= MAX_WORDS or _ascii_share(m.text) < MIN_ASCII_SHARE:
                continue
            if _words(answer) < MIN_ANSWER_WORDS or counts[norm] > 1:
                continue
            if any(norm in other for osi, omi, other in every if (osi, omi) != (si, mi)):
                continue
            category = 1 if _CODE.search(answer) else 2
            found.append(_Ask(f"{project}:s{si + 1:02d}m{mi + 1:03d}", si, mi, m.text, category))
    return found


def _record(role: str, text: str, at: datetime) -> str:
    record = {
        "type": "message",
        "timestamp": at.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "message": {"role": role, "content": [{"type": "text", "text": text}]},
    }
    return orjson.dumps(record).decode() + "\n"


def convert(project: str, text: str, totals: dict[str, int]) -> Group | None:
    """One project's history as a workspace and its questions (None when it yields no question)."""
    sessions = _kept(parse_history(text))
    eligible = _eligible(project, sessions)
    asked = sorted(eligible, key=lambda a: hashlib.sha256(a.qid.encode()).hexdigest())[:QUESTIONS]
    if len(asked) < MIN_QUESTIONS:
        totals["skipped_projects"] += 1
        return None
    held_out = {(a.session, a.index) for a in asked}
    files: dict[str, str] = {}
    where: dict[tuple[int, int], tuple[str, int]] = {}
    for si, s in enumerate(sessions):
        rel = f"{SESSIONS_DIR}/{project}-{si + 1:02d}.jsonl"
        lines: list[str] = []
        for mi, m in enumerate(s.messages):
            if (si, mi) in held_out:
                continue
            lines.append(_record(m.role, m.text, s.started + timedelta(seconds=mi)))
            where[(si, mi)] = (rel, len(lines))
            totals["assistant_words" if m.role == "assistant" else "user_words"] += _words(m.text)
        if lines:
            files[rel] = "".join(lines)
        totals["sessions"] += 1
        totals["messages"] += len(lines)
    questions = tuple(
        Qrel(a.qid, a.text, a.category, frozenset({where[(a.session, a.index + 1)]}))
        for a in sorted(asked, key=lambda a: (a.session, a.index))
    )
    totals["projects"] += 1
    totals["eligible"] += len(eligible)
    totals["questions"] += len(questions)
    return Group(project, files, questions)


def load_aider(path: Path) -> EvalSet:
    """Every `*.md` aider history in the directory `path`, one workspace per file."""
    try:
        pages = sorted(p for p in path.iterdir() if p.suffix == ".md" and p.is_file())
    except OSError as exc:
        raise SourceError(f"cannot read the aider directory {path}: {exc.strerror or exc}") from exc
    if not pages:
        raise SourceError(f"no aider chat histories (*.md) in {path}")
    digest = hashlib.sha256()
    totals = dict.fromkeys(
        ("projects", "skipped_projects", "sessions", "messages", "eligible", "questions", "user_words"), 0
    )
    totals["assistant_words"] = 0
    groups: list[Group] = []
    for page in pages:
        try:
            data = page.read_bytes()
        except OSError as exc:
            raise SourceError(f"cannot read aider history {page}: {exc.strerror or exc}") from exc
        digest.update(page.name.encode() + b"\0" + data)
        project = re.sub(r"[^a-z0-9-]+", "-", page.stem.lower()).strip("-") or "project"
        group = convert(project, data.decode("utf-8", errors="replace"), totals)
        if group is not None:
            groups.append(group)
    if not groups:
        raise SourceError(f"no aider history in {path} yields a question")
    return EvalSet("aider", "aider chats", tuple(groups), CATEGORY_NAMES, digest.hexdigest(), totals)
