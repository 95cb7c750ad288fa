"""Issue 24's figures on a generated Claude Code history (`bench.history_gen`) and a real `memoryd serve`.

A daemon runs with one agent whose workspace holds a few notes and no sessions source; then its config
gains `sessions = ["claude-code"]` (what `memoryd setup claude-code --write` adds) and it is sent SIGHUP.
From that moment: the time to the first keyword hit for a word of the newest session, the time until
every session is keyword-searchable (status past its keyword phase; the oldest session's word found),
the vector rate against the raw model rate measured in the same run (the same texts and provider, in this
process: the mean of a measurement before the daemon starts and one after it stops, as the load of a
shared machine drifts), the ETA status gave at the halfway point of the vectors against the real
remaining time, and the daemon's peak RSS (VmHWM). Sizes: `--quick` 60 sessions / 20 MB, else
MEMORYD_BENCH_HISTORY_SESSIONS / MEMORYD_BENCH_HISTORY_MB (default 500 / 300, issue 24's size).
MEMORYD_BENCH_DAEMON_SRC runs the daemon from another source tree (a before/after comparison; one
without `progress` in status is followed by its `syncing` flag).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client

from bench.history_gen import History, generate, session_word
from bench.report import table
from memoryd.config.settings import LocalSettings
from memoryd.embeddings.local import LocalEmbeddingProvider
from memoryd.server.client import unix_client
from memoryd.sources.transcripts import chunk_transcript, parse_transcript

RAW_SAMPLE = 256
DAEMON_WINDOWS = LocalSettings().long_inputs == "windows"
"""The raw rate does the daemon's work: the model over every window of a long chunk, as the daemon's default
reads it (before this, the bench compared the daemon's windows with a truncating model: 66-70% "of raw")."""
GIVE_UP_S = 3600.0


def _config(ws: Path, sessions: bool) -> str:
    line = 'sessions = ["claude-code"]\n' if sessions else ""
    return f'[defaults]\nprovider = "local"\n[agents.main]\nworkspace = "{ws}"\n{line}'


def _hwm_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def raw_rate(history: History, cache: Path, *, windows: bool = DAEMON_WINDOWS) -> tuple[float, int]:
    """The local model's own rate on chunks of this history (newest sessions'), in this process, reading
    long chunks as the daemon does by default (`local.long_inputs = "windows"`: a 400-token chunk is two
    model windows); `windows=False` is the truncating rate, for reference only."""
    texts: list[str] = []
    for path in reversed(history.files):
        transcript = parse_transcript(path.read_bytes())
        texts += [c.text for c in chunk_transcript(transcript, 400, 80)]
        if len(texts) >= RAW_SAMPLE:
            break
    provider = LocalEmbeddingProvider(cache, windows=windows)
    await provider.load()
    try:
        await provider.embed_documents(texts[:8])  # warm
        t0 = time.perf_counter()
        for start in range(0, len(texts), 32):
            await provider.embed_documents(texts[start : start + 32])
        return len(texts) / (time.perf_counter() - t0), len(texts)
    finally:
        await provider.aclose()


@dataclass
class Run:
    t0: float = 0.0
    first_hit_s: float | None = None
    all_keyword_s: float | None = None
    oldest_hit_s: float | None = None
    embed_start: tuple[float, int] | None = None  # (time, chunks embedded) when the vector phase began
    done_s: float | None = None
    total_chunks: int = 0
    halfway: tuple[float, float] | None = None  # (time, the ETA status gave then)
    samples: list[dict[str, Any]] = field(default_factory=list)


async def _found(client: Client, word: str) -> bool:
    r = await client.call_tool("memory_search", {"query": word, "minScore": 0, "corpus": "sessions"})
    data: Any = r.structured_content
    return bool(data) and any(word in res["snippet"] for res in data["results"])


async def watch(socket: Path, history: History, run: Run) -> None:
    newest, oldest = session_word(len(history.files) - 1), session_word(0)
    stop_after = float(os.environ.get("MEMORYD_BENCH_HISTORY_STOP_AFTER_S") or GIVE_UP_S)
    with anyio.move_on_after(stop_after):
        while run.done_s is None:
            try:
                async with Client(unix_client(socket, "main")) as client:  # the reload restarts the agent
                    while run.done_s is None:
                        await _sample(client, newest, oldest, run)
                        # Once both hits are timed, poll gently: this client shares the daemon's two cores.
                        await anyio.sleep(0.25 if run.oldest_hit_s is None else 1.0)
            except Exception:  # the connection went with the agent it was bound to: open another
                await anyio.sleep(0.1)


async def _sample(client: Client, newest: str, oldest: str, run: Run) -> None:
    now = time.perf_counter() - run.t0
    if run.first_hit_s is None and await _found(client, newest):
        run.first_hit_s = time.perf_counter() - run.t0
    if run.oldest_hit_s is None and run.first_hit_s is not None and await _found(client, oldest):
        run.oldest_hit_s = time.perf_counter() - run.t0
    st: Any = (await client.call_tool("status", {})).structured_content
    if not st:
        raise RuntimeError("no status")
    if "progress" not in st:  # a memoryd from before progress (MEMORYD_BENCH_DAEMON_SRC): its syncing flag only
        st["progress"] = {"phase": "indexing" if st["syncing"] else "idle", "chunks": {}, "etaSeconds": None}
    p = st["progress"]
    chunks = p["chunks"]
    run.samples.append({"t": now, **p})
    if p["phase"] == "embedding":
        if run.all_keyword_s is None:
            run.all_keyword_s = now
        done, left = chunks["embedded"], chunks["withoutVectors"]
        if run.embed_start is None:
            run.embed_start = (now, done)
        if run.halfway is None and done >= (done + left) / 2 and p["etaSeconds"] is not None:
            run.halfway = (now, float(p["etaSeconds"]))
    pending = st["embedding"].get("chunksWithoutVectors", 0)
    covered = "sessions" in (st.get("meta") or {}).get("sources", [])
    if p["phase"] == "idle" and run.first_hit_s is not None and not pending and covered:
        run.done_s = now
        run.total_chunks = int(st["chunks"])
        if run.all_keyword_s is None:
            run.all_keyword_s = now


async def _ready(socket: Path) -> None:
    with anyio.fail_after(600):
        while True:
            try:
                async with Client(unix_client(socket, "main")) as c:
                    st: Any = (await c.call_tool("status", {})).structured_content
                if (
                    st
                    and st["lastSync"]
                    and st["embedding"]["state"] == "ready"
                    and st.get("progress", {"phase": "idle"})["phase"] == "idle"
                ):
                    return
            except Exception:  # not listening yet
                pass
            await anyio.sleep(0.2)


async def run_bench(out: Path, sessions: int, mb: float) -> None:
    base = (out / "history").absolute()
    shutil.rmtree(base, ignore_errors=True)
    home, ws = base / "home", base / "ws"
    t_gen = time.perf_counter()
    history = generate(home, sessions=sessions, total_mb=mb)
    gen_s = time.perf_counter() - t_gen
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\nThe deploy key lives in the vault.\n")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    raw, sample = await raw_rate(history, cache / "memoryd" / "models")
    config = base / "config.toml"
    config.write_text(_config(ws, sessions=False))
    socket = (base / "run" / "memoryd.sock").absolute()
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(cache)}
    src = os.environ.get("MEMORYD_BENCH_DAEMON_SRC")  # another memoryd's source tree (a before/after run)
    if src:
        env["PYTHONPATH"] = src  # and run from there: `-m` puts the working directory first
    env.pop("CLAUDE_CONFIG_DIR", None)
    log = (base / "daemon.log").open("w")
    command = [sys.executable, "-m", "memoryd", "serve", "--config", str(config), "--state-dir", str(base / "state")]
    proc = subprocess.Popen([*command, "--socket", str(socket)], env=env, stdout=log, stderr=log, cwd=src or None)
    run = Run()
    try:
        await _ready(socket)
        config.write_text(_config(ws, sessions=True))  # what `setup claude-code --write` adds
        run.t0 = time.perf_counter()
        proc.send_signal(signal.SIGHUP)
        await watch(socket, history, run)
        hwm = _hwm_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    after, _ = await raw_rate(history, cache / "memoryd" / "models")  # the load may have changed meanwhile
    truncating, _ = await raw_rate(history, cache / "memoryd" / "models", windows=False)
    _report(history, gen_s, (raw + after) / 2, sample, run, hwm, truncating)


def _report(history: History, gen_s: float, raw: float, sample: int, run: Run, hwm: float, truncating: float) -> None:
    start_t, start_done = run.embed_start or (run.all_keyword_s or 0.0, 0)
    last: dict[str, Any] = run.samples[-1] if run.samples else {"t": 0.0, "chunks": {}}
    if run.done_s is None:  # stopped early (MEMORYD_BENCH_HISTORY_STOP_AFTER_S): the rate over what was seen
        run.done_s = float(last["t"])
        run.total_chunks = int(last["chunks"].get("embedded", 0)) + start_done
        run.halfway = None
    embedded = run.total_chunks - start_done
    vec_rate = embedded / (run.done_s - start_t) if run.done_s > start_t else float("nan")
    eta_err = float("nan")
    if run.halfway is not None:
        real = run.done_s - run.halfway[0]
        eta_err = (run.halfway[1] - real) / real * 100 if real > 0 else float("nan")
    mb = history.bytes / 1e6
    rows = [
        ["history", f"{len(history.files)} sessions, {mb:.0f} MB (generated in {gen_s:.0f} s)", ""],
        ["first keyword hit, newest session", _s(run.first_hit_s), "<= 10 s"],
        [
            "every file keyword-searchable",
            f"{run.all_keyword_s:.1f} s (oldest found at {run.oldest_hit_s:.1f} s)",
            "<= 60 s",
        ],
        ["vectors complete", f"{run.done_s:.1f} s, {run.total_chunks} chunks", ""],
        [
            "vector rate vs raw model rate",
            f"{vec_rate:.1f} vs {raw:.1f} chunks/s ({vec_rate / raw * 100:.0f}%)",
            ">= 90%",
        ],
        ["raw model rate, long chunks truncated (not the daemon's default)", f"{truncating:.1f} chunks/s", ""],
        ["status ETA at halfway vs real", f"{eta_err:+.0f}%", "within ±30%"],
        ["daemon peak RSS (VmHWM)", f"{hwm:.0f} MB", "<= 300 MB"],
    ]
    table(
        f"A Claude Code history added to a running daemon (raw rate on {sample} of its chunks)",
        ["", "", "target"],
        rows,
    )


def _s(seconds: float | None) -> str:
    return "not seen" if seconds is None else f"{seconds:.1f} s"


def main(out: Path, quick: bool) -> None:
    sessions = 60 if quick else int(os.environ.get("MEMORYD_BENCH_HISTORY_SESSIONS", "500"))
    mb = 20.0 if quick else float(os.environ.get("MEMORYD_BENCH_HISTORY_MB", "300"))
    anyio.run(run_bench, out, sessions, mb)
