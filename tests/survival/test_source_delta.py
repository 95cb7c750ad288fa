"""Adding a source is a delta, not a rebuild (issue 24, item 2), through the real daemon and a real SIGHUP.

The sessions preset gaining `codex` and a new `extra_paths` entry: the daemon indexes the new files
alone (the notes already indexed are not read again, nothing is rebuilt), then a source taken away is
pruned, also without a rebuild. Only what changes the vectors or a file's rows (model, chunking) rebuilds.
"""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest

from tests.conftest import write
from tests.integration.daemon_fixture import Daemon
from tests.survival.conftest import DaemonFactory, query
from tests.survival.test_faults import status

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).parent.parent / "sources" / "transcript_fixtures"
CODEX = "2026/02/11/rollout-2026-02-11T16-40-03-0199f2a4-6b1e-7c30-9d2f-4a8e1b3c5d70.jsonl"
CONFIG = """
[defaults]
provider = "none"
[defaults.sync]
watch = false
[agents.main]
workspace = "{ws}"
sessions = {sessions}
extra_paths = {extras}
{chunking}
"""


def configure(daemon: Daemon, ws: Path, sessions: list[str], extras: list[Path], chunking: str = "") -> None:
    daemon.config.write_text(
        CONFIG.format(ws=ws, sessions=sessions, extras=[str(p) for p in extras], chunking=chunking).replace("'", '"')
    )


def reload(daemon: Daemon) -> str:
    """SIGHUP, then the log of everything up to the sync the new configuration started."""
    assert daemon.proc is not None
    daemon.proc.send_signal(signal.SIGHUP)
    daemon.wait_for_line("configuration applied")
    start = len(daemon.runs[-1].lines)
    daemon.wait_for_line("sync done")
    return "".join(daemon.runs[-1].lines[start - 1 :])


def test_a_source_gained_or_lost_is_a_delta_sync_and_only_chunking_rebuilds(
    make_daemon: DaemonFactory, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    for i in range(20):
        write(ws / "memory" / f"n{i:02d}.md", f"Note {i}: the barn owl ledger, mark b{i}k.\n")
    vault = write(tmp_path / "vault" / "atlas.md", "The atlas of salt marshes.\n").parent
    codex = Path(os.environ["HOME"]) / ".codex" / "sessions" / CODEX
    codex.parent.mkdir(parents=True)
    shutil.copyfile(FIXTURES / "codex.jsonl", codex)
    daemon = make_daemon("")
    configure(daemon, ws, ["claude-code"], [])
    daemon.start()
    daemon.wait_for_line("sync done")
    assert query(daemon, "tile cache zoom") == [] and query(daemon, "salt marshes") == []

    configure(daemon, ws, ["claude-code", "codex"], [vault])
    log = reload(daemon)
    assert "full reindex" not in log, log
    assert "indexed=2" in log and "full=False" in log, log  # the transcript and the note, nothing else read
    assert query(daemon, "tile cache zoom") == ["codex/" + CODEX]
    found = query(daemon, "salt marshes")
    assert len(found) == 1 and found[0].endswith("atlas.md"), found
    st = status(daemon)
    assert st["files"] == 22 and st["meta"]["sources"] == ["memory", "sessions"]

    configure(daemon, ws, ["claude-code"], [])
    log = reload(daemon)
    assert "full reindex" not in log and "deleted=2" in log, log
    assert query(daemon, "tile cache zoom") == [] and query(daemon, "salt marshes") == []
    assert query(daemon, "b7k") == ["memory/n07.md"]

    configure(daemon, ws, ["claude-code"], [], chunking="chunking = { tokens = 64, overlap = 8 }")
    log = reload(daemon)
    assert "full reindex" in log and "chunk size changed" in log, log
