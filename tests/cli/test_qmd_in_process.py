"""Without a daemon, `search` and `status` honour `backend = "qmd"`: QMD answers, or the builtin index
does and says why (`fallback: {from: "qmd", reason}`), exactly as through the daemon."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.conftest import write
from tests.qmd.standin import StandIn, make_standin

pytestmark = pytest.mark.integration

HITS = [
    {"collection": "memory-root-main", "path": "MEMORY.md", "docid": "#aa", "score": 0.8,
     "snippet": "@@ -3,1 @@ (2 before, 1 after)\n- My dog is a golden retriever named Biscuit.\n"},
]  # fmt: skip


def _cli(root: Path, command: Path, *args: str) -> subprocess.CompletedProcess[str]:
    config = write(
        root / "config.toml",
        f'[defaults]\nprovider = "none"\nbackend = "qmd"\n[defaults.qmd]\ncommand = "{command}"\n'
        f'[agents.main]\nworkspace = "{root / "ws"}"\n',
    )
    cmd = [sys.executable, "-m", "memoryd", *args, "--config", str(config), "--state-dir", str(root / "state")]
    cmd += ["--socket", str(root / "none" / "memoryd.sock")]  # no daemon there: in-process
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    write(tmp_path / "ws" / "MEMORY.md", "# Memory\n\n- My dog is a golden retriever named Biscuit.\n")
    return tmp_path


@pytest.fixture
def qmd(root: Path) -> StandIn:
    return make_standin(root / "standin-bin", hits=HITS)


def test_search_and_status_go_to_qmd(root: Path, qmd: StandIn) -> None:
    out = _cli(root, qmd.path, "search", "golden retriever", "--json")
    assert out.returncode == 0, out.stderr
    resp = orjson.loads(out.stdout)
    assert resp["provider"] == "qmd" and resp["fallback"] is None
    assert [(r["path"], r["startLine"]) for r in resp["results"]] == [("MEMORY.md", 3)]
    assert resp["results"][0]["citation"] == "MEMORY.md#L3"  # the agent's citations apply, as in the daemon
    assert qmd.calls("update") and qmd.calls("search")  # synced first (as the builtin path syncs), then searched
    st = orjson.loads(_cli(root, qmd.path, "status", "--json", "--deep").stdout)
    assert st["backend"] == "qmd" and st["requestedBackend"] == "qmd" and st["fallback"] is None
    assert st["qmd"]["version"] == "9.9.9" and st["qmdDoctor"]["error"] is None
    assert st["builtin"]["files"] == 1


def test_no_sync_searches_qmd_without_an_update(root: Path, qmd: StandIn) -> None:
    out = _cli(root, qmd.path, "search", "golden retriever", "--json", "--no-sync")
    assert orjson.loads(out.stdout)["provider"] == "qmd"
    assert qmd.calls("update") == []


def test_a_missing_binary_falls_back_to_the_builtin_index_and_says_why(root: Path) -> None:
    missing = root / "no-such-qmd"
    out = _cli(root, missing, "search", "golden retriever", "--json")
    assert out.returncode == 0, out.stderr
    resp = orjson.loads(out.stdout)
    assert [r["path"] for r in resp["results"]] == ["MEMORY.md"]
    assert resp["fallback"]["from"] == "qmd" and str(missing) in resp["fallback"]["reason"]
    st = orjson.loads(_cli(root, missing, "status", "--json").stdout)
    assert st["backend"] == "builtin" and st["requestedBackend"] == "qmd"
    assert st["fallback"]["from"] == "qmd" and st["qmd"]["disabled"] is True


def test_a_failing_update_hands_the_search_to_the_builtin_index(root: Path, qmd: StandIn) -> None:
    qmd.fail("update", exit=1, stderr="SQLITE_CORRUPT: database disk image is malformed\n")
    out = _cli(root, qmd.path, "search", "golden retriever", "--json")
    resp = orjson.loads(out.stdout)
    assert resp["provider"] != "qmd" and [r["path"] for r in resp["results"]] == ["MEMORY.md"]
    assert resp["fallback"]["from"] == "qmd" and "update" in resp["fallback"]["reason"]
