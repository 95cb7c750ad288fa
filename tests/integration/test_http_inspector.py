"""The official MCP Inspector's CLI (`--transport http`) against the daemon's HTTP face, with a token.

The Inspector is the one `make test` installs (`make inspector`); without it these checks skip, saying so.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import Http

pytestmark = pytest.mark.integration

INSPECTOR = Path(__file__).resolve().parents[2] / ".inspector" / "node_modules" / ".bin" / "mcp-inspector"


def inspect(
    home: Path, url: str, token: str | None, method: str, tool: str | None = None, **arguments: Any
) -> tuple[int, str]:
    """One Inspector run (`--cli --format json`): its exit status and what it printed."""
    if not INSPECTOR.exists():
        pytest.skip(f"the MCP Inspector is not installed at {INSPECTOR} (make inspector could not install it)")
    call = ["--tool-name", tool, "--tool-args-json", json.dumps(arguments)] if tool else []
    auth = ["--header", f"Authorization: Bearer {token}"] if token else []
    command = [str(INSPECTOR), "--cli", "--format", "json", "--transport", "http", "--server-url", url]
    out = subprocess.run(
        [*command, *auth, "--method", method, *call],
        env={"PATH": f"{INSPECTOR.parent}:/usr/bin:/bin", "HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    return out.returncode, (out.stdout.strip() or out.stderr.strip())


def result_of(printed: str) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(printed.splitlines()[0])
    result: dict[str, Any] = parsed["result"]
    return result


def test_the_inspector_calls_every_tool_over_http_with_a_token(http: Http, tmp_path: Path) -> None:
    token = http.token("alpha")
    code, listed = inspect(tmp_path, http.url, token, "tools/list")
    assert code == 0, listed
    assert [t["name"] for t in result_of(listed)["tools"]] == ["memory_search", "memory_get", "status", "memory_write"]
    code, found = inspect(tmp_path, http.url, token, "tools/call", "memory_search", query="bees roof", minScore=0)
    assert code == 0, found
    assert [h["path"] for h in result_of(found)["structuredContent"]["results"]] == ["MEMORY.md"]
    code, got = inspect(
        tmp_path, http.url, token, "tools/call", "memory_get", path="MEMORY.md", **{"from": 3, "lines": 1}
    )
    assert code == 0, got
    assert result_of(got)["structuredContent"]["text"] == "The alpha agent keeps bees on the roof."
    code, status = inspect(tmp_path, http.url, token, "tools/call", "status")
    assert code == 0, status
    assert result_of(status)["structuredContent"]["agent"] == "alpha"
    code, wrote = inspect(
        tmp_path, http.url, token, "tools/call", "memory_write", text="The Inspector says the hive is calm."
    )
    assert code == 0, wrote
    assert result_of(wrote)["structuredContent"]["path"].startswith("memory/")


def test_the_inspector_is_refused_without_a_token_or_with_another_agents(http: Http, tmp_path: Path) -> None:
    beta = http.token("beta")
    for url, token in ((http.url, None), (f"{http.url}/alpha", beta)):
        code, printed = inspect(tmp_path, url, token, "tools/list")
        assert code != 0
        assert any(word in printed for word in ("401", "403", "auth_required")), printed
        assert "bees" not in printed
