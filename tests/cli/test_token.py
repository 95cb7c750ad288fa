"""`memoryd token create|list|revoke`: the token is printed once and never stored or listed."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest

from memoryd.cli import EXIT_ERROR, EXIT_OK, EXIT_USAGE, main
from memoryd.server.tokens import TokenStore
from tests.conftest import write


def run(tmp_path: Path, *args: str) -> tuple[int, str]:
    config = write(
        tmp_path / "c.toml",
        f'[agents.main]\nworkspace = "{tmp_path}/main"\n[agents.work]\nworkspace = "{tmp_path}/work"\n',
    )
    out = io.StringIO()
    code = main([*args, "--config", str(config), "--state-dir", str(tmp_path / "state")], out)
    return code, out.getvalue()


def test_create_list_and_revoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, printed = run(tmp_path, "token", "create", "--agent", "main,work", "--read-only", "--expires", "7d")
    token = printed.strip()
    assert code == EXIT_OK and token.startswith("mdt_")
    assert "shown only this once" in capsys.readouterr().err
    record = TokenStore(tmp_path / "state").verify(token)
    assert record is not None and record.agents == ("main", "work") and record.read_only
    assert token not in (tmp_path / "state" / "http-tokens.json").read_text()

    code, listed = run(tmp_path, "token", "list", "--json")
    entries = orjson.loads(listed)
    assert code == EXIT_OK and [e["id"] for e in entries] == [record.id]
    assert entries[0]["access"] == "read-only" and entries[0]["expires"] is not None
    assert token not in listed and "sha256" not in listed

    assert run(tmp_path, "token", "revoke", record.id)[0] == EXIT_OK
    assert TokenStore(tmp_path / "state").verify(token) is None
    assert run(tmp_path, "token", "revoke", record.id)[0] == EXIT_ERROR
    assert run(tmp_path, "token", "list")[1] == "no tokens (memoryd token create --agent ID)\n"


def test_create_needs_known_agents_and_a_duration(tmp_path: Path) -> None:
    assert run(tmp_path, "token", "create")[0] == EXIT_USAGE
    assert run(tmp_path, "token", "create", "--agent", "ghost")[0] == EXIT_ERROR
    assert run(tmp_path, "token", "create", "--agent", "main", "--expires", "soon")[0] == EXIT_USAGE
    assert not (tmp_path / "state" / "http-tokens.json").exists()
