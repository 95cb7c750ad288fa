"""`memoryd eval --hooks`: every question replayed as a prompt through the real `memoryd hook` command.

For each set, one real daemon (`memoryd serve` in a private state directory) serves the set's indexes
as its agents: the config names each group's workspace and points `store.path` at the database the
harness built, so nothing is indexed or embedded again (the daemon's first sync finds every file
unchanged). Then each question is a `UserPromptSubmit` call of `memoryd hook claude-code` with the JSON
Claude Code documents on stdin, in a fresh session each (so none is left out as already shown), its
stdout read as the host reads it (`memoryd.eval.hookreplay`). Answerable questions score the evidence
lines the block cites; the next group's questions and a sample of the other sets' score whether nothing
was injected, beside whether the same daemon's memory_search answered "No matches." for each.

The hook's `[hooks]` table is the defaults but for `timeout_ms` (a loaded machine must not turn a slow
answer into "nothing injected": the figure is about what is injected; `make bench` times the hook).
"""

from __future__ import annotations

import collections
import functools
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from mcp.client import Client

from memoryd.errors import MemorydError
from memoryd.eval import abstain
from memoryd.eval.dataset import EvalSet, Qrel
from memoryd.eval.harness import DEFAULT, HOOKS, EvalReport, Mode
from memoryd.eval.hookreplay import HookReplay, Quiet, cited_spans, evidence_share, read_output
from memoryd.eval.metrics import Span, recall_at
from memoryd.server.client import request_sync, unix_client

PROBES = 50
"""Questions of the next index, and of the other sets, replayed per index (each is a process start)."""
JOBS = 2
"""Hook processes at a time."""
HOOK_TIMEOUT_MS = 60_000
READY_S = 300.0
"""How long the daemon may take to come up and have its model ready (a loaded machine, a cold model)."""
SERVE = (sys.executable, "-m", "memoryd")


def _toml(value: str) -> str:
    return json.dumps(value)  # a JSON string is a TOML basic string


def daemon_config(eval_set: EvalSet, root: Path, provider: str) -> str:
    """The daemon's config: the set's groups as agents on the harness's own workspaces and databases."""
    lines = [
        "[defaults]",
        f"provider = {_toml(provider)}",
        "[defaults.store]",
        f"path = {_toml(str(root / 'state' / 'agents' / '{agentId}' / 'index.sqlite'))}",
        "quick_check = false",
        "[hooks]",
        f"timeout_ms = {HOOK_TIMEOUT_MS}",
    ]
    for group in eval_set.groups:
        lines += [f"[agents.{_toml(group.agent_id)}]", f"workspace = {_toml(str(root / group.agent_id))}"]
    return "\n".join(lines) + "\n"


@dataclass
class _Served:
    """A daemon started for the replay, its log drained by a thread (a pipe nobody reads blocks it)."""

    proc: subprocess.Popen[str]
    socket: Path
    state: Path
    config: Path
    ready: threading.Event
    tail: collections.deque[str]

    def drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.tail.append(line)
            if "memoryd ready" in line:
                self.ready.set()
        self.ready.set()  # the daemon is gone: whoever waits learns it at once

    def failed(self, why: str) -> MemorydError:
        log = "".join(self.tail)[-4000:]
        return MemorydError(f"eval --hooks: the daemon {why}; its log ends:\n{log}")


@asynccontextmanager
async def serving(eval_set: EvalSet, root: Path, provider: str) -> AsyncIterator[_Served]:
    """A daemon serving the set's indexes, up, synced and (with a provider) with its model ready."""
    with tempfile.TemporaryDirectory(prefix="memoryd-hooks-") as tmp:
        base = Path(tmp)
        config = base / "config.toml"
        config.write_text(daemon_config(eval_set, root, provider), encoding="utf-8")
        state, sock = base / "state", base / "memoryd.sock"
        served = await anyio.to_thread.run_sync(_start, config, state, sock)
        pump = threading.Thread(target=served.drain, name="eval-daemon-log", daemon=True)
        pump.start()
        proc = served.proc
        try:
            if not await anyio.to_thread.run_sync(served.ready.wait, READY_S) or proc.poll() is not None:
                raise served.failed("did not come up")
            for group in eval_set.groups:
                await _settle(served, group.agent_id, hybrid=provider != "none")
            yield served
        finally:
            await anyio.to_thread.run_sync(_stop, proc)
            pump.join(10)
            if proc.stderr is not None:
                proc.stderr.close()


def _start(config: Path, state: Path, sock: Path) -> _Served:
    command = [*SERVE, "serve", "--config", str(config), "--state-dir", str(state), "--socket", str(sock)]
    proc = subprocess.Popen(  # noqa: S603 - our own interpreter and module
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
    )
    return _Served(proc, sock, state, config, threading.Event(), collections.deque(maxlen=60))


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def _settle(served: _Served, agent: str, *, hybrid: bool) -> None:
    """Sync the agent now (a no-op on the harness's up-to-date index) and wait for an idle index with every
    vector in and the model loaded, so no answer comes keyword-only while it loads."""
    await request_sync(served.socket, agent, force=False, reason="eval")
    with anyio.move_on_after(READY_S) as waited:
        async with Client(unix_client(served.socket, agent)) as client:
            while True:
                status = (await client.call_tool("status", {})).structured_content or {}
                embedding = status.get("embedding") or {}
                idle = (status.get("progress") or {}).get("phase") == "idle" and status.get("files", 0) > 0
                vectors = not hybrid or (embedding.get("state") == "ready" and not embedding.get("filesWithoutVectors"))
                if (idle and vectors) or served.proc.poll() is not None:
                    break
                await anyio.sleep(0.2)  # the model loads in the background; the deadline above bounds the wait
    if waited.cancelled_caught or served.proc.poll() is not None:
        raise served.failed(f"did not settle for agent {agent}")


@dataclass(frozen=True, slots=True)
class _Call:
    """One replayed prompt: what the host would add, the spans it cites, and the hook's time."""

    context: str
    spans: list[Span]
    fault: str
    ms: float


def hook_input(question: str, cwd: Path, base: Path) -> tuple[str, bytes]:
    """A fresh session's UserPromptSubmit input, with the fields Claude Code documents."""
    session = str(uuid.uuid4())
    folder = re.sub(r"[^A-Za-z0-9]", "-", os.path.normpath(cwd))  # Claude Code's name for the project's folder
    transcript = base / "claude" / "projects" / folder / f"{session}.jsonl"
    data = {
        "session_id": session,
        "transcript_path": str(transcript),
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": question,
    }
    return session, json.dumps(data).encode()


def call_hook(served: _Served, agent: str, question: str, cwd: Path) -> _Call:
    """`memoryd hook claude-code UserPromptSubmit` for `question`, as the host runs it."""
    _session, stdin = hook_input(question, cwd, served.state.parent)
    command = [*SERVE, "hook", "claude-code", "UserPromptSubmit", "--agent", agent, "--config", str(served.config)]
    command += ["--state-dir", str(served.state), "--socket", str(served.socket)]
    started = time.perf_counter()
    limit = HOOK_TIMEOUT_MS / 1000 + 60
    done = subprocess.run(command, input=stdin, capture_output=True, timeout=limit, check=False)  # noqa: S603 - ours
    ms = (time.perf_counter() - started) * 1000
    reading = read_output(done.returncode, done.stdout.decode("utf-8", "replace"))
    return _Call(reading.context, cited_spans(reading.context), reading.fault, ms)


async def served_spans(client: Client, question: str) -> list[Span]:
    """The daemon's own memory_search answer for `question` as the hook asks it (corpus all), top 10."""
    result = await client.call_tool("memory_search", {"query": question, "corpus": "all", "maxResults": 10})
    if result.is_error:
        raise MemorydError(f"eval --hooks: memory_search failed on the daemon: {result.content}")
    data: Any = result.structured_content or {}
    return [
        Span(str(r["path"]), int(r.get("startLine") or 0), int(r.get("endLine") or 0))
        for r in data.get("results", [])
        if isinstance(r, dict) and "path" in r
    ]


@dataclass(slots=True)
class _Tally:
    evidence: list[float] = field(default_factory=list)
    served: list[float] = field(default_factory=list)
    cited_any: int = 0
    injected: int = 0
    largest: int = 0
    over: int = 0
    faults: int = 0
    same: tuple[int, int, int] = (0, 0, 0)
    other: tuple[int, int, int] = (0, 0, 0)
    ms: list[float] = field(default_factory=list)

    first_fault: str = ""

    def call(self, c: _Call) -> None:
        self.first_fault = self.first_fault or c.fault
        self.largest = max(self.largest, len(c.context))
        self.over += len(c.context) > HOOKS.max_chars
        self.faults += bool(c.fault)
        self.ms.append(c.ms)


def _quiet(counts: tuple[int, int, int], calls: Sequence[_Call], empties: Sequence[bool]) -> tuple[int, int, int]:
    asked, quiet, empty = counts
    return asked + len(calls), quiet + sum(not c.context for c in calls), empty + sum(empties)


async def replay_set(
    eval_set: EvalSet, sets: Sequence[EvalSet], root: Path, provider: str, *, probes: int = PROBES
) -> HookReplay:
    """Every answerable question of the set, and up to `probes` questions of the next index and of the
    other sets per index, through the real hook command against one daemon serving the set's indexes."""
    groups = eval_set.groups
    others = abstain.other_questions(sets, eval_set.name, probes)
    t = _Tally()
    async with serving(eval_set, root, provider) as served:
        cwd = served.state.parent / "project"
        cwd.mkdir()
        for index, group in enumerate(groups):
            agent = group.agent_id
            same: Sequence[Qrel] = groups[(index + 1) % len(groups)].questions[:probes] if len(groups) > 1 else ()
            asked = [q.question for q in group.questions] + [q.question for q in same] + [p.question for p in others]
            calls = await anyio.to_thread.run_sync(_call_all, served, agent, asked, cwd)
            async with Client(unix_client(served.socket, agent)) as client:
                answers = [await served_spans(client, text) for text in asked]
            for c in calls:
                t.call(c)
            n = len(group.questions)
            for q, c, answer in zip(group.questions, calls[:n], answers[:n], strict=True):
                share = evidence_share(c.spans, q.lines)
                t.evidence.append(share)
                t.served.append(recall_at(answer, q.lines, 5))
                t.cited_any += share > 0
                t.injected += bool(c.context)
            m = n + len(same)
            t.same = _quiet(t.same, calls[n:m], [not a for a in answers[n:m]])
            t.other = _quiet(t.other, calls[m:], [not a for a in answers[m:]])
        logged = _log_lines(served.state / "hooks.log")
        t.faults += len(logged)
        t.first_fault = t.first_fault or next(iter(logged), "")
    count = len(t.evidence)
    return HookReplay(
        n=count,
        evidence=sum(t.evidence) / count if count else 0.0,
        served=sum(t.served) / count if count else 0.0,
        cited_any=t.cited_any,
        injected=t.injected,
        max_chars=HOOKS.max_chars,
        largest=t.largest,
        over_budget=t.over,
        same_set=Quiet(*t.same) if t.same[0] else None,
        other_sets=Quiet(*t.other) if t.other[0] else None,
        faults=t.faults,
        first_fault=t.first_fault,
        latency_ms=tuple(t.ms),
    )


def _call_all(served: _Served, agent: str, asked: Sequence[str], cwd: Path) -> list[_Call]:
    with ThreadPoolExecutor(JOBS) as pool:
        return list(pool.map(functools.partial(call_hook, served, agent, cwd=cwd), asked))


def _log_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return []


def replay_mode(modes: Sequence[Mode]) -> Mode:
    """The mode a daemon serves, among those asked for: hybrid with an embedding provider, else keyword."""
    for mode in ("hybrid", "keyword"):
        if mode in modes:
            return mode
    raise MemorydError("eval --hooks replays what a daemon serves: hybrid or keyword (add one to --mode)")


async def replay_all(
    sets: Sequence[EvalSet], results: Mapping[str, Mapping[tuple[str, Mode], EvalReport]], work_dir: Path, mode: Mode
) -> dict[str, dict[tuple[str, Mode], EvalReport]]:
    """The results with each set's replay in its report of `mode` at the default settings."""
    out = {name: dict(by_key) for name, by_key in results.items()}
    for s in sets:
        report = out[s.name][(DEFAULT.name, mode)]
        provider = str(report.settings.get("provider", "none")) if mode == "hybrid" else "none"
        replay = await replay_set(s, sets, work_dir / s.name, provider)
        out[s.name][(DEFAULT.name, mode)] = replace(report, hooks=replay)
    return out
