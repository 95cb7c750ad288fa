"""Issue 2's figures: cold keyword-only index, no-change resync, database size, keyword search latency."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import anyio
import numpy as np

from bench.corpus import CorpusSpec, Writer, write_corpus
from bench.report import percentile, table
from memoryd import config as config_mod
from memoryd.index.engine import IndexEngine


async def run(out: Path, spec: CorpusSpec, queries: int = 200) -> dict[str, float]:
    t0 = time.perf_counter()
    ws = write_corpus(out / "corpus", spec)
    gen_s = time.perf_counter() - t0
    state = out / "state-index"
    shutil.rmtree(state, ignore_errors=True)
    agent = config_mod.build({}, workspace=ws, state_dir=state).agent(None)
    engine = IndexEngine(agent)
    await engine.open()
    try:
        t0 = time.perf_counter()
        cold = await engine.sync("bench", force=True)
        cold_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        warm = await engine.sync("bench")
        resync_s = time.perf_counter() - t0
        status = engine.status()
        files, chunks = int(str(status["files"])), int(str(status["chunks"]))
        db_mb = int(str(status["dbSizeBytes"])) / 1e6
        w = Writer(CorpusSpec(seed=spec.seed + 1, vocabulary=spec.vocabulary))
        natural = [w.query() for _ in range(queries)]
        words = [str(x) for x in w.words[w.rng.choice(len(w.words), size=queries * 2, p=w.p)]]
        pairs = [f"{words[2 * i]} {words[2 * i + 1]}" for i in range(queries)]
        lat_nat = await _latencies(engine, natural)
        lat_pair = await _latencies(engine, pairs)
    finally:
        engine.close()
    if cold.counts.indexed != files or warm.counts.indexed != 0:
        raise RuntimeError(f"unexpected sync counts: cold {cold.counts}, warm {warm.counts}")
    corpus = f"{spec.notes:,} notes + {spec.transcripts:,} transcripts; corpus written in {gen_s:.1f} s"
    table(
        f"Indexing, keyword-only ({corpus})",
        ["measure", "value", "target"],
        [
            ["files", files, ""],
            ["chunks", chunks, ""],
            ["cold full index, s", cold_s, ""],
            ["cold index, files/s", files / cold_s, ""],
            ["cold index, chunks/s", chunks / cold_s, ">= 5,000"],
            ["no-change resync, s", resync_s, "<= 2"],
            ["database size, MB", db_mb, ""],
        ],
    )
    table(
        f"Keyword search latency at {chunks:,} chunks ({queries} queries each, in-process)",
        ["query kind", "p50 ms", "p99 ms", "target p50"],
        [
            ["natural question (AND, then per keyword)", percentile(lat_nat, 0.5), percentile(lat_nat, 0.99), "<= 5"],
            ["two words", percentile(lat_pair, 0.5), percentile(lat_pair, 0.99), "<= 5"],
        ],
    )
    return {"chunks_per_s": chunks / cold_s, "resync_s": resync_s, "search_p50_ms": percentile(lat_nat, 0.5)}


async def _latencies(engine: IndexEngine, queries: list[str]) -> list[float]:
    await engine.search(queries[0])  # warm the reader pool and page cache
    out: list[float] = []
    for q in queries:
        t0 = time.perf_counter()
        await engine.search(q)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main(out: Path, spec: CorpusSpec) -> None:
    np.random.seed(spec.seed)
    anyio.run(run, out, spec)
