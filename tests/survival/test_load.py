"""Load on the real daemon: many clients, eight agents, files changing and a rebuild running at once.

Fifty socket clients, spread over eight agents, search as fast as the daemon answers while a writer
rewrites notes of one agent and another agent's index is rebuilt from scratch. Every search must
succeed and return only its own agent's notes; afterwards every note's last version is found and
none of its earlier ones (no lost update); the daemon's resident memory is sampled from
/proc/<pid>/status before and after (a second round must not grow it beyond the stated margin).
"""

from __future__ import annotations

import random
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from memoryd.server.sockets import connect_unix
from tests.conftest import write
from tests.integration.daemon_fixture import Daemon, eventually, search
from tests.server.wire import RawClient
from tests.survival.conftest import DaemonFactory

pytestmark = pytest.mark.integration

AGENTS = 8
CLIENTS = 50
NOTES = 150  # per agent
RSS_MARGIN_KIB = 48 * 1024
"""Allowed growth of the daemon's resident memory from the end of one load round to the end of the next."""
WORDS = ("amber", "basalt", "cobalt", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "jasper")


def config(root: Path) -> str:
    tables = "\n".join(f'[agents.a{i}]\nworkspace = "{root}/a{i}"' for i in range(AGENTS))
    return f'[defaults]\nprovider = "none"\n[defaults.sync]\nwatch_debounce_ms = 100\n{tables}\n'


def seed_notes(root: Path) -> None:
    rng = random.Random(8)
    for a in range(AGENTS):
        for n in range(NOTES):
            words = " ".join(rng.choices(WORDS, k=12))
            write(root / f"a{a}" / "memory" / f"n{n:03d}.md", f"# Agent {a} note {n}\n\nagent{a}only {words}\n")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS line")


@dataclass
class Run:
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    rebuilds: int = 0

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    def line(self, title: str) -> str:
        n = len(self.latencies)
        return (
            f"{title}: {n} searches by {CLIENTS} clients over {AGENTS} agents in {self.seconds:.1f} s "
            f"({n / self.seconds:.0f}/s), p50 {self.percentile(0.5):.1f} ms, p99 {self.percentile(0.99):.1f} ms, "
            f"mean {statistics.fmean(self.latencies) * 1000:.1f} ms, errors {len(self.errors)}, "
            f"{self.rebuilds} full rebuilds meanwhile"
        )


async def bound_client(daemon: Daemon, agent: str) -> RawClient:
    client = RawClient(await connect_unix(daemon.socket))
    reply = await client.request("bind", "memoryd/bind", {"agent": agent})
    assert "result" in reply, reply
    await client.initialize()
    return client


async def searcher(daemon: Daemon, index: int, searches: int, run: Run) -> None:
    agent = f"a{index % AGENTS}"
    rng = random.Random(index)
    client = await bound_client(daemon, agent)
    async with client.stream:
        for i in range(searches):
            own = i % 2 == 0
            text = f"agent{agent[1:]}only {rng.choice(WORDS)}" if own else " ".join(rng.choices(WORDS, k=2))
            started = time.perf_counter()
            reply = await client.request(i, "tools/call", {"name": "memory_search", "arguments": {"query": text}})
            run.latencies.append(time.perf_counter() - started)
            problem = _problem(reply, agent)
            if problem:
                run.errors.append(f"{agent} {text!r}: {problem}")


def _problem(reply: dict[str, Any], agent: str) -> str | None:
    result = reply.get("result")
    if not isinstance(result, dict) or result.get("isError"):
        return f"failed: {reply}"
    for hit in result["structuredContent"]["results"]:
        if f"agent{agent[1:]}only" not in hit["snippet"] and f"Agent {agent[1:]} " not in hit["snippet"]:
            return f"another agent's note: {hit['path']} {hit['snippet'][:60]!r}"
    return None


async def writer(root: Path, rounds: int, versions: dict[str, int], stop: anyio.Event) -> None:
    """Rewrite notes of agent a0 with a new version token, fifty times a second, until stopped."""
    rng = random.Random(1)
    for k in range(rounds):
        if stop.is_set():
            return
        note = f"memory/n{rng.randrange(NOTES):03d}.md"
        versions[note] = k
        await anyio.Path(root / "a0" / note).write_text(f"# Agent 0 rewritten\n\nagent0only version{k} of {note}\n")
        await anyio.sleep(0.02)  # pacing of the writer: a person saving notes, not synchronisation


async def rebuilder(daemon: Daemon, run: Run, done: anyio.Event) -> None:
    """Rebuild the written agent's index and another one's, over and over, until the searchers are done."""
    clients = [await bound_client(daemon, agent) for agent in ("a0", "a1")]
    try:
        while not done.is_set():
            for client in clients:
                reply = await client.request(run.rebuilds, "memoryd/sync", {"force": True, "reason": "load-test"})
                result = reply.get("result")
                if not isinstance(result, dict) or not result.get("full") or result.get("error"):
                    run.errors.append(f"rebuild failed: {reply}")
                run.rebuilds += 1
    finally:
        for client in clients:
            await client.stream.aclose()


async def load_round(daemon: Daemon, root: Path, searches: int, versions: dict[str, int]) -> Run:
    run = Run()
    stop = anyio.Event()
    searched = anyio.Event()
    started = time.perf_counter()
    async with anyio.create_task_group() as others:
        others.start_soon(writer, root, 100_000, versions, stop)
        others.start_soon(rebuilder, daemon, run, searched)
        async with anyio.create_task_group() as readers:
            for index in range(CLIENTS):
                readers.start_soon(searcher, daemon, index, searches, run)
        run.seconds = time.perf_counter() - started
        searched.set()
        stop.set()
    return run


def assert_no_lost_update(daemon: Daemon, versions: dict[str, int]) -> None:
    """Every rewritten note is found by its last version's word, and by no earlier one."""

    async def check() -> None:
        for note, version in sorted(versions.items()):
            await eventually(daemon.socket, "a0", f"version{version}", [note])
        final = set(versions.values())
        for k in [k for k in range(max(final)) if k not in final][:50]:
            assert await search(daemon.socket, "a0", f"version{k}") == []

    anyio.run(check)


def load_test(make_daemon: DaemonFactory, tmp_path: Path, searches: int, figures: list[str], title: str) -> None:
    root = tmp_path / "agents"
    seed_notes(root)
    daemon = make_daemon(config(root))
    daemon.start()
    for _ in range(AGENTS):
        daemon.wait_for_line("sync done")
    versions: dict[str, int] = {}
    warm = anyio.run(load_round, daemon, root, max(2, searches // 10), versions)
    assert warm.errors == []
    rss_before = rss_kib(daemon.pid)
    run = anyio.run(load_round, daemon, root, searches, versions)
    rss_after = rss_kib(daemon.pid)
    figures.append(run.line(title))
    figures.append(
        f"{title}: daemon RSS {rss_before / 1024:.0f} MiB after a warm-up round, {rss_after / 1024:.0f} MiB after "
        f"the measured round (margin {RSS_MARGIN_KIB // 1024} MiB)"
    )
    assert run.errors == []
    assert len(run.latencies) == CLIENTS * searches
    assert_no_lost_update(daemon, versions)
    assert rss_after - rss_before <= RSS_MARGIN_KIB
    assert daemon.alive


def test_fifty_clients_over_eight_agents_during_writes_and_a_rebuild(
    make_daemon: DaemonFactory, tmp_path: Path, figures: list[str]
) -> None:
    load_test(make_daemon, tmp_path, 20, figures, "load (fast)")


@pytest.mark.slow
def test_fifty_clients_times_a_thousand_searches(
    make_daemon: DaemonFactory, tmp_path: Path, figures: list[str]
) -> None:
    load_test(make_daemon, tmp_path, 1000, figures, "load (stress)")


BIG_FILES = 10_000
BIG_LINES = 10  # one chunk per line with 32-token chunks and no overlap


@pytest.mark.slow
def test_a_hundred_thousand_chunk_agent_indexes_and_answers(
    make_daemon: DaemonFactory, tmp_path: Path, figures: list[str]
) -> None:
    ws = tmp_path / "big"
    rng = random.Random(100)
    for f in range(BIG_FILES):
        lines = [f"file{f}line{k} " + " ".join(rng.choices(WORDS, k=14)) for k in range(BIG_LINES)]
        write(ws / "memory" / f"d{f // 500:02d}" / f"n{f:05d}.md", "\n".join(lines) + "\n")
    daemon = make_daemon(
        f'[defaults]\nprovider = "none"\n[agents.big]\nworkspace = "{ws}"\nchunking = {{ tokens = 32, overlap = 0 }}\n'
    )
    started = time.perf_counter()
    daemon.start()
    daemon.wait_for_line("sync done", timeout=600)
    indexed_s = time.perf_counter() - started
    chunks = int(anyio.run(status_chunks, daemon))
    rss_start = rss_kib(daemon.pid)

    def search_round(seed: int) -> Run:
        run = Run()

        async def searches() -> None:
            async with anyio.create_task_group() as tg:
                for index in range(20):
                    tg.start_soon(big_searcher, daemon, seed + index, 100, run)

        started = time.perf_counter()
        anyio.run(searches)
        run.seconds = time.perf_counter() - started
        return run

    warm = search_round(0)  # fills the page caches of the read connections
    rss_before = rss_kib(daemon.pid)
    run = search_round(1000)
    rss_after = rss_kib(daemon.pid)
    figures.append(
        f"100k-chunk agent: {chunks} chunks indexed in {indexed_s:.1f} s (daemon start included); "
        f"{len(run.latencies)} searches by 20 clients: p50 {run.percentile(0.5):.1f} ms, "
        f"p99 {run.percentile(0.99):.1f} ms, errors {len(run.errors)}; RSS {rss_start / 1024:.0f} MiB indexed, "
        f"{rss_before / 1024:.0f} MiB after a warm-up round, {rss_after / 1024:.0f} MiB after the measured round"
    )
    assert chunks >= 100_000
    assert warm.errors == run.errors == []
    assert rss_after - rss_before <= RSS_MARGIN_KIB


async def status_chunks(daemon: Daemon) -> int:
    client = RawClient(await connect_unix(daemon.socket))
    async with client.stream:
        await client.initialize()
        reply = await client.request(1, "tools/call", {"name": "status", "arguments": {}})
    return int(reply["result"]["structuredContent"]["chunks"])


async def big_searcher(daemon: Daemon, index: int, searches: int, run: Run) -> None:
    rng = random.Random(index)
    client = RawClient(await connect_unix(daemon.socket))
    async with client.stream:
        await client.initialize()
        for i in range(searches):
            f, k = rng.randrange(BIG_FILES), rng.randrange(BIG_LINES)
            text = f"file{f}line{k}" if i % 2 == 0 else " ".join(rng.choices(WORDS, k=3))
            started = time.perf_counter()
            reply = await client.request(i, "tools/call", {"name": "memory_search", "arguments": {"query": text}})
            run.latencies.append(time.perf_counter() - started)
            result = reply.get("result")
            if not isinstance(result, dict) or result.get("isError"):
                run.errors.append(f"{text!r}: {reply}")
            elif i % 2 == 0 and [h["path"] for h in result["structuredContent"]["results"]][:1] != [
                f"memory/d{f // 500:02d}/n{f:05d}.md"
            ]:
                run.errors.append(f"{text!r} did not find its file first")
