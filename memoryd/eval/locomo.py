"""LoCoMo (snap-research/LoCoMo, `data/locomo10.json`) as memoryd workspaces with line-level qrels.

LoCoMo is CC BY-NC 4.0, so memoryd never ships it: the harness reads it from a path the user gives.
Each conversation becomes a workspace of session transcripts, one JSONL record per turn, so every
evidence id `D<session>:<turn>` names exactly one (file, line) that a search result can cover.
A few evidence lists carry typing slips (several ids in one string, `D:11:26`, `D30:05`, a bare
`D`); they are repaired and recorded, and ids that name no turn are kept apart as unresolved.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any

import orjson

from memoryd.errors import SourceError
from memoryd.eval import dataset
from memoryd.eval.dataset import EvalSet, Group, Qrel
from memoryd.eval.metrics import EvidenceLine
from memoryd.search.timeframe import MONTHS

CATEGORY_NAMES: Mapping[int, str] = MappingProxyType(
    {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
)
POOL_ID = "locomo-pool"
TURN_SECONDS = 30  # synthetic gap between turns, so times increase inside a session
SESSIONS_DIR = "sessions"

_SESSION_KEY = re.compile(r"session_([0-9]+)")
_EVIDENCE_ID = re.compile(r"D:?([0-9]+):([0-9]+)")
_EVIDENCE_SEPARATORS = re.compile(r"[;,\s]+")
_SESSION_DATE = re.compile(
    r"\s*([0-9]{1,2}):([0-9]{2})\s*([ap]m)\s+on\s+([0-9]{1,2})\s+([A-Za-z]+),?\s+([0-9]{4})\s*", re.IGNORECASE
)


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    caption: str | None  # BLIP caption of an image the speaker shared


@dataclass(frozen=True, slots=True)
class Session:
    number: int
    started: datetime  # LoCoMo gives no time zone; read as UTC
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class Question:
    qid: str
    question: str
    category: int
    evidence: tuple[str, ...]  # repaired dialog ids that name a turn
    unresolved: tuple[str, ...]  # repaired dialog ids that name no turn


@dataclass(frozen=True, slots=True)
class Repair:
    """An evidence entry that was not one well-formed dialog id, and what it became."""

    qid: str
    raw: str
    fixed: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]
    repairs: tuple[Repair, ...]

    @property
    def turn_count(self) -> int:
        return sum(len(s.turns) for s in self.sessions)


@dataclass(frozen=True, slots=True)
class Dataset:
    conversations: tuple[Conversation, ...]
    sha256: str


# ---------------------------------------------------------------------------------------- loading


def repair_evidence_id(raw: str) -> tuple[str, ...]:
    """The well-formed ids in one evidence entry: split on `;`, `,` or spaces, `D:11:26` -> `D11:26`,
    `D30:05` -> `D30:5`; anything else (a bare `D`) is dropped."""
    ids: list[str] = []
    for piece in _EVIDENCE_SEPARATORS.split(raw.strip()):
        match = _EVIDENCE_ID.fullmatch(piece)
        if match is not None:
            ids.append(f"D{int(match.group(1))}:{int(match.group(2))}")
    return tuple(ids)


def parse_session_date(text: str) -> datetime:
    """`1:56 pm on 8 May, 2023` as a naive datetime (no locale involved)."""
    match = _SESSION_DATE.fullmatch(text)
    month = match.group(5).lower() if match else ""
    if match is None or month not in MONTHS:
        raise SourceError(f"LoCoMo session date {text!r} is not like '1:56 pm on 8 May, 2023'")
    hour, minute = int(match.group(1)) % 12, int(match.group(2))
    if match.group(3).lower() == "pm":
        hour += 12
    try:
        return datetime(int(match.group(6)), MONTHS.index(month) + 1, int(match.group(4)), hour, minute)
    except ValueError as exc:
        raise SourceError(f"LoCoMo session date {text!r}: {exc}") from exc


def load_locomo(path: Path) -> Dataset:
    """Read `locomo10.json` (a list of samples) into conversations with repaired evidence."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SourceError(f"cannot read LoCoMo file {path}: {exc.strerror or exc}") from exc
    try:
        samples = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise SourceError(f"LoCoMo file {path} is not JSON: {exc}") from exc
    if not isinstance(samples, list) or not samples:
        raise SourceError(f"LoCoMo file {path} should hold a non-empty list of samples")
    conversations = tuple(parse_sample(sample, n) for n, sample in enumerate(samples, 1))
    return Dataset(conversations, hashlib.sha256(data).hexdigest())


def parse_sample(sample: object, position: int) -> Conversation:
    """One LoCoMo sample; a missing or mistyped field is a SourceError naming the sample."""
    if not isinstance(sample, dict):
        raise SourceError(f"LoCoMo sample {position} is not an object")
    name = str(sample.get("sample_id", f"sample {position}"))
    try:
        return _parse_sample(sample, name)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise SourceError(f"LoCoMo {name}: unexpected layout ({type(exc).__name__}: {exc})") from exc


def _parse_sample(sample: dict[str, Any], sample_id: str) -> Conversation:
    conv = sample["conversation"]
    sessions: list[Session] = []
    for key, turns in conv.items():
        match = _SESSION_KEY.fullmatch(key)
        if match is None or not isinstance(turns, list):
            continue
        number = int(match.group(1))
        started = parse_session_date(str(conv[f"session_{number}_date_time"]))
        sessions.append(Session(number, started, tuple(_turn(t) for t in turns)))
    sessions.sort(key=lambda s: s.number)
    known = {t.dia_id for s in sessions for t in s.turns}
    questions: list[Question] = []
    repairs: list[Repair] = []
    for n, qa in enumerate(sample["qa"], 1):
        qid = f"{sample_id}:q{n:04d}"
        evidence: list[str] = []
        for raw in qa.get("evidence") or ():
            fixed = repair_evidence_id(str(raw))
            if fixed != (raw,):
                repairs.append(Repair(qid, str(raw), fixed))
            evidence.extend(i for i in fixed if i not in evidence)
        questions.append(
            Question(
                qid=qid,
                question=str(qa["question"]),
                category=int(qa["category"]),
                evidence=tuple(i for i in evidence if i in known),
                unresolved=tuple(i for i in evidence if i not in known),
            )
        )
    return Conversation(
        sample_id=sample_id,
        speaker_a=str(conv["speaker_a"]),
        speaker_b=str(conv["speaker_b"]),
        sessions=tuple(sessions),
        questions=tuple(questions),
        repairs=tuple(repairs),
    )


def _turn(raw: Mapping[str, Any]) -> Turn:
    caption = raw.get("blip_caption")
    return Turn(
        dia_id=str(raw["dia_id"]),
        speaker=str(raw["speaker"]),
        text=str(raw["text"]),
        caption=str(caption) if caption else None,
    )


# ------------------------------------------------------------------------------------- conversion


def session_path(sample_id: str, number: int, *, pooled: bool) -> str:
    """Where a session's transcript lives, relative to the workspace; pooled names carry the sample."""
    name = f"session_{number:02d}.jsonl"
    return f"{SESSIONS_DIR}/{sample_id}_{name}" if pooled else f"{SESSIONS_DIR}/{name}"


def turn_text(turn: Turn) -> str:
    """`<speaker>: <text>`, plus ` [shares <caption>]` as LoCoMo's own evaluation code does."""
    text = f"{turn.speaker}: {turn.text}"
    return f"{text} [shares {turn.caption}]" if turn.caption else text


def transcript(conv: Conversation, session: Session) -> str:
    """A session as OpenClaw-style JSONL: line N is turn N (compact JSON, one message per line)."""
    lines = []
    for i, turn in enumerate(session.turns):
        at = session.started + timedelta(seconds=TURN_SECONDS * i)
        record = {
            "type": "message",
            "timestamp": at.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "message": {
                "role": "user" if turn.speaker == conv.speaker_a else "assistant",
                "content": [{"type": "text", "text": turn_text(turn)}],
            },
        }
        lines.append(orjson.dumps(record).decode() + "\n")
    return "".join(lines)


def workspace_files(conv: Conversation, *, pooled: bool = False) -> dict[str, str]:
    """Workspace-relative path -> file text for every session of the conversation."""
    return {session_path(conv.sample_id, s.number, pooled=pooled): transcript(conv, s) for s in conv.sessions}


def dialog_lines(conv: Conversation, *, pooled: bool = False) -> dict[str, EvidenceLine]:
    """Dialog id -> (transcript path, 1-based line) of the turn."""
    return {
        turn.dia_id: (session_path(conv.sample_id, s.number, pooled=pooled), line)
        for s in conv.sessions
        for line, turn in enumerate(s.turns, 1)
    }


def qrels(conv: Conversation, *, pooled: bool = False) -> list[Qrel]:
    """The scored questions: those with at least one evidence turn (the others are skipped)."""
    where = dialog_lines(conv, pooled=pooled)
    return [
        Qrel(q.qid, q.question, q.category, frozenset(where[i] for i in q.evidence))
        for q in conv.questions
        if q.evidence
    ]


def write_workspace(root: Path, files: Mapping[str, str]) -> None:
    """Write the transcripts under `root` (identical files untouched, stale ones removed)."""
    dataset.write_workspace(root, files)


def counts(conversations: Sequence[Conversation]) -> dict[str, int]:
    """Sizes worth printing next to the results."""
    questions = [q for c in conversations for q in c.questions]
    return {
        "conversations": len(conversations),
        "sessions": sum(len(c.sessions) for c in conversations),
        "turns": sum(c.turn_count for c in conversations),
        "questions": len(questions),
        "skipped_no_evidence": sum(1 for q in questions if not q.evidence),
        "evidence_repairs": sum(len(c.repairs) for c in conversations),
        "unresolved_evidence": sum(len(q.unresolved) for q in questions),
    }


def eval_set(data: Dataset, *, pool: bool = False) -> EvalSet:
    """The conversations as the harness runs them: one index each, or one pooled index of all."""
    convs = data.conversations
    groups: tuple[Group, ...]
    if pool:
        files = {rel: text for c in convs for rel, text in workspace_files(c, pooled=True).items()}
        groups = (Group(POOL_ID, files, tuple(q for c in convs for q in qrels(c, pooled=True))),)
    else:
        groups = tuple(Group(c.sample_id, workspace_files(c), tuple(qrels(c))) for c in convs)
    return EvalSet("locomo", "LoCoMo", groups, CATEGORY_NAMES, data.sha256, counts(convs))
