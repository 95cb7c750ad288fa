"""Issue 27's load figure: does the HTTP face slow the socket's clients?

One real `memoryd serve --http` (keyword-only, so the figure is the transports', not a model's). First
50 socket clients search alone; then the same while 50 HTTP clients (the SDK's streamable_http_client,
one token each, in a separate process so their client-side work does not sit in the socket clients'
event loop) make 200 searches each. Reported: socket p50/p99 both ways and their ratio (target: p99
within 1.5x), HTTP p50/p99, errors on both sides, and whether the HTTP load covered the whole window.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from bench.corpus import CorpusSpec, Writer, write_corpus
from bench.daemon_bench import cpu_seconds
from bench.report import percentile, table
from memoryd.server.client import unix_client
from memoryd.server.tokens import TokenStore


async def socket_clients(sock: Path, queries: list[str], clients: int, per_client: int) -> dict[str, Any]:
    lat: list[float] = []
    errors = 0

    async def one(offset: int) -> None:
        nonlocal errors
        async with Client(unix_client(sock, "main")) as client:
            for i in range(per_client):
                q = queries[(offset + i) % len(queries)]
                t0 = time.perf_counter()
                try:
                    r = await client.call_tool("memory_search", {"query": q})
                    errors += int(bool(r.is_error))
                except Exception:
                    errors += 1
                lat.append((time.perf_counter() - t0) * 1000)

    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for c in range(clients):
            tg.start_soon(one, c * 7)
    return {"lat": lat, "errors": errors, "wall": time.perf_counter() - t0, "start": t0}


async def http_load(url: str, tokens: list[str], queries: list[str], per_client: int) -> dict[str, Any]:
    """The HTTP side (run in its own process by `main`): one persistent MCP session per token."""
    lat: list[float] = []
    errors = 0
    connected = anyio.Event()
    ready = 0

    async def one(token: str, offset: int) -> None:
        nonlocal errors, ready
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=120) as h,
            Client(streamable_http_client(url, http_client=h)) as client,
        ):
            ready += 1
            if ready == len(tokens):
                connected.set()
            await connected.wait()
            for i in range(per_client):
                t0 = time.perf_counter()
                try:
                    r = await client.call_tool("memory_search", {"query": queries[(offset + i) % len(queries)]})
                    errors += int(bool(r.is_error))
                except Exception:
                    errors += 1
                lat.append((time.perf_counter() - t0) * 1000)

    async def announce() -> None:
        await connected.wait()
        sys.stdout.write(json.dumps({"started": time.time()}) + "\n")
        sys.stdout.flush()

    t0 = time.time()
    async with anyio.create_task_group() as tg:
        tg.start_soon(announce)
        for n, token in enumerate(tokens):
            tg.start_soon(one, token, n * 11)
    return {"lat": lat, "errors": errors, "end": time.time(), "wall": time.time() - t0}


def _http_main() -> None:
    """`python -m bench.http_bench URL PER_CLIENT` with tokens and queries as JSON on stdin."""
    url, per_client = sys.argv[1], int(sys.argv[2])
    data = json.loads(sys.stdin.read())
    result = anyio.run(http_load, url, data["tokens"], data["queries"], per_client)
    sys.stdout.write(json.dumps(result) + "\n")


async def run(out: Path, quick: bool) -> None:
    spec = CorpusSpec(notes=300, transcripts=30, seed=21)
    ws = write_corpus(out / "corpus-http", spec)
    w = Writer(CorpusSpec(seed=22))
    queries = [w.query() for _ in range(200)]
    clients, sock_per, http_per = (10, 20, 40) if quick else (50, 40, 200)
    running = int(os.environ.get("BENCH_HTTP_MAX_RUNNING", "2"))  # daemon.http_max_running (default 2)
    d = out / "daemon-http"
    subprocess.run(["rm", "-rf", str(d)], check=True)
    d.mkdir(parents=True)
    config = d / "config.toml"
    config.write_text(
        '[daemon]\nhttp = "127.0.0.1:0"\nhttp_rate_per_minute = 1000000\nhttp_max_concurrent = 64\n'
        f"http_max_running = {running}\n"
        f'[defaults]\nprovider = "none"\n[agents.main]\nworkspace = "{ws}"\n'
    )
    store = TokenStore(d / "state")
    tokens = [store.create(["main"], read_only=True, expires_s=None)[0] for _ in range(clients)]
    sock = d.absolute() / "run" / "memoryd.sock"
    log_path = d / "daemon.log"
    command = [sys.executable, "-m", "memoryd", "serve", "--config", str(config), "--state-dir", str(d / "state")]
    command += ["--socket", str(sock), "--log-level", "info"]
    with log_path.open("w") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=log, env=os.environ.copy())
    try:
        url = await _wait_url(log_path)
        await _wait_indexed(sock)
        await socket_clients(sock, queries, 5, 5)  # warm-up
        cpu0 = cpu_seconds(proc.pid)
        alone = await socket_clients(sock, queries, clients, sock_per)
        cpu_alone = cpu_seconds(proc.pid) - cpu0
        loader = subprocess.Popen(
            [sys.executable, "-m", "bench.http_bench", url, str(http_per)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert loader.stdin is not None
        assert loader.stdout is not None
        loader.stdin.write(json.dumps({"tokens": tokens, "queries": queries}))
        loader.stdin.close()
        cpu1 = cpu_seconds(proc.pid)
        started = json.loads(await anyio.to_thread.run_sync(loader.stdout.readline))["started"]
        loaded_start = time.time()
        loaded = await socket_clients(sock, queries, clients, sock_per)
        loaded_end = time.time()
        http = json.loads(await anyio.to_thread.run_sync(loader.stdout.readline))
        cpu_loaded = cpu_seconds(proc.pid) - cpu1
        loader.wait(timeout=60)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    covered = started <= loaded_start and http["end"] >= loaded_end
    per_socket = cpu_alone * 1000 / len(alone["lat"])
    per_http = (cpu_loaded * 1000 - per_socket * len(loaded["lat"])) / max(1, len(http["lat"]))
    p99_alone, p99_loaded = percentile(alone["lat"], 0.99), percentile(loaded["lat"], 0.99)
    table(
        f"Socket search with and without HTTP load ({clients} socket clients x {sock_per}; "
        f"{clients} HTTP clients x {http_per}; keyword-only, {spec.notes} notes; http_max_running {running})",
        ["socket clients", "searches", "p50 ms", "p99 ms", "errors"],
        [
            ["alone", len(alone["lat"]), percentile(alone["lat"], 0.5), p99_alone, alone["errors"]],
            ["under HTTP load", len(loaded["lat"]), percentile(loaded["lat"], 0.5), p99_loaded, loaded["errors"]],
        ],
    )
    table(
        "HTTP side and the ratio (target: socket p99 under load <= 1.5x alone, errors 0)",
        [
            "HTTP searches",
            "HTTP p50 ms",
            "HTTP p99 ms",
            "HTTP errors",
            "socket p99 ratio",
            "load covered window",
            "daemon CPU ms/search: socket",
            "HTTP",
        ],
        [
            [
                len(http["lat"]),
                percentile(http["lat"], 0.5),
                percentile(http["lat"], 0.99),
                http["errors"],
                p99_loaded / p99_alone if p99_alone else float("nan"),
                "yes" if covered else "no",
                per_socket,
                per_http,
            ]
        ],
    )


async def _wait_url(log_path: Path) -> str:
    with anyio.fail_after(120):
        while True:
            match = re.search(r"url=(http://\S+/mcp)", log_path.read_text())
            if match:
                return match.group(1)
            await anyio.sleep(0.1)  # polling a log file a subprocess writes: bench code, not a test


async def _wait_indexed(sock: Path) -> None:
    with anyio.fail_after(600):
        while True:
            try:
                async with Client(unix_client(sock, "main")) as c:
                    st: Any = (await c.call_tool("status", {})).structured_content
                if st and st["lastSync"] and st["files"]:
                    return
            except Exception:  # not listening yet
                pass
            await anyio.sleep(0.2)


def main(out: Path, quick: bool) -> None:
    anyio.run(run, out, quick)


if __name__ == "__main__":
    _http_main()
