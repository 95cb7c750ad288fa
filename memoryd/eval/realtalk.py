"""REALTALK (danny911kr/REALTALK, `data/Chat_*.json`) as memoryd workspaces with line-level qrels.

REALTALK is 21 days of real messaging-app chats between ten pairs of people, in LoCoMo's layout
(sessions of turns with dialog ids, questions with evidence ids) but with real, uneven turns: one
person often sends several short messages in a row, and every message has its own time. Each chat
becomes one workspace of session transcripts, one JSONL record per message with that message's
time, so an evidence id names one (file, line). The repository ships no licence file: the data is
read from a path the user gives and never shipped. Evidence lists carry slips LoCoMo's do not:
ranges (`D18:2-D18:3`, expanded), trailing dots, several ids glued with `:`; ids that name no
message (one chat was annotated against a longer export) are kept apart as unresolved.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

import orjson

from memoryd.errors import SourceError
from memoryd.eval.dataset import EvalSet, Group, Qrel

CATEGORY_NAMES: Mapping[int, str] = MappingProxyType({1: "multi-hop", 2: "temporal", 3: "commonsense"})
SESSIONS_DIR = "sessions"
_SESSION_KEY = re.compile(r"session_([0-9]+)")
_ID = re.compile(r"D([0-9]+):([0-9]+)")
_RANGE = re.compile(r"D([0-9]+):([0-9]+)-(?:D([0-9]+):)?([0-9]+)")
_TIME_FORMAT = "%d.%m.%Y, %H:%M:%S"


def parse_evidence(raw: str) -> list[str]:
    """The dialog ids one evidence entry names: `D5:3`, `D5:3.`, `D5:12;D5:16`, `D13:45:D20:19`,
    and ranges within one session `D18:2-D18:3` or `D18:2-3` (expanded)."""
    ids: list[str] = []
    for piece in re.split(r"[;,\s]+|:(?=D)", raw.strip().rstrip(".")):
        span = _RANGE.fullmatch(piece)
        if span is not None and (span.group(3) in (None, span.group(1))):
            session, first, last = int(span.group(1)), int(span.group(2)), int(span.group(4))
            ids.extend(f"D{session}:{turn}" for turn in range(first, max(first, last) + 1))
            continue
        single = _ID.fullmatch(piece.rstrip("."))
        if single is not None:
            ids.append(f"D{int(single.group(1))}:{int(single.group(2))}")
    return ids


def load_realtalk(path: Path) -> EvalSet:
    """Every `Chat_*.json` of the directory `path` (REALTALK's `data/`), one workspace each."""
    try:
        files = sorted(path.glob("Chat_*.json"), key=_chat_number)
    except OSError as exc:
        raise SourceError(f"cannot read the REALTALK directory {path}: {exc.strerror or exc}") from exc
    if not files:
        raise SourceError(f"no REALTALK chats (Chat_*.json) in {path}")
    digest = hashlib.sha256()
    groups: list[Group] = []
    totals = {"conversations": 0, "sessions": 0, "turns": 0, "questions": 0, "skipped_no_evidence": 0}
    totals["unresolved_evidence"] = 0
    for file in files:
        try:
            data = file.read_bytes()
            chat = orjson.loads(data)
        except (OSError, orjson.JSONDecodeError) as exc:
            raise SourceError(f"cannot read REALTALK chat {file}: {exc}") from exc
        digest.update(data)
        try:
            groups.append(_convert(file.stem.lower().replace("_", "-"), chat, totals))
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise SourceError(f"REALTALK {file.name}: unexpected layout ({type(exc).__name__}: {exc})") from exc
    return EvalSet("realtalk", "REALTALK", tuple(groups), CATEGORY_NAMES, digest.hexdigest(), totals)


def _chat_number(path: Path) -> tuple[int, str]:
    match = re.match(r"Chat_([0-9]+)", path.name)
    return (int(match.group(1)) if match else 0, path.name)


def _convert(agent_id: str, chat: dict[str, Any], totals: dict[str, int]) -> Group:
    first_speaker = str(chat["name"]["speaker_1"])
    files: dict[str, str] = {}
    where: dict[str, tuple[str, int]] = {}
    sessions = sorted((int(m.group(1)), v) for k, v in chat.items() if (m := _SESSION_KEY.fullmatch(k)))
    for number, turns in sessions:
        rel = f"{SESSIONS_DIR}/session_{number:02d}.jsonl"
        lines = []
        for line, turn in enumerate(turns, 1):
            where[str(turn["dia_id"])] = (rel, line)
            lines.append(_record(turn, first_speaker))
        files[rel] = "".join(lines)
        totals["sessions"] += 1
        totals["turns"] += len(turns)
    questions: list[Qrel] = []
    for n, qa in enumerate(chat["qa"], 1):
        ids = [i for raw in qa.get("evidence") or () for i in parse_evidence(str(raw))]
        found = frozenset(where[i] for i in ids if i in where)
        totals["questions"] += 1
        totals["unresolved_evidence"] += sum(1 for i in ids if i not in where)
        if not found:
            totals["skipped_no_evidence"] += 1
            continue
        questions.append(Qrel(f"{agent_id}:q{n:04d}", str(qa["question"]), int(qa["category"]), found))
    totals["conversations"] += 1
    return Group(agent_id, files, tuple(questions))


def _record(turn: Mapping[str, Any], first_speaker: str) -> str:
    """One message as an OpenClaw transcript line: `<speaker>: <text>` at the message's own time."""
    at = datetime.strptime(str(turn["date_time"]), _TIME_FORMAT)
    speaker = str(turn["speaker"])
    record = {
        "type": "message",
        "timestamp": at.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "message": {
            "role": "user" if speaker.lower() == first_speaker.lower() else "assistant",
            "content": [{"type": "text", "text": f"{speaker}: {' '.join(str(turn['clean_text']).split())}"}],
        },
    }
    return orjson.dumps(record).decode() + "\n"
