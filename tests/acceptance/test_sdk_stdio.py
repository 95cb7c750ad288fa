"""The official MCP Python SDK's `stdio_client`, exactly as a host uses it: its default environment
(HOME, LOGNAME, PATH, SHELL, TERM, USER; no XDG variables) and `memoryd mcp --agent main`.

Before the daemon recorded where it listens, this client missed a daemon a shell had started (it
looked in /tmp/memoryd-<uid>), started a second daemon on the same state directory, and every
tool call answered "agent 'main' is restarting after an error: unhandled errors in a TaskGroup".
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.acceptance.host import MEMORYD, UserHome, make_home

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

SHIM = StdioServerParameters(command=str(MEMORYD), args=["mcp", "--agent", "main"])  # env=None: the SDK's default


def text_of(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


async def host_session(params: StdioServerParameters = SHIM) -> dict[str, Any]:
    """One host session: list the tools, call each, and one call that must be a tool error."""
    with tempfile.TemporaryFile("w+") as errlog, anyio.fail_after(90):
        async with Client(stdio_client(params, errlog=errlog)) as client:
            tools = await client.list_tools()
            found = await client.call_tool("memory_search", {"query": "front door blue"})
            got = await client.call_tool("memory_get", {"path": "MEMORY.md", "from": 3, "lines": 1})
            refused = await client.call_tool("memory_get", {"path": "../../.bashrc"})
            status = await client.call_tool("status", {})
    return {"tools": tools, "found": found, "got": got, "refused": refused, "status": status}


def assert_real_answers(session: dict[str, Any]) -> None:
    assert [t.name for t in session["tools"].tools] == ["memory_search", "memory_get", "status", "memory_write"]
    found = session["found"]
    assert not found.is_error, text_of(found)
    hits = found.structured_content["results"]
    assert [(h["path"], h["startLine"] <= 3 <= h["endLine"]) for h in hits] == [("MEMORY.md", True)]
    assert "The front door is blue." in hits[0]["snippet"]
    got = session["got"]
    assert not got.is_error, text_of(got)
    assert got.structured_content["text"] == "The front door is blue."
    assert (got.structured_content["from"], got.structured_content["totalLines"]) == (
        3,
        5,
    )  # split on "\n", as OpenClaw counts
    refused = session["refused"]
    assert refused.is_error
    assert "../../.bashrc" in text_of(refused) and "TaskGroup" not in text_of(refused)
    status = session["status"]
    assert not status.is_error, text_of(status)
    assert status.structured_content["agent"] == "main"
    assert status.structured_content["daemon"]["agents"] == ["main"]


async def test_a_host_reaches_the_daemon_a_shell_started(user: UserHome) -> None:
    shell_daemon = user.serve_from_shell()
    assert user.record()["socket"] == str(user.runtime / "memoryd" / "memoryd.sock")
    assert_real_answers(await host_session())
    assert user.daemons() == [shell_daemon.pid]  # the host's shim started no second daemon
    assert user.processes("mcp") == []  # and it ended with the host's session


async def test_a_host_with_no_daemon_running_starts_one_and_the_next_session_reuses_it(user: UserHome) -> None:
    assert user.daemons() == []
    assert_real_answers(await host_session())
    record = user.record()
    assert user.daemons() == [record["pid"]]  # started in the background, outliving the session: one per user
    assert (user.state / "daemon.log").read_text().count("memoryd ready") == 1
    assert_real_answers(await host_session())
    assert user.daemons() == [record["pid"]]
    assert user.record() == record
    assert user.processes("mcp") == []


async def test_two_hosts_starting_at_once_get_one_daemon(user: UserHome) -> None:
    sessions: list[dict[str, Any]] = []

    async def one() -> None:
        sessions.append(await host_session())

    async with anyio.create_task_group() as tg:
        tg.start_soon(one)
        tg.start_soon(one)
    for session in sessions:
        assert_real_answers(session)
    assert user.daemons() == [user.record()["pid"]]
    log = Path(user.state / "daemon.log").read_text()
    assert log.count("memoryd ready") == 1, log


DEFAULTS_CONFIG = '[agents.main]\nworkspace = "~/notes"\n'
"""Every setting at its default: the packaged local model, hybrid search, min_score and min_evidence."""


async def test_a_host_on_the_defaults_gets_hybrid_answers_and_no_match_off_topic(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 14 as an MCP host sees it: a paraphrase is answered, a question about something the notes never
    mention is an empty answer (with its evidence) although it shares a word with a note, and `minScore` 0
    still shows the ranking."""
    user = make_home(tmp_path_factory.mktemp("u"), config=DEFAULTS_CONFIG)
    monkeypatch.setenv("HOME", str(user.home))
    try:
        with tempfile.TemporaryFile("w+") as errlog, anyio.fail_after(120):
            async with Client(stdio_client(SHIM, errlog=errlog)) as client:
                while True:  # the model loads in the background; the deadline above bounds the wait
                    status = (await client.call_tool("status", {})).structured_content
                    embedding = status["embedding"]
                    progress = status.get("progress") or {}
                    # Keyword first: the notes are searchable before their vectors; wait for the vectors too.
                    indexed = status.get("files", 0) > 0 and progress.get("phase") == "idle"
                    if indexed and embedding["state"] == "ready" and embedding.get("filesWithoutVectors", 0) == 0:
                        break
                    await anyio.sleep(0.2)
                ask = {"query": "which database did we pick for the billing move", "waitFresh": 10000}
                found = (await client.call_tool("memory_search", ask)).structured_content
                off = (
                    await client.call_tool("memory_search", {"query": "is the blue whale the largest animal"})
                ).structured_content
                ranking = await client.call_tool(
                    "memory_search", {"query": "is the blue whale the largest animal", "minScore": 0}
                )
    finally:
        user.stop_everything()
    assert found["mode"] == "hybrid" and found["provider"] == "local"
    assert [r["path"] for r in found["results"]][:1] == ["memory/2026-01-05.md"]
    assert found["evidence"] >= 0.12
    assert (off["mode"], off["results"]) == ("hybrid", [])
    assert off["evidence"] < 0.12
    ranked = ranking.structured_content["results"]  # the ranking as it is: "blue" is in MEMORY.md
    assert [r["path"] for r in ranked][:1] == ["MEMORY.md"], text_of(ranking)
