"""Issue 3's figures: the local model's raw rate vs memoryd's end-to-end indexing rate with it,
query-embedding latency, and how soon a restarted daemon answers while its model is still loading."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client

from bench.corpus import CorpusSpec, Writer, write_corpus
from bench.report import percentile, table
from memoryd import config as config_mod
from memoryd.embeddings.local import LocalEmbeddingProvider
from memoryd.index.engine import IndexEngine
from memoryd.server.client import unix_client
from memoryd.sources.chunking import chunk_markdown


async def _raw_rate(provider: LocalEmbeddingProvider, texts: list[str]) -> float:
    await provider.embed_documents(texts[:4])  # warm
    t0 = time.perf_counter()
    await provider.embed_documents(texts)
    return len(texts) / (time.perf_counter() - t0)


async def model_rates(out: Path, quick: bool) -> None:
    cache = out / "cache" / "models"
    provider = LocalEmbeddingProvider(cache)
    t0 = time.perf_counter()
    await provider.load()
    load_s = time.perf_counter() - t0
    w = Writer(CorpusSpec(seed=21))
    n = 60 if quick else 300
    short = [" ".join(w.sentence(30) for _ in range(6))[:1000] for _ in range(n)]  # ~256 MiniLM tokens
    long = [" ".join(w.sentence(30) for _ in range(12))[:2000] for _ in range(n)]  # ~512 tokens (truncated at 256)
    r256 = await _raw_rate(provider, short)
    r512 = await _raw_rate(provider, long)
    queries = [w.query() for _ in range(100)]
    lat = []
    for q in queries:
        t0 = time.perf_counter()
        await provider.embed_query(q)
        lat.append((time.perf_counter() - t0) * 1000)

    # End to end: memoryd's pipeline (discover, read, chunk, embed, write) on notes whose chunks are
    # embedded raw first, from the same texts, with the embedding cache off so every chunk is embedded.
    spec = CorpusSpec(notes=40 if quick else 150, transcripts=0, seed=22)
    ws = write_corpus(out / "corpus-embed", spec)
    texts = [c.text for p in sorted((ws / "memory").rglob("*.md")) for c in chunk_markdown(p.read_text(), 400, 80)]
    raw_same = await _raw_rate(provider, texts)
    state = out / "state-embed"
    shutil.rmtree(state, ignore_errors=True)
    data = {"defaults": {"provider": "local", "cache": {"enabled": False}}}
    agent = config_mod.build(data, workspace=ws, state_dir=state).agent(None)
    engine = IndexEngine(agent, provider)
    await engine.open()
    try:
        t0 = time.perf_counter()
        report = await engine.sync("bench", force=True)
        e2e_s = time.perf_counter() - t0
    finally:
        engine.close()
    e2e = report.counts.chunks / e2e_s
    await provider.aclose()
    table(
        f"Local embedding model ({provider.model}, {provider.threads} threads)",
        ["measure", "value", "target"],
        [
            ["model load (first use: quantise to int8), s", load_s, ""],
            ["raw rate, ~256-token chunks, chunks/s", r256, ""],
            ["raw rate, ~512-token chunks (model reads 256), chunks/s", r512, ""],
            [f"raw rate on the corpus' own {len(texts)} chunks, chunks/s", raw_same, ""],
            ["memoryd end-to-end index with the model, chunks/s", e2e, ""],
            ["end-to-end / raw", f"{e2e / raw_same:.0%}", ">= 90%"],
            ["query embedding p50 / p99, ms", f"{percentile(lat, 0.5):.2f} / {percentile(lat, 0.99):.2f}", ""],
        ],
    )


async def first_answer_while_loading(out: Path) -> None:
    """Restart a daemon whose model must be prepared again; time the first search answer vs model ready."""
    root = out / "daemon-embed"
    shutil.rmtree(root, ignore_errors=True)
    ws = write_corpus(out / "corpus-embed", CorpusSpec(notes=40, transcripts=0, seed=22))
    config = root / "config.toml"
    root.mkdir(parents=True)
    config.write_text(f'[agents.main]\nworkspace = "{ws}"\n[agents.main.sync]\nwatch = false\n')
    sock = root.absolute() / "run" / "memoryd.sock"  # a private directory the daemon creates 0700
    env = {**os.environ, "XDG_CACHE_HOME": str(root / "cache")}
    cmd = [
        sys.executable,
        "-m",
        "memoryd",
        "serve",
        "--config",
        str(config),
        "--state-dir",
        str(root / "state"),
        "--socket",
        str(sock),
    ]

    async def status() -> dict[str, Any] | None:
        try:
            async with Client(unix_client(sock, "main")) as c:
                r = await c.call_tool("status", {})
        except Exception:
            return None  # not up yet
        data: dict[str, Any] | None = r.structured_content
        return data

    async def wait(pred: Any, deadline_s: float = 600) -> float:
        t0 = time.perf_counter()
        with anyio.fail_after(deadline_s):
            while not await pred():
                await anyio.sleep(0.02)
        return time.perf_counter() - t0

    async def built() -> bool:
        st = await status()
        return bool(st and st["lastSync"] and st["embedding"]["state"] == "ready")

    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        await wait(built)
    finally:
        proc.terminate()
        proc.wait(60)
    shutil.rmtree(root / "cache" / "memoryd" / "models", ignore_errors=True)  # the model must be prepared again

    async def answers() -> bool:
        try:
            async with Client(unix_client(sock, "main")) as c:
                r = await c.call_tool("memory_search", {"query": "note"})
            data: Any = r.structured_content
            return bool(data and data["results"])
        except Exception:
            return False

    async def ready() -> bool:
        st = await status()
        return bool(st and st["embedding"]["state"] == "ready")

    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        await wait(answers)
        first = time.perf_counter() - t0
        await wait(ready)
        model = time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(60)
    table(
        "Daemon restart with the model to prepare again",
        ["measure", "seconds"],
        [
            ["start -> first search answer (keyword while the model loads)", first],
            ["start -> model ready (hybrid from here on)", model],
        ],
    )


def main(out: Path, quick: bool) -> None:
    anyio.run(model_rates, out, quick)
    anyio.run(first_answer_while_loading, out)
