"""When each host's hook last ran and what it injected: `<state dir>/hooks/last.json`, counts and never text.

The hook process writes it (memoryd.cli.hooks.state); `memoryd status` and the viewer read it. It lives low
in the layers so the daemon's viewer can read it without importing the CLI.
"""

from __future__ import annotations

import time
from pathlib import Path

import orjson

FOLDER = "hooks"
LAST_NAME = "last.json"


def last_path(state_dir: Path) -> Path:
    return state_dir / FOLDER / LAST_NAME


def last_runs(state_dir: Path) -> dict[str, object]:
    """`last.json` as written: per `host event`, `at` (epoch seconds) and its counts; empty when none ran."""
    try:
        data = orjson.loads(last_path(state_dir).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def recent_runs(state_dir: Path) -> dict[str, dict[str, object]]:
    """The same with each run's time as ISO 8601 (UTC), entries of another shape left out."""
    runs: dict[str, dict[str, object]] = {}
    for key, run in last_runs(state_dir).items():
        if isinstance(run, dict) and isinstance(run.get("at"), int):
            runs[key] = {**run, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(run["at"]))}
    return runs
