"""A synthetic Claude Code history (issue 24, item 6): `~/.claude/projects/<project>/<session>.jsonl`.

`python -m bench.history_gen DIR [--sessions N] [--mb M] [--seed S]` writes it under DIR (DIR is the HOME a
daemon is given). Seeded, so a size and seed always give the same bytes. The record mix is a coding
session's: most bytes are long tool results (file reads, test output) and pasted images, a small share is
what the person and the model said. Sessions have sub-agent sidechains, thinking blocks, `summary`
records, compaction summaries ("This session is being continued…"), hook progress and file-history
snapshots, and their sizes are skewed (a few long sessions, many short ones) as real histories are.
Every session holds one word no other holds (`session_word(n)`), and the files' mtimes follow their
order, the last one newest, so a benchmark can ask for a word of the newest session and of the oldest.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import os
import random
import uuid
from dataclasses import dataclass
from pathlib import Path

import orjson

WORDS = [
    "cache",
    "test",
    "login",
    "session",
    "fixture",
    "expires",
    "deploy",
    "branch",
    "merge",
    "config",
    "schema",
    "index",
    "query",
    "tile",
    "zoom",
    "evict",
    "insert",
    "lookup",
    "retry",
    "backoff",
    "token",
    "budget",
    "user",
    "agent",
    "model",
    "reply",
    "file",
    "path",
    "line",
    "column",
    "error",
    "parser",
    "lexer",
    "router",
    "handler",
    "migration",
    "rollback",
    "webhook",
    "invoice",
    "tenant",
    "quota",
    "shard",
    "replica",
    "snapshot",
    "cursor",
    "pagination",
    "throttle",
    "debounce",
    "watcher",
    "socket",
    "daemon",
    "thread",
    "mutex",
    "deadlock",
    "timeout",
    "payload",
    "header",
]
PROJECTS = ("-home-dana-src-webshop", "-home-dana-src-tiler", "-home-dana-src-billing", "-home-dana-notes")
START_S = 1_767_225_600  # 2026-01-01T00:00:00Z: the first session's time; one session every ~3 hours after


def session_word(n: int) -> str:
    """The word only session `n` holds (in what its user said, so it is indexed)."""
    return f"zq{n}x{(n * 7919) % 9973}w"


@dataclass(frozen=True, slots=True)
class History:
    root: Path
    files: list[Path]  # in session order: files[-1] is the newest
    bytes: int


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def _tool_output(rng: random.Random, lines: int) -> str:
    return "\n".join(f"{n:6}\u2192{_sentence(rng, rng.randint(4, 14))}" for n in range(lines))


def _stamp(seconds: float) -> str:
    whole = int(seconds)
    moment = datetime.datetime.fromtimestamp(whole, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{int((seconds - whole) * 1000):03d}Z"


class _Session:
    """One session's records, written as they come (never the whole file in memory)."""

    def __init__(self, rng: random.Random, n: int, start_s: float) -> None:
        self.rng = rng
        self.n = n
        self.id = str(uuid.UUID(int=rng.getrandbits(128)))
        self.t = start_s
        self.parent: str | None = None
        self.i = 0

    def _base(self, kind: str, *, sidechain: bool = False) -> dict[str, object]:
        self.i += 1
        self.t += self.rng.uniform(0.5, 40)
        uid = f"{self.id[:8]}-{self.i:06d}"
        record: dict[str, object] = {
            "parentUuid": self.parent,
            "isSidechain": sidechain,
            "userType": "external",
            "cwd": "/home/dana/src/webshop",
            "sessionId": self.id,
            "version": "2.0.14",
            "gitBranch": "main",
            "type": kind,
            "uuid": uid,
            "timestamp": _stamp(self.t),
        }
        self.parent = uid
        return record

    def user(self, text: str, *, sidechain: bool = False) -> dict[str, object]:
        return {**self._base("user", sidechain=sidechain), "message": {"role": "user", "content": text}}

    def assistant(self, blocks: list[dict[str, object]], *, sidechain: bool = False) -> dict[str, object]:
        meta = {
            "id": f"msg_{self.id[:8]}{self.i}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
        }
        record = self._base("assistant", sidechain=sidechain)
        return {**record, "requestId": f"req_{self.i}", "message": {**meta, "content": blocks}}

    def tool_result(self, tool_id: str, content: object, *, sidechain: bool = False) -> dict[str, object]:
        block = {"type": "tool_result", "tool_use_id": tool_id, "content": content}
        record = self._base("user", sidechain=sidechain)
        return {**record, "message": {"role": "user", "content": [block]}, "toolUseResult": {"type": "text"}}

    def turn(self, *, first: bool) -> list[dict[str, object]]:
        """One exchange: the person asks, the model thinks, answers, calls a tool, reads its long result."""
        rng = self.rng
        ask = " ".join(_sentence(rng, rng.randint(8, 20)) for _ in range(rng.randint(1, 4)))
        if first or rng.random() < 0.2:
            ask += f" Ticket {session_word(self.n)} is the one."
        out = [self.user(ask)]
        out.append(self.assistant([{"type": "thinking", "thinking": _sentence(rng, rng.randint(40, 400))}]))
        out.append(self.assistant([{"type": "text", "text": _sentence(rng, rng.randint(20, 120))}]))
        tool = f"toolu_{self.id[:6]}{self.i}"
        out.append(self.assistant([{"type": "tool_use", "id": tool, "name": "Read", "input": {"file_path": "x.py"}}]))
        lines = int(rng.lognormvariate(4.5, 1.0))  # median ~90 lines, a long tail of multi-thousand-line reads
        out.append(self.tool_result(tool, _tool_output(rng, min(lines, 6000))))
        progress = {**self._base("progress"), "data": {"type": "hook_progress", "hookEvent": "PostToolUse"}}
        out.append(progress)
        out.append({"type": "file-history-snapshot", "messageId": self.parent, "snapshot": {"trackedFileBackups": {}}})
        roll = rng.random()
        if roll < 0.08:  # a pasted screenshot
            data = base64.b64encode(rng.randbytes(rng.randint(20_000, 120_000))).decode()
            image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
            record = self._base("user")
            out.append({**record, "message": {"role": "user", "content": [image, {"type": "text", "text": ask}]}})
        elif roll < 0.16:  # a sub-agent's sidechain
            out.append(self.user(_sentence(rng, 30), sidechain=True))
            out.append(self.assistant([{"type": "text", "text": _sentence(rng, 60)}], sidechain=True))
            sub = f"toolu_s{self.id[:6]}{self.i}"
            out.append(self.assistant([{"type": "tool_use", "id": sub, "name": "Grep", "input": {}}], sidechain=True))
            out.append(self.tool_result(sub, _tool_output(rng, rng.randint(20, 400)), sidechain=True))
        elif roll < 0.19:  # compaction: the summary Claude Code injects as the user
            summary = "This session is being continued from a previous conversation that ran out of context. "
            record = self.user(summary + " ".join(_sentence(rng, 30) for _ in range(20)))
            out.append({**record, "isCompactSummary": True})
            out.append({"type": "summary", "summary": _sentence(rng, 8), "leafUuid": self.parent})
        return out


def generate(root: Path, *, sessions: int, total_mb: float, seed: int = 24) -> History:
    """Write `sessions` sessions of about `total_mb` MB in all under `root/.claude/projects`."""
    rng = random.Random(seed)
    weights = [rng.lognormvariate(0, 1.0) for _ in range(sessions)]
    scale = total_mb * 1e6 / sum(weights)
    files: list[Path] = []
    written = 0
    for n in range(sessions):
        target = max(20_000, int(weights[n] * scale))
        folder = root / ".claude" / "projects" / PROJECTS[n % len(PROJECTS)]
        folder.mkdir(parents=True, exist_ok=True)
        session = _Session(rng, n, START_S + n * 10_800)
        path = folder / f"{session.id}.jsonl"
        size = 0
        with path.open("wb") as out:
            first = True
            while size < target:
                for record in session.turn(first=first):
                    line = orjson.dumps(record) + b"\n"
                    out.write(line)
                    size += len(line)
                first = False
        moment = START_S + n * 10_800 + 3_600
        os.utime(path, (moment, moment))
        files.append(path)
        written += size
    return History(root, files, written)


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.history_gen")
    parser.add_argument("home", type=Path)
    parser.add_argument("--sessions", type=int, default=500)
    parser.add_argument("--mb", type=float, default=300)
    parser.add_argument("--seed", type=int, default=24)
    args = parser.parse_args()
    history = generate(args.home, sessions=args.sessions, total_mb=args.mb, seed=args.seed)
    print(f"{len(history.files)} sessions, {history.bytes / 1e6:.1f} MB under {history.root / '.claude'}")


if __name__ == "__main__":
    main()
