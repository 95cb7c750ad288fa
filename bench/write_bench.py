"""Issue 15's figure, on a real `memoryd serve` subprocess: memory_write -> searchable.

One client saves an entry with a unique word (memory_write to the daily note); the moment its reply
arrives, a second connection searches for the word once, without `waitFresh`. The reply latency is the
write's own cost (check, locked append, fsync, the targeted sync of that one file); write -> hit adds
the one search. A search that does not find the entry counts as a miss (the contract says none).
Then 10 clients write at once, to see what the folder lock and the coalesced syncs cost under contention.
The corpus (notes and transcripts) is indexed first, so each write's sync runs against a real index.
"""

from __future__ import annotations

import os
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client

from bench.corpus import CorpusSpec, write_corpus
from bench.daemon_bench import Daemon
from bench.report import percentile, table
from memoryd.server.client import unix_client

CONCURRENT_CLIENTS = 10


async def write_then_search(d: Daemon, n: int) -> tuple[list[float], list[float], int]:
    """(reply ms, write -> hit ms, misses) over `n` writes, one at a time."""
    replies: list[float] = []
    hits: list[float] = []
    misses = 0
    async with Client(unix_client(d.socket, "main")) as writer, Client(unix_client(d.socket, "main")) as reader:
        for i in range(n):
            token = f"zqw{os.getpid()}{time.monotonic_ns()}k{i}"
            t0 = time.perf_counter()
            reply = await writer.call_tool("memory_write", {"text": f"We settled the {token} question today."})
            t1 = time.perf_counter()
            saved: Any = reply.structured_content
            assert not reply.is_error, reply.content
            assert saved, "memory_write sent no structured result"
            found: Any = (await reader.call_tool("memory_search", {"query": token, "minScore": 0})).structured_content
            t2 = time.perf_counter()
            if not any(r["path"] == saved["path"] and token in r["snippet"] for r in found["results"]):
                misses += 1
            replies.append((t1 - t0) * 1000)
            hits.append((t2 - t0) * 1000)
    return replies, hits, misses


async def concurrent_writes(d: Daemon, per_client: int) -> tuple[list[float], float]:
    """Reply latencies of CONCURRENT_CLIENTS clients writing `per_client` entries each at once; writes/s."""
    latencies: list[float] = []

    async def one(c: int) -> None:
        async with Client(unix_client(d.socket, "main")) as client:
            for k in range(per_client):
                t0 = time.perf_counter()
                arguments = {"text": f"Client {c} noted item {k}.", "heading": "Log"}
                reply = await client.call_tool("memory_write", arguments)
                assert not reply.is_error, reply.content
                latencies.append((time.perf_counter() - t0) * 1000)

    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for c in range(CONCURRENT_CLIENTS):
            tg.start_soon(one, c)
    return latencies, len(latencies) / (time.perf_counter() - t0)


async def run(out: Path, quick: bool) -> None:
    # A write syncs one file: the corpus is there so that sync runs against a real index, not to be large
    # (the local model's first full index of it is what the hybrid run waits for).
    spec = CorpusSpec(notes=50 if quick else 300, transcripts=5 if quick else 30, seed=31)
    ws = write_corpus(out / "corpus-write", spec)
    rows: list[list[object]] = []
    rows_concurrent: list[list[object]] = []
    n = 10 if quick else 50
    per_client = 2 if quick else 5
    for provider in ("none", "local"):
        mode = "keyword" if provider == "none" else "hybrid"
        today = ws / "memory" / f"{datetime.now().astimezone():%Y-%m-%d}.md"
        today.unlink(missing_ok=True)  # every run starts today's note afresh: it grows with each write
        d = Daemon(out, ws, provider, debounce_ms=1500)
        try:
            await d.wait_ready()
            replies, hits, misses = await write_then_search(d, n)
            rows.append(
                [
                    mode,
                    n,
                    percentile(replies, 0.5),
                    percentile(replies, 0.99),
                    percentile(hits, 0.5),
                    percentile(hits, 0.99),
                    misses,
                ]
            )
            latencies, rate = await concurrent_writes(d, per_client)
            p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
            rows_concurrent.append([mode, CONCURRENT_CLIENTS, len(latencies), rate, p50, p99])
        finally:
            d.stop()
    corpus = f"{spec.notes:,} notes + {spec.transcripts:,} transcripts indexed"
    table(
        f"memory_write -> searchable (one writer; a second connection searches once when the reply arrives; {corpus})",
        ["mode", "writes", "reply p50 ms", "reply p99 ms", "write -> hit p50 ms", "write -> hit p99 ms", "misses"],
        rows,
    )
    table(
        "memory_write from 10 clients at once (one daily note, one folder lock)",
        ["mode", "clients", "writes", "writes/s", "reply p50 ms", "reply p99 ms"],
        rows_concurrent,
    )


def main(out: Path, quick: bool) -> None:
    anyio.run(run, out, quick)
