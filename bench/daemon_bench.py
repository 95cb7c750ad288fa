"""Issue 5's figures, measured on a real `memoryd serve` subprocess.

change-to-searchable latency (file saved -> search hit), search latency through the socket vs
in-process, 20 concurrent clients searching while a full reindex runs, idle CPU, and RSS.
"""

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
from memoryd.index.engine import IndexEngine
from memoryd.server.client import request_sync, unix_client

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Daemon:
    def __init__(self, out: Path, ws: Path, provider: str, debounce_ms: int, *, keep_state: bool = False) -> None:
        self.dir = out / f"daemon-{provider}"
        if not keep_state:
            shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.ws = ws
        self.config = self.dir / "config.toml"
        self.config.write_text(
            f'[defaults]\nprovider = "{provider}"\n[defaults.sync]\nwatch_debounce_ms = {debounce_ms}\n'
            f'[agents.main]\nworkspace = "{ws}"\n'
        )
        self.socket = self.dir.absolute() / "run" / "memoryd.sock"  # a private directory the daemon creates 0700
        env = {**os.environ, "XDG_CACHE_HOME": str(out / "cache")}
        log = (self.dir / "daemon.log").open("w")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "memoryd",
                "serve",
                "--config",
                str(self.config),
                "--state-dir",
                str(self.dir / "state"),
                "--socket",
                str(self.socket),
                "--log-level",
                "info",
            ],
            env=env,
            stdout=log,
            stderr=log,
        )

    async def wait_ready(self, deadline_s: float = 1800.0) -> None:
        """Until the first index is done, vectors included: 11.3k chunks read as windows (the default) took over
        600 s on a 2-core machine sharing its cores (6,144 embedded at 600 s), so the deadline is generous."""
        with anyio.fail_after(deadline_s):
            while True:
                try:
                    async with Client(unix_client(self.socket, "main")) as c:
                        st = await c.call_tool("status", {})
                    data: Any = st.structured_content
                    if data and data["lastSync"] and data["embedding"]["state"] in ("ready", "unavailable", "none"):
                        return
                except Exception:  # not listening yet, or the MCP session is not up: ask again
                    pass
                await anyio.sleep(0.2)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=60)


async def _search_latencies(client: Client, queries: list[str]) -> list[float]:
    out = []
    for q in queries:
        t0 = time.perf_counter()
        await client.call_tool("memory_search", {"query": q})
        out.append((time.perf_counter() - t0) * 1000)
    return out


async def change_to_hit(d: Daemon, n: int) -> list[float]:
    lat: list[float] = []
    async with Client(unix_client(d.socket, "main")) as client:
        for i in range(n):
            # Unique per daemon run: the corpus is shared, and a note an earlier run wrote would be indexed
            # at start-up and found at once (that made hybrid look 10 ms fresh).
            token = f"zqx{os.getpid()}{time.monotonic_ns()}k{i}"
            t0 = time.perf_counter()
            (d.ws / "memory" / "bench-fresh").mkdir(parents=True, exist_ok=True)
            (d.ws / "memory" / "bench-fresh" / f"{token}.md").write_text(f"fresh note {token}\n")
            with anyio.fail_after(60):
                while True:
                    r = await client.call_tool("memory_search", {"query": token, "waitFresh": 5000, "minScore": 0})
                    data: Any = r.structured_content
                    # The vector leg always returns neighbours: only the new file itself counts as a hit.
                    if data and any(res["path"].endswith(f"{token}.md") for res in data["results"]):
                        break
                    await anyio.sleep(0.01)
            lat.append((time.perf_counter() - t0) * 1000)
    return lat


async def concurrent_during_reindex(d: Daemon, queries: list[str], clients: int, per_client: int) -> dict[str, float]:
    lat: list[float] = []
    errors = 0

    async def one() -> None:
        nonlocal errors
        async with Client(unix_client(d.socket, "main")) as client:
            for q in queries[:per_client]:
                t0 = time.perf_counter()
                r = await client.call_tool("memory_search", {"query": q})
                lat.append((time.perf_counter() - t0) * 1000)
                errors += int(bool(r.is_error))

    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: request_sync(d.socket, "main", force=True, reason="bench"))
        for _ in range(clients):
            tg.start_soon(one)
    wall = time.perf_counter() - t0
    return {
        "searches": len(lat),
        "qps": len(lat) / wall,
        "p50": percentile(lat, 0.5),
        "p99": percentile(lat, 0.99),
        "errors": errors,
        "wall_s": wall,
    }


async def run(out: Path, quick: bool) -> None:
    spec = CorpusSpec(notes=300 if quick else 1000, transcripts=30 if quick else 100, seed=11)
    ws = write_corpus(out / "corpus-daemon", spec)
    w = Writer(CorpusSpec(seed=12))
    queries = [w.query() for _ in range(100)]
    rows_fresh, rows_overhead, rows_load, rows_res = [], [], [], []
    for provider in ("none", "local"):
        mode = "keyword" if provider == "none" else "hybrid"
        d = Daemon(out, ws, provider, debounce_ms=1500)
        try:
            await d.wait_ready()
            fresh = await change_to_hit(d, 5 if quick else 20)
            rows_fresh.append([mode, "1500 (default)", percentile(fresh, 0.5), percentile(fresh, 0.99)])
            async with Client(unix_client(d.socket, "main")) as client:
                await _search_latencies(client, queries[:5])
                sock = await _search_latencies(client, queries)
            agent = config_mod.load(d.config, state_dir=d.dir / "state").agent("main")
            engine = IndexEngine(agent, hold_writer_lock=False)
            await engine.open()
            try:
                inproc = []
                for q in queries:
                    t0 = time.perf_counter()
                    await engine.search(q)
                    inproc.append((time.perf_counter() - t0) * 1000)
            finally:
                engine.close()
            if mode == "keyword":
                rows_overhead.append(
                    [
                        mode,
                        percentile(inproc, 0.5),
                        percentile(sock, 0.5),
                        percentile(sock, 0.5) - percentile(inproc, 0.5),
                        "<= 1",
                    ]
                )
            else:
                rows_overhead.append(
                    [
                        f"{mode} (socket incl. query embedding; in-process keyword-only)",
                        percentile(inproc, 0.5),
                        percentile(sock, 0.5),
                        "n/a",
                        "",
                    ]
                )
            load = await concurrent_during_reindex(d, queries, 20, 10 if quick else 50)
            rows_load.append([mode, int(load["searches"]), load["qps"], load["p50"], load["p99"], int(load["errors"])])
            idle_s = 10.0 if quick else 60.0
            c0 = cpu_seconds(d.proc.pid)
            await anyio.sleep(idle_s)
            idle = (cpu_seconds(d.proc.pid) - c0) / idle_s * 100
            rows_res.append([mode, f"{idle:.2f}% over {idle_s:.0f} s", rss_mb(d.proc.pid)])
        finally:
            d.stop()
    n = f"{spec.notes:,} notes + {spec.transcripts:,} transcripts"
    table(
        f"Change to searchable (file saved -> search hit, {n})",
        ["mode", "watch debounce ms", "p50 ms", "p99 ms"],
        rows_fresh,
    )
    table(
        "Search latency: in-process vs through the socket (persistent MCP connection)",
        ["mode", "in-process p50 ms", "socket p50 ms", "overhead ms", "target"],
        rows_overhead,
    )
    table(
        "20 concurrent clients searching while a full reindex runs",
        ["mode", "searches", "searches/s", "p50 ms", "p99 ms", "errors"],
        rows_load,
    )
    table("Daemon resources", ["mode", "idle CPU", "RSS MB (target <= 200 with the model)"], rows_res)


def main(out: Path, quick: bool) -> None:
    anyio.run(run, out, quick)
