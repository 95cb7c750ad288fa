"""The MCP edge seen by the SDK's own client over the real Unix socket."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, TextContent

from memoryd.errors import DaemonError, NotFoundError
from memoryd.server import client as memoryd_client
from memoryd.server.client import request_sync, unix_client
from memoryd.server.schemas import TOOL_NAMES, protocol_dir
from memoryd.server.unix import serve_unix
from tests.server.fakes import FakeMemoryService
from tests.server.wire import raw_client

pytestmark = pytest.mark.anyio

MODES = ["auto", "legacy"]


def _text(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


@pytest.mark.parametrize("mode", MODES)
async def test_tools_list_serves_the_protocol_files_verbatim(daemon: Path, mode: str) -> None:
    with anyio.fail_after(10):
        async with Client(unix_client(daemon, "alpha"), mode=mode) as client:
            listing = await client.list_tools()
    assert [tool.name for tool in listing.tools] == list(TOOL_NAMES)
    for tool in listing.tools:
        input_schema = json.loads((protocol_dir() / f"{tool.name}.input.json").read_text())
        output_schema = json.loads((protocol_dir() / f"{tool.name}.output.json").read_text())
        assert tool.input_schema == input_schema
        assert tool.output_schema == output_schema
        assert tool.description == input_schema["description"]
        assert tool.annotations is not None and tool.annotations.open_world_hint is False
        writes = tool.name == "memory_write"
        assert tool.annotations.read_only_hint is not writes
        if writes:
            assert tool.annotations.destructive_hint is False  # append-only: never rewrites or deletes


@pytest.mark.parametrize("mode", MODES)
async def test_search_get_and_status_round_trip_and_match_the_output_schemas(daemon: Path, mode: str) -> None:
    # The SDK client checks structured_content against each tool's output schema and raises if it
    # does not match, so these calls are also the contract test of protocol/*.output.json.
    with anyio.fail_after(10):
        async with Client(unix_client(daemon, "alpha"), mode=mode) as client:
            search = await client.call_tool("memory_search", {"query": "door", "maxResults": 3})
            get = await client.call_tool("memory_get", {"path": "MEMORY.md", "from": 2, "lines": 1})
            status = await client.call_tool("status", {"deep": True})
    for result in (search, get, status):
        assert not result.is_error
        assert json.loads(_text(result)) == result.structured_content
    assert search.structured_content["results"][0]["snippet"] == "The alpha door is blue."
    assert get.structured_content == {
        "path": "MEMORY.md",
        "text": "The alpha door is blue.",
        "from": 2,
        "lines": 1,
        "totalLines": 3,
    }
    assert status.structured_content["agent"] == "alpha"


async def test_a_result_that_breaks_its_output_schema_is_caught_by_the_client(socket_path: Path) -> None:
    class BrokenStatus(FakeMemoryService):
        async def status(self, agent: str, *, deep: bool) -> dict[str, object]:
            return {"agent": agent}

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await tg.start(partial(serve_unix, BrokenStatus(), socket_path))
            async with Client(unix_client(socket_path, "alpha")) as client:
                with pytest.raises(RuntimeError, match="Invalid structured content"):
                    await client.call_tool("status", {})
            tg.cancel_scope.cancel()


async def test_arguments_reach_the_service_with_schema_defaults(daemon: Path, service: FakeMemoryService) -> None:
    with anyio.fail_after(10):
        async with Client(unix_client(daemon, "beta")) as client:
            await client.call_tool("memory_search", {"query": "door"})
            await client.call_tool(
                "memory_search",
                {
                    "query": "red",
                    "maxResults": 2,
                    "minScore": 1,
                    "corpus": "sessions",
                    "waitFresh": 250,
                    "sessionKey": "agent:beta:discord:channel:42",
                },
            )
            await client.call_tool("memory_get", {"path": "MEMORY.md"})
            await client.call_tool("status", {})
    defaults = {"max_results": None, "min_score": None, "corpus": "all", "wait_fresh_ms": None, "session_key": None}
    given = {
        "max_results": 2,
        "min_score": 1.0,
        "corpus": "sessions",
        "wait_fresh_ms": 250,
        "session_key": "agent:beta:discord:channel:42",
    }
    assert [(call.method, call.agent, call.arguments) for call in service.calls] == [
        ("search", "beta", {"query": "door", **defaults}),
        ("search", "beta", {"query": "red", **given}),
        ("get", "beta", {"path": "MEMORY.md", "from_line": None, "lines": None}),
        ("status", "beta", {"deep": False}),
    ]
    assert isinstance(service.calls[1].arguments["min_score"], float)


async def test_two_connections_bound_to_different_agents_never_see_each_others_data(
    daemon: Path, service: FakeMemoryService
) -> None:
    with anyio.fail_after(10):
        async with (
            Client(unix_client(daemon, "alpha")) as alpha,
            Client(unix_client(daemon, "beta"), mode="legacy") as beta,
        ):
            alpha_hits = await alpha.call_tool("memory_search", {"query": "door"})
            beta_hits = await beta.call_tool("memory_search", {"query": "door"})
            alpha_file = await alpha.call_tool("memory_get", {"path": "MEMORY.md"})
            beta_file = await beta.call_tool("memory_get", {"path": "MEMORY.md"})
            beta_status = await beta.call_tool("status", {})
    assert [hit["snippet"] for hit in alpha_hits.structured_content["results"]] == ["The alpha door is blue."]
    assert [hit["snippet"] for hit in beta_hits.structured_content["results"]] == ["The beta door is red."]
    assert "beta" not in alpha_file.structured_content["text"].lower()
    assert "alpha" not in beta_file.structured_content["text"].lower()
    assert beta_status.structured_content["agent"] == "beta"
    assert {(call.agent, call.method) for call in service.calls} == {
        ("alpha", "search"),
        ("alpha", "get"),
        ("beta", "search"),
        ("beta", "get"),
        ("beta", "status"),
    }


async def test_an_agent_argument_is_refused_and_never_reaches_the_service(
    daemon: Path, service: FakeMemoryService
) -> None:
    with anyio.fail_after(10):
        async with Client(unix_client(daemon, "alpha")) as client:
            result = await client.call_tool("memory_search", {"query": "door", "agent": "beta"})
    assert result.is_error
    assert "agent" in _text(result)
    assert service.calls == []


async def test_an_unbound_connection_to_two_agents_gets_a_tool_error_listing_them(daemon: Path) -> None:
    with anyio.fail_after(10):
        async with Client(unix_client(daemon)) as client:
            result = await client.call_tool("status", {})
    assert result.is_error
    assert "alpha, beta" in _text(result)
    assert "memoryd/bind" in _text(result)


async def test_an_unbound_connection_to_a_single_agent_uses_it(socket_path: Path) -> None:
    single = FakeMemoryService(notes={"solo": {"MEMORY.md": "Solo notes.\n"}})
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await tg.start(partial(serve_unix, single, socket_path))
            async with Client(unix_client(socket_path)) as client:
                result = await client.call_tool("status", {})
            tg.cancel_scope.cancel()
    assert not result.is_error
    assert result.structured_content["agent"] == "solo"


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("memory_search", {"query": "door", "maxResults": "ten"}, "maxResults"),
        ("memory_search", {"query": "door", "maxResults": 0}, "maxResults"),
        ("memory_search", {"query": "door", "minScore": 1.5}, "minScore"),
        ("memory_search", {"query": "door", "corpus": "wiki"}, "corpus"),
        ("memory_search", {"query": "door", "waitFresh": 60001}, "waitFresh"),
        ("memory_search", {"query": "   "}, "query"),
        ("memory_search", {"query": 42}, "query"),
        ("memory_search", {}, "query"),
        ("memory_get", {"path": "MEMORY.md", "from": 0}, "from"),
        ("memory_get", {"path": "MEMORY.md", "lines": "3"}, "lines"),
        ("memory_get", {"path": "MEMORY.md", "line": 3}, "line"),
        ("status", {"deep": "yes"}, "deep"),
        ("memory_write", {}, "text"),
        ("memory_write", {"text": "  \n "}, "text"),
        ("memory_write", {"text": "x" * 16385}, "text"),
        ("memory_write", {"text": "note", "target": "weekly"}, "target"),
        ("memory_write", {"text": "note", "heading": ""}, "heading"),
        ("memory_write", {"text": "note", "path": "MEMORY.md"}, "path"),
    ],
)
async def test_wrong_arguments_are_tool_errors_naming_the_field(
    daemon: Path, service: FakeMemoryService, tool: str, arguments: dict[str, Any], field: str
) -> None:
    with anyio.fail_after(10):
        async with Client(unix_client(daemon, "alpha")) as client:
            result = await client.call_tool(tool, arguments)
    assert result.is_error
    assert _text(result).startswith(f"invalid arguments: {field} ")
    assert service.calls == []


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("memory_get", {"path": "../../etc/passwd"}, "../../etc/passwd is outside the memory roots"),
        ("memory_get", {"path": "memory/missing.md"}, "no memory file memory/missing.md"),
        ("memory_search", {"query": "explode"}, "internal error"),
    ],
)
async def test_service_failures_become_tool_errors(
    daemon: Path, tool: str, arguments: dict[str, Any], message: str
) -> None:
    with anyio.fail_after(10):
        async with Client(unix_client(daemon, "alpha")) as client:
            result = await client.call_tool(tool, arguments)
            after = await client.call_tool("status", {})
    assert result.is_error
    assert _text(result) == message
    assert not after.is_error


async def test_an_unknown_tool_is_a_protocol_error(daemon: Path) -> None:
    with anyio.fail_after(10):
        async with Client(unix_client(daemon, "alpha")) as client:
            with pytest.raises(MCPError) as caught:
                await client.call_tool("memory_delete", {})
    assert caught.value.code == INVALID_PARAMS
    assert "memory_delete" in caught.value.message


async def test_memory_write_reaches_the_service_with_its_defaults(daemon: Path, service: FakeMemoryService) -> None:
    with anyio.fail_after(10):
        async with Client(unix_client(daemon, "alpha")) as client:
            daily = await client.call_tool("memory_write", {"text": "We chose Postgres."})
            long_term = await client.call_tool(
                "memory_write", {"text": "Ada prefers tabs.", "target": "long-term", "heading": "Preferences"}
            )
    assert not daily.is_error and not long_term.is_error
    assert daily.structured_content["citation"] == "memory/2025-01-31.md#L1-L2"
    assert [(call.method, call.agent, call.arguments) for call in service.calls] == [
        ("write", "alpha", {"text": "We chose Postgres.", "target": "daily", "heading": None}),
        ("write", "alpha", {"text": "Ada prefers tabs.", "target": "long-term", "heading": "Preferences"}),
    ]


async def test_memory_write_turned_off_is_not_listed_and_a_call_says_why(
    daemon: Path, service: FakeMemoryService
) -> None:
    service.write_off.add("beta")
    with anyio.fail_after(10):
        async with Client(unix_client(daemon, "beta")) as beta, Client(unix_client(daemon, "alpha")) as alpha:
            beta_tools = [tool.name for tool in (await beta.list_tools()).tools]
            alpha_tools = [tool.name for tool in (await alpha.list_tools()).tools]
            refused = await beta.call_tool("memory_write", {"text": "Remember this."})
    assert beta_tools == ["memory_search", "memory_get", "status"]
    assert alpha_tools == list(TOOL_NAMES)
    assert refused.is_error
    assert _text(refused) == "memory_write is turned off for agent 'beta' (tools.write = false)"
    assert service.notes["beta"] == {"MEMORY.md": "# Beta\nThe beta door is red.\n"}


async def test_binding_an_unknown_agent_is_refused_with_the_known_ones(daemon: Path) -> None:
    refusal = "unknown agent 'gamma'; this daemon serves: alpha, beta"
    with anyio.fail_after(10), pytest.raises(NotFoundError, match=refusal):
        async with unix_client(daemon, "gamma"):
            pass


async def test_memoryd_sync_runs_for_the_bound_agent(daemon: Path, service: FakeMemoryService) -> None:
    with anyio.fail_after(10):
        report = await request_sync(daemon, "beta", force=True)
    assert report == {"agent": "beta", "force": True, "reason": "cli", "indexed": 1}
    assert [(call.method, call.agent) for call in service.calls] == [("sync", "beta")]


async def test_memoryd_sync_on_an_unbound_connection_is_a_memoryd_error(daemon: Path) -> None:
    with anyio.fail_after(10), pytest.raises(memoryd_client.DaemonRequestError, match="alpha, beta") as caught:
        await request_sync(daemon, None, force=False)
    assert caught.value.code == -32010


async def test_call_tool_convenience_returns_the_tool_result(daemon: Path) -> None:
    with anyio.fail_after(10):
        result = await memoryd_client.call_tool(daemon, "beta", "memory_search", {"query": "red"})
    assert not result.is_error
    assert result.structured_content["results"][0]["snippet"] == "The beta door is red."


async def test_transcript_updated_notifications_reach_the_bound_agent(daemon: Path, service: FakeMemoryService) -> None:
    with anyio.fail_after(10):
        async with raw_client(daemon) as client:
            await client.send({"jsonrpc": "2.0", "method": "memoryd/bind", "params": {"agent": "beta"}})
            await client.initialize()
            await client.send(
                {"jsonrpc": "2.0", "method": "memoryd/transcriptUpdated", "params": {"path": "sessions/s1.jsonl"}}
            )
            await service.transcript_seen.wait()
    assert service.transcripts == [("beta", "sessions/s1.jsonl")]


async def test_call_tool_convenience_reports_a_refused_agent_plainly(daemon: Path) -> None:
    with anyio.fail_after(10), pytest.raises(NotFoundError, match="unknown agent 'gamma'"):
        await memoryd_client.call_tool(daemon, "gamma", "status", {})


async def test_call_tool_convenience_reports_an_absent_daemon_plainly(socket_path: Path) -> None:
    with anyio.fail_after(10), pytest.raises(DaemonError, match="cannot reach the memoryd daemon"):
        await memoryd_client.call_tool(socket_path, "alpha", "status", {})
