"""memory_write through the real daemon and the MCP SDK's own client (socket, and the stdio shims).

The agents here have no watcher and no search-triggered syncs (`sync.watch = false`,
`sync.on_search = false`): when a search right after a write finds the entry, it was the write's own
sync that indexed it.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import TextContent

from memoryd.server.client import unix_client
from tests.conftest import write
from tests.integration.daemon_fixture import Daemon
from tests.privileges import NO_DAC
from tests.sources.secret_formats import TOKENS, pem

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

CONFIG = """
[defaults]
provider = "none"
[defaults.sync]
watch = false
on_search = false
[agents.main]
workspace = "{root}/main"
[agents.quiet]
workspace = "{root}/quiet"
tools = {{ write = false }}
"""
STAMP = re.compile(r"^_\d{4}-\d\d-\d\d \d\d:\d\d [+-]\d\d:\d\d_$")


def make_daemon(root: Path, *, wrapper: tuple[str, ...] = (), log_level: str = "info") -> Daemon:
    write(root / "main" / "MEMORY.md", "# Memory\n\nThe lighthouse keeper feeds the gulls.\n")
    write(root / "quiet" / "MEMORY.md", "# Quiet\n\nNothing to add.\n")
    config = write(root / "config.toml", CONFIG.format(root=root))
    env = {**os.environ, "XDG_RUNTIME_DIR": str(root / "rt")}
    env.pop("MEMORYD_CRASH_AT", None)
    d = Daemon(root, config, root / "state", root / "rt" / "memoryd" / "memoryd.sock", env, wrapper=wrapper)
    d.start(log_level=log_level)
    return d


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    d = make_daemon(tmp_path)
    yield d
    d.stop()


def text_of(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def call(sock: Path, tool: str, arguments: dict[str, Any], agent: str = "main") -> Any:
    async with Client(unix_client(sock, agent)) as client:
        return await client.call_tool(tool, arguments)


async def saved(sock: Path, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await call(sock, "memory_write", arguments)
    assert not result.is_error, text_of(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def found(sock: Path, query: str) -> list[tuple[str, str]]:
    result = await call(sock, "memory_search", {"query": query, "minScore": 0, "maxResults": 20})
    return [(r["path"], r["snippet"]) for r in result.structured_content["results"]]


def entries(text: str) -> list[str]:
    """The entries of a note: each block that starts with a time stamp line, without that line."""
    blocks = text.split("\n\n")
    return ["\n".join(b.split("\n")[1:]).rstrip("\n") for b in blocks if STAMP.match(b.split("\n")[0])]


def check_structure(text: str, title: str, headings: set[str]) -> None:
    """Valid markdown of the shape memory_write makes: the title, then blocks one blank line apart, each a
    `## heading` it was asked for or an entry (time stamp line + text); no stray blank lines."""
    assert text.startswith(f"# {title}\n\n")
    assert text.endswith("\n") and not text.endswith("\n\n")
    for block in text[len(f"# {title}\n\n") :].rstrip("\n").split("\n\n"):
        first = block.split("\n")[0]
        if first.startswith("#"):
            assert first.removeprefix("## ") in headings and "\n" not in block, block
        else:
            assert STAMP.match(first), block


async def test_a_write_is_searchable_the_moment_its_reply_arrives_and_cites_its_own_lines(daemon: Daemon) -> None:
    sock = daemon.socket
    with anyio.fail_after(30):
        daily = await saved(sock, {"text": "The zanzibar launch moved to March.", "heading": "Decisions"})
        assert await found(sock, "zanzibar") != []
        long_term = await saved(sock, {"text": "Ada prefers quokka-themed names.", "target": "long-term"})
        hits = await found(sock, "quokka")
        cited = await call(
            sock,
            "memory_get",
            {
                "path": daily["path"],
                "from": daily["startLine"],
                "lines": daily["endLine"] - daily["startLine"] + 1,
            },
        )
    assert re.fullmatch(r"memory/\d{4}-\d\d-\d\d\.md", daily["path"])
    assert daily["citation"] == f"{daily['path']}#L{daily['startLine']}-L{daily['endLine']}"
    assert (daily["startLine"], daily["createdFile"], daily["createdHeading"], daily["indexed"]) == (
        5,
        True,
        True,
        True,
    )
    assert STAMP.match(cited.structured_content["text"].split("\n")[0])
    assert cited.structured_content["text"].split("\n")[1] == "The zanzibar launch moved to March."
    assert (long_term["path"], long_term["startLine"], long_term["createdFile"]) == ("MEMORY.md", 5, False)
    assert [path for path, _ in hits] == ["MEMORY.md"]
    ws = daemon.root / "main"
    assert (ws / "MEMORY.md").read_text().startswith("# Memory\n\nThe lighthouse keeper feeds the gulls.\n\n_")
    check_structure((ws / daily["path"]).read_text(), daily["path"][7:17], {"Decisions"})


async def test_ten_clients_writing_at_once_each_entry_lands_once_where_its_reply_says(daemon: Daemon) -> None:
    sock = daemon.socket
    replies: list[tuple[str, str, dict[str, Any]]] = []

    async def client(n: int) -> None:
        async with Client(unix_client(sock, "main")) as c:
            for k in range(4):
                word = f"heron{n}x{k}"
                text = f"Client {n} fact {k}: the {word} nests by the weir."
                arguments: dict[str, Any] = {"text": text}
                if k % 2:
                    arguments["heading"] = ("Decisions", "People")[n % 2]
                if k == 3:
                    arguments["target"] = "long-term"
                result = await c.call_tool("memory_write", arguments)
                assert not result.is_error, text_of(result)
                replies.append((text, word, result.structured_content))

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for n in range(10):
                tg.start_soon(client, n)
        searched = {word: await found(sock, word) for _, word, _ in replies}
    ws = daemon.root / "main"
    daily_path = next(reply["path"] for _, _, reply in replies if reply["target"] == "daily")
    daily, long_term = (ws / daily_path).read_text(), (ws / "MEMORY.md").read_text()
    assert sorted(entries(daily) + entries(long_term)) == sorted(text for text, _, _ in replies)  # each once
    assert len(replies) == 40
    check_structure(daily, daily_path[7:17], {"Decisions", "People"})
    for text, word, reply in replies:
        lines = (daily if reply["target"] == "daily" else long_term).split("\n")
        assert lines[reply["startLine"] - 1 : reply["endLine"]][1:] == [text]
        assert reply["indexed"] is True
        assert {path for path, _ in searched[word]} == {reply["path"]}


EDITOR = """
import fcntl, os, sys
path, mode, stop = sys.argv[1], sys.argv[2], sys.argv[3]
folder = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY)
edits = 0
print("ready", flush=True)
while not os.path.exists(stop) or edits < 50:
    seen = os.stat(path)  # before reading: whatever changes after this, its check below sees
    with open(path, "rb") as fh:
        loaded = fh.read()
    lines = loaded.split(b"\\n")
    new = b"\\n".join([*lines[:2], b"edit %d by hand" % edits, b"", *lines[2:]])
    if mode == "rename":
        with open(path + ".swp", "wb") as fh:
            fh.write(new)
            os.fsync(fh.fileno())
    fcntl.flock(folder, fcntl.LOCK_EX)  # its look at the disk and its save, at once
    now = os.stat(path)
    if (now.st_ino, now.st_size, now.st_mtime_ns) == (seen.st_ino, seen.st_size, seen.st_mtime_ns):
        if mode == "rename":
            os.replace(path + ".swp", path)
        else:
            with open(path, "r+b") as fh:
                fh.truncate(0)
                fh.write(new)
        edits += 1
    fcntl.flock(folder, fcntl.LOCK_UN)  # changed on disk since it loaded: load again, as editors do
print(edits, flush=True)
"""
"""An editor inserting a line near the top of the note, again and again, saving by rename or in place. Like
vim or VS Code it does not save over a file that changed on disk since it loaded it; its last look at the
disk and its save happen under memoryd's folder lock, so the test does not depend on how close two
processes come (without it, an entry is lost only if memoryd's whole write falls between that look and
that save — as any program's change would be)."""


@pytest.mark.parametrize("mode", ["rename", "in place"])
async def test_writes_while_an_editor_keeps_saving_the_note_lose_nothing(daemon: Daemon, mode: str) -> None:
    sock = daemon.socket
    with anyio.fail_after(30):
        first = await saved(sock, {"text": "Before the editor opened the note."})
    note = daemon.root / "main" / first["path"]
    stop = daemon.root / "stop-editing"
    written: list[str] = []

    async def client(n: int) -> None:
        async with Client(unix_client(sock, "main")) as c:
            for k in range(5):
                text = f"Entry {n}.{k} written during edits."
                arguments: dict[str, Any] = {"text": text, **({"heading": "Log"} if k % 2 else {})}
                result = await c.call_tool("memory_write", arguments)
                assert not result.is_error, text_of(result)
                written.append(text)

    with anyio.fail_after(120):
        async with await anyio.open_process(
            [sys.executable, "-c", EDITOR, str(note), mode, str(stop)], stdout=subprocess.PIPE
        ) as editor:
            assert editor.stdout is not None
            output = BufferedByteReceiveStream(editor.stdout)
            assert await output.receive_until(b"\n", 100) == b"ready"
            try:
                async with anyio.create_task_group() as tg:
                    for n in range(10):
                        tg.start_soon(client, n)
            finally:
                stop.touch()
            out = await output.receive_until(b"\n", 100)
    edits = int(out)
    text = note.read_text()
    assert sorted(entries(text)) == sorted(["Before the editor opened the note.", *written])
    for k in range(edits):
        assert text.count(f"edit {k} by hand\n") == 1
    assert edits >= 50


def _secrets() -> list[tuple[str, str, list[str]]]:
    r = random.Random(15)
    key = pem(r)
    jwt = TOKENS["jwt"](r)
    return [
        (f"Deploy with {TOKENS['github ghp_'](r)}", "github-token", []),
        (f"claude key {TOKENS['anthropic sk-ant-'](r)}", "anthropic-key", []),
        (key.text, "private-key", list(key.secrets)),
        ("the wifi: my password is Sunflower77!blue", "password-in-prose", ["Sunflower77!blue"]),
        ("prod db postgres://admin:Xk9mQ2vLp4@db.internal:5432/app", "url-password", ["Xk9mQ2vLp4"]),
        (f"session {jwt}", "jwt", [jwt]),
        (f"export STRIPE_KEY={TOKENS['stripe sk_live_'](r)}", "stripe-key", []),
    ]


async def test_secrets_are_refused_by_kind_and_appear_in_neither_the_reply_nor_the_file_nor_the_log(
    tmp_path: Path,
) -> None:
    daemon = make_daemon(tmp_path, log_level="debug")
    try:
        refusals: list[tuple[str, str, list[str]]] = []
        with anyio.fail_after(60):
            for text, kind, parts in _secrets():
                result = await call(daemon.socket, "memory_write", {"text": text, "target": "long-term"})
                assert result.is_error and result.structured_content is None
                refusals.append((text_of(result), kind, parts or [text.split()[-1]]))
            heading = await call(daemon.socket, "memory_write", {"text": "fine", "heading": _secrets()[0][0]})
    finally:
        daemon.stop()
    log = daemon.log_text()
    assert heading.is_error and "github-token" in text_of(heading)
    for reply, kind, secrets in refusals:
        assert kind in reply and "never saves secrets" in reply
        for secret in secrets:
            assert secret not in reply and secret not in log
    assert (tmp_path / "main" / "MEMORY.md").read_text() == "# Memory\n\nThe lighthouse keeper feeds the gulls.\n"
    assert not (tmp_path / "main" / "memory").exists()
    assert log.count("tool_error") >= len(refusals)


async def test_symlinks_and_an_unwritable_workspace_are_refused_as_an_ordinary_user_would_be(tmp_path: Path) -> None:
    outside = write(tmp_path / "elsewhere" / "notes.md", "not memoryd's to touch\n")
    daemon = make_daemon(tmp_path, wrapper=NO_DAC)
    ws = tmp_path / "main"
    try:
        (ws / "MEMORY.md").unlink()
        (ws / "MEMORY.md").symlink_to(outside)
        (ws / "memory").symlink_to(outside.parent)
        with anyio.fail_after(30):
            long_term = await call(daemon.socket, "memory_write", {"text": "x", "target": "long-term"})
            daily = await call(daemon.socket, "memory_write", {"text": "x"})
        (ws / "memory").unlink()
        ws.chmod(0o555)
        try:
            with anyio.fail_after(30):
                unwritable = await call(daemon.socket, "memory_write", {"text": "x"})
                still_serving = await call(daemon.socket, "memory_search", {"query": "anything"})
        finally:
            ws.chmod(0o755)
        with anyio.fail_after(30):
            after = await call(daemon.socket, "memory_write", {"text": "Writable again."})
    finally:
        daemon.stop()
    assert long_term.is_error and text_of(long_term).endswith(
        "MEMORY.md is a symlink; memory_write does not write through symlinks"
    )
    assert daily.is_error and text_of(daily).endswith(
        "memory is a symlink; memory_write does not write through symlinks"
    )
    assert unwritable.is_error and "Permission denied (the workspace is not writable by memoryd)" in text_of(unwritable)
    assert not still_serving.is_error
    assert not after.is_error
    assert outside.read_text() == "not memoryd's to touch\n"
    assert [p.name for p in (ws / "memory").iterdir()] == [Path(after.structured_content["path"]).name]


async def test_write_turned_off_is_not_listed_and_a_call_says_so(daemon: Daemon) -> None:
    with anyio.fail_after(30):
        async with (
            Client(unix_client(daemon.socket, "quiet")) as quiet,
            Client(unix_client(daemon.socket, "main")) as main,
        ):
            quiet_tools = [t.name for t in (await quiet.list_tools()).tools]
            main_tools = [t.name for t in (await main.list_tools()).tools]
            refused = await quiet.call_tool("memory_write", {"text": "Remember me."})
    assert quiet_tools == ["memory_search", "memory_get", "status"]
    assert main_tools == ["memory_search", "memory_get", "status", "memory_write"]
    assert refused.is_error
    assert text_of(refused) == "memory_write is turned off for agent 'quiet' (tools.write = false in its configuration)"
    assert not (daemon.root / "quiet" / "memory").exists()


async def test_the_standalone_server_writes_and_finds_the_entry(tmp_path: Path) -> None:
    write(tmp_path / "main" / "MEMORY.md", "# Memory\n")
    config = write(tmp_path / "config.toml", CONFIG.format(root=tmp_path))
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memoryd", "mcp", "--standalone", "--agent", "main", "--config", str(config)],
        env={"HOME": str(tmp_path), "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    )
    with anyio.fail_after(60):
        async with Client(stdio_client(server)) as client:
            reply = await client.call_tool(
                "memory_write", {"text": "The standalone server saves too.", "target": "long-term"}
            )
            hits = await client.call_tool("memory_search", {"query": "standalone server saves", "minScore": 0})
    assert not reply.is_error, text_of(reply)
    assert reply.structured_content["citation"] == "MEMORY.md#L3-L4"
    assert [r["path"] for r in hits.structured_content["results"]] == ["MEMORY.md"]
