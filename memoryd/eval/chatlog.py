"""Coding-agent chat logs as eval workspaces: the question rule the agent-shaped sets share.

A loader (`aider`, `specstory`) parses its format into `Session`s of user and assistant messages;
`convert` turns one project's sessions into a workspace and its questions. No qrels exist, so the
questions come by a fixed rule: a user request is a question when it has 6 to 60 words, reads as
English (at least 90% of its letters ASCII and at least two distinct common English function words:
the packaged model reads English, and the sets must not quietly fill with another language), occurs
in no other message of the project (neither a second user message with that text nor a quote of it
in any other message, compared lower-cased with whitespace collapsed) and got an answer of at least
50 words. Of those, the `QUESTIONS` whose id hashes lowest are asked (a project with fewer than
`MIN_QUESTIONS` is left out); the evidence is the line of the answer (the assistant message), and
the question's own message is left out of the transcript, so it can never find itself: what is
searched is what the assistant answered, as a later session's "how did we fix the road spawning?"
would search it. Category 1: the answer holds code (a fence or an edit block); 2: prose only.

A project keeps its sessions, in order, up to `MAX_CHARS` of message text (the first session always),
and each becomes `sessions/<project>-<nn>.jsonl`: one OpenClaw message record per message, at the
session's start time plus one second per message. One workspace per project, so each index is also
asked another project's questions (abstention).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import MappingProxyType

import orjson

from memoryd.eval.dataset import Group, Qrel

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
MIN_FUNCTION_WORDS = 2
_FUNCTION_WORDS = """
the to in of and or but for with without that this these those it its itself is are were be been being
can could should would may might must shall did does doing done had have having what how why when where which who
whom whose whether while there here from into onto about above across after against along among around at before
behind below between beyond during except inside like near off out outside past since through under until up upon
within than then if not because though although unless yet just only now too very all any both each either every
few many more most much neither none other same several some such another something anything nothing everything
someone anyone everyone nobody somewhere anywhere everywhere nowhere else you your yours yourself we our ours us
they them their theirs his him she mine myself
"""
FUNCTION_WORDS = frozenset(_FUNCTION_WORDS.split())
"""Common English function words (articles, pronouns, prepositions, auxiliaries, conjunctions, quantifiers).
Those that are also common words of Polish, Spanish, German, French or Portuguese ('a', 'i', 'an', 'am',
'by', 'do', 'he', 'me', 'my', 'no', 'on', 'so', 'has', 'was', 'will', 'also', 'via') are left out, so
they cannot vouch for a request in those languages; the few kept that some of them share ('to', 'in',
'we') vouch only with another word of the list."""
COUNT_KEYS = (
    "projects",
    "skipped_projects",
    "sessions",
    "messages",
    "eligible",
    "questions",
    "user_words",
    "assistant_words",
)
_WORD = re.compile(r"\w+")
_CODE = re.compile(r"^\s*(```|~~~|<<<<<<< SEARCH|>>>>>>> REPLACE)", re.MULTILINE)
_APART = "\0"
"""Joins the normalised messages into one text to search: no normalised message holds it."""


@dataclass(slots=True)
class Message:
    role: str  # "user" | "assistant"
    text: str


@dataclass(slots=True)
class Session:
    started: datetime
    messages: list[Message] = field(default_factory=list)


def new_totals() -> dict[str, int]:
    """The counts a loader passes to `convert` and reports with its set."""
    return dict.fromkeys(COUNT_KEYS, 0)


def project_id(name: str) -> str:
    """A file or directory name as a workspace's agent id."""
    return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-") or "project"


def words(text: str) -> int:
    return len(_WORD.findall(text))


def ascii_share(text: str) -> float:
    letters = [c for c in text if c.isalpha()]
    return sum(c.isascii() for c in letters) / len(letters) if letters else 0.0


def reads_as_english(text: str) -> bool:
    """The English check of the rule: mostly ASCII letters and at least two distinct function words."""
    if ascii_share(text) < MIN_ASCII_SHARE:
        return False
    found = {w for w in _WORD.findall(text.lower()) if w in FUNCTION_WORDS}
    return len(found) >= MIN_FUNCTION_WORDS


def normalise(text: str) -> str:
    return " ".join(text.lower().replace(_APART, " ").split())


def kept(sessions: Sequence[Session], max_chars: int = MAX_CHARS) -> list[Session]:
    """The sessions, in order, up to `max_chars` of message text (the first one whatever its size)."""
    out: list[Session] = []
    total = 0
    for s in sessions:
        size = sum(len(m.text) for m in s.messages)
        if out and total + size > max_chars:
            break
        out.append(s)
        total += size
    return out


@dataclass(frozen=True, slots=True)
class Ask:
    """An eligible request: where it is (session, message index) and its answer's category."""

    qid: str
    session: int
    index: int
    text: str
    category: int


def eligible(project: str, sessions: Sequence[Session]) -> list[Ask]:
    """Every user request the rule accepts (module docstring), in order.

    "Occurs in no other message" is one search per candidate of all the project's normalised messages
    joined into one text: the candidate's own message holds it once, so any second occurrence is a
    repeat or a quote. Linear in the text per candidate, and only candidates that pass the cheap tests
    are searched (a project has thousands of messages, a few hundred candidates)."""
    normalised = [[normalise(m.text) for m in s.messages] for s in sessions]
    everything = _APART.join(n for per_session in normalised for n in per_session)
    found: list[Ask] = []
    for si, s in enumerate(sessions):
        for mi, m in enumerate(s.messages):
            if m.role != "user" or mi + 1 >= len(s.messages) or s.messages[mi + 1].role != "assistant":
                continue
            answer = s.messages[mi + 1].text
            if not MIN_WORDS <= words(m.text) <= MAX_WORDS or not reads_as_english(m.text):
                continue
            norm = normalised[si][mi]
            if words(answer) < MIN_ANSWER_WORDS or everything.count(norm) > 1:
                continue
            category = 1 if _CODE.search(answer) else 2
            found.append(Ask(f"{project}:s{si + 1:02d}m{mi + 1:03d}", si, mi, m.text, category))
    return found


def _record(role: str, text: str, at: datetime) -> str:
    record = {
        "type": "message",
        "timestamp": at.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "message": {"role": role, "content": [{"type": "text", "text": text}]},
    }
    return orjson.dumps(record).decode() + "\n"


def convert(
    project: str, sessions: Sequence[Session], totals: dict[str, int], *, max_chars: int = MAX_CHARS
) -> Group | None:
    """One project's sessions as a workspace and its questions (None when it yields too few)."""
    sessions = kept(sessions, max_chars)
    found = eligible(project, sessions)
    asked = sorted(found, key=lambda a: hashlib.sha256(a.qid.encode()).hexdigest())[:QUESTIONS]
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
            totals["assistant_words" if m.role == "assistant" else "user_words"] += words(m.text)
        if lines:
            files[rel] = "".join(lines)
        totals["sessions"] += 1
        totals["messages"] += len(lines)
    questions = tuple(
        Qrel(a.qid, a.text, a.category, frozenset({where[(a.session, a.index + 1)]}))
        for a in sorted(asked, key=lambda a: (a.session, a.index))
    )
    totals["projects"] += 1
    totals["eligible"] += len(found)
    totals["questions"] += len(questions)
    return Group(project, files, questions)
