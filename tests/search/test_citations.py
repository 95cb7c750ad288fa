"""Citations (spec §4.1): the `Source:` footer, the `citation` field, and `auto`'s direct-chat rule,
checked on the pure functions, through the engine, the CLI and the daemon's MCP tool."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import anyio
import pytest

from memoryd import cli
from memoryd.index.engine import IndexEngine
from memoryd.search.citations import chat_type, decorate, include_citations
from memoryd.search.pipeline import SearchResult
from tests.conftest import AgentFactory, write
from tests.integration.daemon_fixture import Daemon


@pytest.mark.parametrize(
    ("key", "kind"),
    [
        (None, "direct"),
        ("", "direct"),
        ("agent:main:main", "direct"),
        ("agent:main:telegram:direct:42", "direct"),
        ("agent:main:discord:channel:123", "channel"),
        ("agent:main:whatsapp:GROUP:9", "group"),
        ("agent:main:slack:channel:x:thread:group", "channel"),  # channel wins over group, as in OpenClaw
        ("discord:channel:123", "direct"),  # not an agent session key: treated as direct
        ("agent::channel", "direct"),  # no agent id: not a session key
        ("agent:main:channels:1", "direct"),  # tokens are whole ':' parts
    ],
)
def test_chat_type_reads_the_rest_of_an_agent_session_key(key: str | None, kind: str) -> None:
    assert chat_type(key) == kind


def test_modes_on_and_off_ignore_the_session_key_and_auto_follows_it() -> None:
    group = "agent:main:matrix:group:7"
    assert include_citations("on", group) and include_citations("on", None)
    assert not include_citations("off", None) and not include_citations("off", "agent:main:main")
    assert include_citations("auto", None) and include_citations("auto", "agent:main:main")
    assert not include_citations("auto", group)


def test_the_footer_cites_one_line_or_a_range_after_the_trimmed_snippet() -> None:
    one = SearchResult("MEMORY.md", 3, 3, 0.9, "  Biscuit is a dog.\n", "memory")
    many = SearchResult("sessions/s1.jsonl", 2, 4, 0.5, "User: book it", "sessions")
    cited = decorate([one, many], include=True)
    assert [(r.citation, r.snippet) for r in cited] == [
        ("MEMORY.md#L3", "Biscuit is a dog.\n\nSource: MEMORY.md#L3"),
        ("sessions/s1.jsonl#L2-L4", "User: book it\n\nSource: sessions/s1.jsonl#L2-L4"),
    ]
    plain = decorate([one], include=False)
    assert [(r.citation, r.snippet) for r in plain] == [(None, "  Biscuit is a dog.\n")]
    assert plain[0].to_dict()["citation"] is None


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "key", "cited"), [("on", "agent:main:x:group:1", True), ("off", None, False)])
async def test_the_engine_decorates_as_configured(
    workspace: Path, make_agent: AgentFactory, mode: str, key: str | None, cited: bool
) -> None:
    engine = IndexEngine(make_agent(workspace, provider="none", citations=mode))
    await engine.open()
    try:
        await engine.sync("test")
        resp = await engine.search("Lisbon", session_key=key)
    finally:
        engine.close()
    (hit,) = resp.results
    out = resp.to_dict()
    assert out["citations"] == mode
    if cited:
        assert hit.citation == "sessions/s1.jsonl#L2-L4"
        assert hit.snippet.endswith("\n\nSource: sessions/s1.jsonl#L2-L4")
    else:
        assert hit.citation is None and "Source:" not in hit.snippet
        assert out["results"][0]["citation"] is None  # type: ignore[index]


def _cli_search(tmp_path: Path, workspace: Path, citations: str, *extra: str) -> str:
    config = write(tmp_path / "config.toml", f'[defaults]\nprovider = "none"\ncitations = "{citations}"\n')
    out = io.StringIO()
    code = cli.main(
        [
            "search",
            "golden retriever",
            "--config",
            str(config),
            "--workspace",
            str(workspace),
            "--state-dir",
            str(tmp_path / "state"),
            *extra,
        ],
        out=out,
    )
    assert code == 0
    return out.getvalue()


def test_the_cli_json_carries_citations_and_its_text_cites_once(tmp_path: Path, workspace: Path) -> None:
    on = json.loads(_cli_search(tmp_path, workspace, "auto", "--json"))
    assert on["citations"] == "auto"
    assert [(r["citation"], r["snippet"].endswith("\n\nSource: MEMORY.md#L1-L5")) for r in on["results"]] == [
        ("MEMORY.md#L1-L5", True)
    ]
    text = _cli_search(tmp_path, workspace, "on")
    assert text.splitlines()[0].endswith(" MEMORY.md:1-5")  # the location line is the citation...
    assert "Source:" not in text  # ...so the text output does not print it twice (OpenClaw's CLI neither)
    off = json.loads(_cli_search(tmp_path, workspace, "off", "--json"))
    assert off["citations"] == "off"
    assert [(r["citation"], "Source:" in r["snippet"]) for r in off["results"]] == [(None, False)]


@pytest.mark.integration
@pytest.mark.anyio
async def test_the_daemon_leaves_the_footer_out_for_a_channel_session_in_auto_mode(tmp_path: Path) -> None:
    from mcp.client import Client

    from memoryd.server.client import unix_client

    write(tmp_path / "ws" / "MEMORY.md", "# Memory\n\nThe spare key is under the blue flowerpot.\n")
    config = write(
        tmp_path / "config.toml",
        f'[defaults]\nprovider = "none"\n[agents.main]\nworkspace = "{tmp_path / "ws"}"\n',
    )
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "rt")}
    env.pop("MEMORYD_CRASH_AT", None)
    daemon = Daemon(tmp_path, config, tmp_path / "state", tmp_path / "rt" / "memoryd" / "memoryd.sock", env)
    daemon.start()
    try:
        with anyio.fail_after(30):
            async with Client(unix_client(daemon.socket, "main")) as client:
                direct = await client.call_tool("memory_search", {"query": "spare key flowerpot", "waitFresh": 5000})
                room = await client.call_tool(
                    "memory_search",
                    {"query": "spare key flowerpot", "sessionKey": "agent:main:discord:channel:99"},
                )
    finally:
        daemon.stop()
    assert direct.structured_content is not None and room.structured_content is not None
    (d,) = direct.structured_content["results"]
    (r,) = room.structured_content["results"]
    assert d["citation"] == "MEMORY.md#L1-L4"
    assert d["snippet"] == "# Memory\n\nThe spare key is under the blue flowerpot.\n\nSource: MEMORY.md#L1-L4"
    assert r["citation"] is None and "Source:" not in r["snippet"] and "blue flowerpot" in r["snippet"]


def test_the_match_offset_follows_the_stripped_snippet() -> None:
    """The footer's strip() drops leading spaces: `snippetMatchOffset` still points where the match opens."""
    raw = "  earlier line taken back\nthe matching line"
    result = SearchResult("m.md", 1, 9, 0.5, raw, "memory", snippet_lines=(3, 4), snippet_match_at=raw.index("the "))
    (cited,) = decorate([result], include=True)
    wire = cited.to_dict()
    assert cited.snippet.startswith("earlier line") and cited.snippet[cited.snippet_match_at :].startswith("the match")
    assert wire["snippetMatchOffset"] == cited.snippet_match_at
    assert "snippetMatchOffset" not in SearchResult("m.md", 1, 9, 0.5, "x", "memory").to_dict()  # opens on it
