"""Shared fixtures: temporary workspaces and agents built through the real config loader."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from memoryd import config as config_mod
from memoryd.config import AgentConfig

# Property tests check results, not speed: hypothesis' default 200 ms deadline per example and its
# "too slow" health check fail on a loaded CI machine (2 cores shared by several runs) for no fault of the code.
settings.register_profile("memoryd", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("memoryd")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the real user's config, state, cache or runtime dirs, or uses a proxy."""
    home = tmp_path_factory.mktemp("home")
    for var, sub in (
        ("HOME", ""),
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_STATE_HOME", "state"),
        ("XDG_CACHE_HOME", "cache"),
        ("XDG_DATA_HOME", "data"),
    ):
        monkeypatch.setenv(var, str(home / sub) if sub else str(home))
    for var in ("MEMORYD_CONFIG", "MEMORYD_STATE_DIR", "MEMORYD_SOCKET", "MEMORYD_CRASH_AT"):
        monkeypatch.delenv(var, raising=False)
    # The transcript presets find other tools' folders through these (else under HOME, set above).
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENCLAW_STATE_DIR"):
        monkeypatch.delenv(var, raising=False)
    # Every HTTP request of the suite goes to servers on 127.0.0.1, even where the environment names a proxy.
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def transcript_line(role: str, text: str, ts: str = "2026-01-05T10:00:00Z") -> str:
    import orjson

    record = {
        "type": "message",
        "timestamp": ts,
        "message": {"role": role, "content": [{"type": "text", "text": text}]},
    }
    return orjson.dumps(record).decode()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A small workspace: root notes, dated notes, a nested note, an ignored folder and a transcript."""
    ws = tmp_path / "ws"
    write(ws / "MEMORY.md", "# Memory\n\n- My dog is a golden retriever named Biscuit.\n- Favourite editor: helix.\n")
    write(ws / "memory" / "2026-01-05.md", "# Standup\n\nDiscussed the PostgreSQL 17 migration and backups.\n")
    write(ws / "memory" / "projects" / "garden.md", "# Garden\n\nPlant tomatoes and basil in April.\n")
    write(ws / "memory" / "node_modules" / "pkg" / "README.md", "# vendored quasar docs\n")
    write(ws / "notes.md", "# Not memory\n\nquokka\n")
    write(
        ws / "sessions" / "s1.jsonl",
        "\n".join(
            [
                '{"type":"session","id":"s1"}',
                transcript_line("user", "Please book the flight to Lisbon for March."),
                "this line is not json",
                transcript_line("assistant", "Booked: TAP flight to Lisbon on March 3rd."),
            ]
        )
        + "\n",
    )
    return ws


AgentFactory = Callable[..., AgentConfig]


@pytest.fixture
def make_agent(tmp_path: Path) -> AgentFactory:
    """Build an agent through the real config code: `make_agent(ws, chunking={"tokens": 64})`."""

    def build(ws: Path, agent_id: str = "main", **overrides: Any) -> AgentConfig:
        table: dict[str, Any] = {"workspace": str(ws), **overrides}
        data: Mapping[str, Any] = {"agents": {agent_id: table}}
        return config_mod.build(data, state_dir=tmp_path / "state").agent(agent_id)

    return build
