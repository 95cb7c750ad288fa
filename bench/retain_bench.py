"""Memory outlives its source (issue 24 item 5): N Claude Code transcripts, each with one unique word, are
indexed, then every file is deleted. Each word must still be found (as `retained`) and its transcript read
back: after the sync that sees the deletion, after a restart (a new engine on the same state directory) and
after a forced rebuild. Then `forget --all` is timed and the state directory grepped for every word.

In-process and keyword-only (no model: retention is about text, and the model's speed is measured
elsewhere); the cost of keeping the retention store is the cold index time with `transcripts.retain` on
against off, in the same run.
"""

from __future__ import annotations

import random
import shutil
import time
from pathlib import Path

import anyio
import orjson

from bench.report import table
from bench.transcript_bench import claude_code_turn
from memoryd import config as config_mod
from memoryd.config import AgentConfig
from memoryd.index.engine import IndexEngine
from memoryd.index.forget import Forget
from memoryd.store.retained import retained_path

LETTERS = "bcdfghjklmnpqrstvwxz"


def word(i: int) -> str:
    """A unique word per session, letters only (one FTS token): `retq` + i in base 20."""
    digits = ""
    while True:
        digits = LETTERS[i % 20] + digits
        i //= 20
        if i == 0:
            return f"retq{digits}zz"


def write_sessions(ws: Path, n: int, turns: int) -> list[str]:
    rng = random.Random(24)
    paths: list[str] = []
    for s in range(n):
        records: list[dict[str, object]] = []
        for t in range(turns):
            records.extend(claude_code_turn(rng, s * turns + t))
        planted = {**records[0], "message": {"role": "user", "content": f"Decision {word(s)}: ship on Monday."}}
        records.insert(len(records) // 2, planted)
        name = f"{s:05d}-0000-4000-8000-000000000000.jsonl"
        target = ws / "sessions" / "-home-dana-src-app" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
        paths.append(f"sessions/-home-dana-src-app/{name}")
    (ws / "MEMORY.md").write_text("# Memory\n\nThe heron nests by the weir.\n", encoding="utf-8")
    return paths


async def found(engine: IndexEngine, paths: list[str]) -> tuple[int, int]:
    """(searches answering with the session, flagged retained) and how many memory_get read the word back."""
    hits = reads = 0
    for i, path in enumerate(paths):
        resp = await engine.search(word(i), min_score=0, max_results=3)
        hits += any(r.path == path and r.retained for r in resp.results)
        reads += word(i) in engine.read_file(path).text
    return hits, reads


def state_bytes(state: Path) -> int:
    return sum(p.stat().st_size for p in state.rglob("*") if p.is_file())


def occurrences(state: Path, n: int) -> int:
    blobs = [p.read_bytes() for p in state.rglob("*") if p.is_file()]
    return sum(b.count(word(i).encode()) for b in blobs for i in range(n))


async def cold_index(agent: AgentConfig) -> float:
    engine = IndexEngine(agent)
    await engine.open()
    try:
        t0 = time.perf_counter()
        await engine.sync("bench", force=True)
        return time.perf_counter() - t0
    finally:
        await engine.aclose()


async def run(out: Path, n: int, turns: int) -> None:
    root = out / "retain"
    shutil.rmtree(root, ignore_errors=True)
    ws = root / "ws"
    paths = write_sessions(ws, n, turns)
    jsonl_mb = sum(p.stat().st_size for p in (ws / "sessions").rglob("*.jsonl")) / 1e6
    off = config_mod.build(
        {"agents": {"off": {"workspace": str(ws), "transcripts": {"retain": False}}}}, state_dir=root / "s-off"
    )
    off_s = await cold_index(off.agent("off"))
    state = root / "state"
    agent = config_mod.build({"agents": {"main": {"workspace": str(ws)}}}, state_dir=state).agent("main")
    on_s = await cold_index(agent)
    store_mb = retained_path(agent.db_path).stat().st_size / 1e6
    shutil.rmtree(ws / "sessions")
    rows: list[list[object]] = []
    engine = IndexEngine(agent)
    await engine.open()
    try:
        t0 = time.perf_counter()
        await engine.sync("deleted")
        took = time.perf_counter() - t0
        rows.append(["after the sync that sees the deletion", *await found(engine, paths), took])
    finally:
        await engine.aclose()
    engine = IndexEngine(agent)
    t0 = time.perf_counter()
    await engine.open()
    try:
        await engine.sync("start")
        took = time.perf_counter() - t0
        rows.append(["after a restart (new engine, start sync)", *await found(engine, paths), took])
        t0 = time.perf_counter()
        await engine.sync("forced", force=True)
        rebuild_s = time.perf_counter() - t0
        rows.append(["after a forced rebuild (new database)", *await found(engine, paths), rebuild_s])
        before = state_bytes(state)
        planted_before = occurrences(state, n)
        t0 = time.perf_counter()
        report = await engine.forget(Forget(all=True))
        forget_s = time.perf_counter() - t0
        after = state_bytes(state)
        left = occurrences(state, n)
        heron = [r.path for r in (await engine.search("heron weir", min_score=0)).results]
    finally:
        await engine.aclose()
    table(
        f"Deleted transcripts kept ({n} Claude Code sessions x {turns} turns, {jsonl_mb:.1f} MB JSONL, keyword-only)",
        ["when", "found retained", "read back", "sync s"],
        [[w, f"{h}/{n}", f"{r}/{n}", s] for w, h, r, s in rows],
    )
    forgotten = len(report["forgotten"]) if isinstance(report["forgotten"], list) else 0
    table(
        "Cost and forget",
        ["measure", "value"],
        [
            ["cold index, retain off, s", off_s],
            ["cold index, retain on, s", on_s],
            ["retention store, MB", store_mb],
            ["forget --all: transcripts", forgotten],
            ["forget --all, s", forget_s],
            ["state directory before / after forget, MB", f"{before / 1e6:.2f} / {after / 1e6:.2f}"],
            ["planted words in state files before / after", f"{planted_before} / {left}"],
            ["notes still found after forget", "yes" if heron == ["MEMORY.md"] else f"NO: {heron}"],
        ],
    )


def main(out: Path, quick: bool) -> None:
    anyio.run(run, out, 50 if quick else 500, 10 if quick else 20)
