"""The real CLI as a subprocess: index, search, get, status — and kill -9 at every crash point.

A rebuild killed at any point must leave the previous index intact and searchable, leave no
temporary files after the next run, and the next run must complete.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import apsw
import orjson
import pytest

from tests.conftest import transcript_line, write

pytestmark = pytest.mark.integration

FILES = 600  # more than two write batches


def run(ws: Path, state: Path, *args: str, crash_at: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MEMORYD_CRASH_AT"}
    if crash_at:
        env["MEMORYD_CRASH_AT"] = crash_at
    config = state.parent / "keyword-only.toml"
    config.write_text('[defaults]\nprovider = "none"\n')
    cmd = [
        sys.executable,
        "-m",
        "memoryd",
        *args,
        "--workspace",
        str(ws),
        "--state-dir",
        str(state),
        "--config",
        str(config),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, check=False)


def make_workspace(root: Path, word: str) -> Path:
    ws = root / "ws"
    for i in range(FILES):
        write(ws / "memory" / f"note-{i:04d}.md", f"# Note {i}\n\nThe {word} report number {i} mentions item{i}.\n")
    write(ws / "sessions" / "chat.jsonl", transcript_line("user", f"the {word} transcript") + "\n")
    return ws


def hits(ws: Path, state: Path, query: str) -> list[str]:
    out = run(ws, state, "search", query, "--json", "--no-sync", "--max-results", "3")
    assert out.returncode == 0, out.stderr
    return [r["path"] for r in orjson.loads(out.stdout)["results"]]


def db_file(state: Path) -> Path:
    return state / "agents" / "main" / "index.sqlite"


def integrity_ok(state: Path) -> bool:
    conn = apsw.Connection(str(db_file(state)), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()


def test_cli_index_search_get_status(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, "alpha")
    state = tmp_path / "state"
    out = run(ws, state, "index")
    assert out.returncode == 0, out.stderr
    assert f"{FILES + 1} files indexed" in out.stdout
    assert hits(ws, state, "item17") == ["memory/note-0017.md"]
    text = run(ws, state, "search", "item17").stdout
    score, location = text.split("\n", 1)[0].split(" ")
    assert 0 < float(score) <= 1
    assert location == "memory/note-0017.md:1-4"
    assert text.split("\n", 1)[1] == "# Note 17\n\nThe alpha report number 17 mentions item17.\n\n"
    assert run(ws, state, "search", "zzzqqq").stdout == "No matches.\n"
    got = run(ws, state, "get", "memory/note-0017.md", "--from", "3", "--lines", "1")
    assert got.stdout == "The alpha report number 17 mentions item17.\n"
    refused = run(ws, state, "get", "../etc/passwd.md")
    assert refused.returncode == 1 and "not a memory file" in refused.stderr
    status = orjson.loads(run(ws, state, "status", "--json").stdout)
    assert status["files"] == FILES + 1 and status["dirty"] is False
    empty = run(ws, state, "search")
    assert empty.returncode == 1 and "query is required" in empty.stderr


@pytest.mark.parametrize("point", ["reindex:building", "reindex:before-swap"])
def test_kill_during_a_forced_rebuild_keeps_the_old_index(tmp_path: Path, point: str) -> None:
    ws = make_workspace(tmp_path, "alpha")
    state = tmp_path / "state"
    assert run(ws, state, "index").returncode == 0
    for note in (ws / "memory").iterdir():
        note.write_text(note.read_text().replace("alpha", "omega"))
    crashed = run(ws, state, "index", "--force", crash_at=point)
    assert crashed.returncode == -signal.SIGKILL
    assert integrity_ok(state)
    assert hits(ws, state, "alpha report item5") == ["memory/note-0005.md"]
    assert hits(ws, state, "omega") == []
    done = run(ws, state, "index", "--force")
    assert done.returncode == 0, done.stderr
    assert hits(ws, state, "omega report item5") == ["memory/note-0005.md"]
    assert list(db_file(state).parent.glob("*.tmp-*")) == []


def test_kill_right_after_the_swap_leaves_the_new_index(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, "alpha")
    state = tmp_path / "state"
    assert run(ws, state, "index").returncode == 0
    write(ws / "memory" / "fresh.md", "kiwi\n")
    crashed = run(ws, state, "index", "--force", crash_at="reindex:after-swap")
    assert crashed.returncode == -signal.SIGKILL
    assert integrity_ok(state)
    assert hits(ws, state, "kiwi") == ["memory/fresh.md"]
    assert run(ws, state, "index").returncode == 0


def test_kill_during_a_delta_sync_converges_on_the_next_run(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, "alpha")
    state = tmp_path / "state"
    assert run(ws, state, "index").returncode == 0
    for note in (ws / "memory").iterdir():
        note.write_text(note.read_text().replace("alpha", "omega"))
    crashed = run(ws, state, "index", crash_at="sync:after-batch")
    assert crashed.returncode == -signal.SIGKILL
    assert integrity_ok(state)
    done = run(ws, state, "index")
    assert done.returncode == 0, done.stderr
    assert hits(ws, state, "alpha") == ["sessions/chat.jsonl"]
    assert len(hits(ws, state, "omega")) == 3
