"""Hypothesis against the live socket of a real daemon, and random bytes in the files it indexes.

Every case sends something malformed — random JSON, JSON-RPC with wrong types, tool calls with
wrong arguments, huge strings, deep nesting, invalid UTF-8, partial lines, connections dropped
mid-request — and then a well-formed search on a fresh connection must still be answered. The
daemon must never die nor log an unexpected error. Transcripts and notes made of random bytes
must never break a sync.
"""

from __future__ import annotations

import json
import os
import socket
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import transcript_line, write
from tests.integration.daemon_fixture import Daemon
from tests.survival.conftest import FIGURES

pytestmark = pytest.mark.integration

MAX_LINE = 4 * 1024 * 1024  # daemon.max_line_bytes default
CONFIG = """
[defaults]
provider = "none"
[defaults.sync]
watch = false
[agents.main]
workspace = "{ws}"
"""
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "0"}},
}
UNEXPECTED = ("connection_failed", "tool_failed", "sync_failed", "Traceback", "internal error")
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FUZZ_SLOW = settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class Line:
    """A blocking newline-delimited JSON client (hypothesis tests are synchronous)."""

    def __init__(self, path: Path, timeout: float = 30.0) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(str(path))
        self.buffer = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send_json(self, message: object) -> None:
        self.send(json.dumps(message).encode() + b"\n")

    def receive(self) -> dict[str, Any] | None:
        """The next line as JSON; None once the daemon closed the connection."""
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        parsed: dict[str, Any] = json.loads(line)
        return parsed

    def request(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """Send a request and return the reply with its id (None if the daemon closed the connection)."""
        self.send_json(message)
        while (reply := self.receive()) is not None:
            if reply.get("id") == message["id"]:
                return reply
        return None

    def initialize(self) -> None:
        reply = self.request(INITIALIZE)
        assert reply is not None and "result" in reply, reply
        self.send_json({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def close(self) -> None:
        self.sock.close()


def well_formed_search_is_answered(daemon: Daemon) -> None:
    assert daemon.alive, daemon.log_text()[-3000:]
    client = Line(daemon.socket)
    try:
        client.initialize()
        reply = client.request(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "memory_search", "arguments": {"query": "lighthouse gulls"}},
            }
        )
    finally:
        client.close()
    assert reply is not None and reply["result"]["structuredContent"]["results"][0]["path"] == "MEMORY.md", reply
    no_unexpected_errors(daemon)


def no_unexpected_errors(daemon: Daemon) -> None:
    log = daemon.log_text()
    found = [needle for needle in UNEXPECTED if needle in log]
    assert found == [], log[-4000:]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    home = tmp_path_factory.mktemp("fuzz")
    ws = home / "ws"
    write(ws / "MEMORY.md", "# Memory\n\nThe lighthouse keeper feeds the gulls.\n")
    write(ws / "memory" / "a.md", "Notes about the orchard.\n")
    (ws / "sessions").mkdir()
    config = write(home / "config.toml", CONFIG.format(ws=ws))
    env = {**os.environ, "XDG_RUNTIME_DIR": str(home / "rt"), "HOME": str(home)}
    env.update({f"XDG_{kind}_HOME": str(home / kind.lower()) for kind in ("CONFIG", "STATE", "CACHE", "DATA")})
    env.pop("MEMORYD_CRASH_AT", None)
    d = Daemon(home, config, home / "state", home / "rt" / "memoryd" / "memoryd.sock", env)
    d.start()
    d.wait_for_line("sync done")
    yield d
    if d.alive:
        d.stop()


@pytest.fixture(scope="module")
def cases(request: pytest.FixtureRequest) -> Iterator[Counter[str]]:
    """Cases run per kind, reported in the figures when the module is done."""
    counts: Counter[str] = Counter()
    yield counts
    if counts:
        detail = ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items()))
        request.config.stash.setdefault(FIGURES, []).append(f"fuzz: {sum(counts.values())} cases ({detail})")


# ---------------------------------------------------------------- strategies

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=25,
)
METHODS = st.sampled_from(
    [
        "initialize",
        "tools/call",
        "tools/list",
        "ping",
        "memoryd/bind",
        "memoryd/sync",
        "memoryd/transcriptUpdated",
        "notifications/initialized",
        "notifications/cancelled",
        "resources/list",
        "",
    ]
) | st.text(max_size=30)
IDS = st.none() | st.integers() | st.text(max_size=20) | st.floats(allow_nan=False) | st.booleans() | st.lists(JSON)
ENVELOPES = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", "", 2.0]) | JSON,
        "id": IDS,
        "method": METHODS | JSON,
        "params": JSON,
        "result": JSON,
        "error": JSON,
    },
)
TOOL_ARGUMENTS = (
    st.fixed_dictionaries(
        {},
        optional={
            "query": st.text() | JSON,
            "maxResults": st.integers() | JSON,
            "minScore": st.floats(allow_nan=False) | JSON,
            "corpus": st.sampled_from(["memory", "sessions", "all", "MEMORY"]) | JSON,
            "waitFresh": st.integers(min_value=-5, max_value=1500) | JSON,
            "path": st.text() | JSON,
            "from": st.integers() | JSON,
            "lines": st.integers() | JSON,
            "deep": st.booleans() | JSON,
        },
    )
    | JSON
)
TOOL_CALLS = st.builds(
    lambda name, args, rid: {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": name, "arguments": args},
    },
    st.sampled_from(["memory_search", "memory_get", "status"]) | st.text(max_size=12),
    TOOL_ARGUMENTS,
    st.integers(min_value=1, max_value=10**6),
)


@st.composite
def raw_lines(draw: st.DrawFn) -> bytes:
    """Bytes that are not a (valid) message: invalid UTF-8, truncated JSON, deep nesting, huge lines."""
    kind = draw(st.sampled_from(["binary", "truncated", "nested", "nested-params", "huge", "blank", "utf8"]))
    if kind == "binary":
        return draw(st.binary(min_size=1, max_size=300)).replace(b"\n", b"") + b"\n"
    if kind == "truncated":
        whole = json.dumps(draw(ENVELOPES)).encode()
        return whole[: draw(st.integers(min_value=0, max_value=max(0, len(whole) - 1)))] + b"\n"
    if kind == "nested":
        depth = draw(st.sampled_from([64, 500, 1024, 5000, 200_000]))
        return b"[" * depth + b"]" * depth + b"\n"
    if kind == "nested-params":
        depth = draw(st.sampled_from([50, 200, 900]))
        params = '{"a":' * depth + "1" + "}" * depth
        return f'{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{params}}}\n'.encode()
    if kind == "huge":
        size = draw(st.sampled_from([100_000, MAX_LINE - 200, MAX_LINE + 10, 6 * 1024 * 1024]))
        arguments = {"query": "x" * size}
        message = {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tools/call",
            "params": {"name": "memory_search", "arguments": arguments},
        }
        return json.dumps(message).encode() + b"\n"
    if kind == "blank":
        return draw(st.sampled_from([b"\n", b"\r\n", b"   \n", b"\t\n"]))
    valid = json.dumps(draw(ENVELOPES)).encode()
    return valid.replace(b'"', b"\xff\xfe", 1) + b"\n"


# ---------------------------------------------------------------- protocol fuzzing


SENTINEL = {"jsonrpc": "2.0", "id": "sentinel", "method": "ping"}


def exchange(daemon: Daemon, payload: list[bytes], *, initialize: bool, ending: str) -> None:
    """Send `payload` lines on one connection and end it as `ending` says: "drop" closes at once
    (the daemon may be mid-answer), "half-close" shuts our side and reads what is left, "read" sends
    a ping and reads until its answer (every line before it has had its answer by then)."""
    client = Line(daemon.socket, timeout=30)
    try:
        if initialize:
            client.initialize()
        for data in payload:
            client.send(data)
        if ending == "drop":
            return
        if ending == "half-close":
            client.sock.shutdown(socket.SHUT_WR)
            while client.receive() is not None:
                pass
            return
        client.request(SENTINEL)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the daemon closes a connection whose first message is a refused bind
    finally:
        client.close()


ENDINGS = st.sampled_from(["read", "drop", "half-close"])


def run_message_case(daemon: Daemon, messages: list[object], initialize: bool, ending: str) -> None:
    exchange(daemon, [json.dumps(m).encode() + b"\n" for m in messages], initialize=initialize, ending=ending)
    well_formed_search_is_answered(daemon)


@FUZZ
@given(messages=st.lists(ENVELOPES | JSON, min_size=1, max_size=4), initialize=st.booleans(), ending=ENDINGS)
def test_random_json_rpc_messages_never_hurt_the_daemon(
    daemon: Daemon, cases: Counter[str], messages: list[object], initialize: bool, ending: str
) -> None:
    cases["JSON-RPC messages"] += 1
    run_message_case(daemon, messages, initialize, ending)


@FUZZ
@given(calls=st.lists(TOOL_CALLS, min_size=1, max_size=4), ending=ENDINGS)
def test_tool_calls_with_wrong_arguments_get_errors_not_crashes(
    daemon: Daemon, cases: Counter[str], calls: list[dict[str, Any]], ending: str
) -> None:
    cases["tool calls"] += 1
    run_message_case(daemon, list(calls), True, ending)


@FUZZ
@given(lines=st.lists(raw_lines(), min_size=1, max_size=3), initialize=st.booleans(), ending=ENDINGS)
def test_bytes_that_are_not_messages_never_hurt_the_daemon(
    daemon: Daemon, cases: Counter[str], lines: list[bytes], initialize: bool, ending: str
) -> None:
    cases["raw lines"] += 1
    exchange(daemon, lines, initialize=initialize, ending=ending)
    well_formed_search_is_answered(daemon)


@FUZZ
@given(data=st.binary(max_size=200), cut=st.integers(min_value=0, max_value=200))
def test_partial_lines_and_abrupt_disconnects_never_hurt_the_daemon(
    daemon: Daemon, cases: Counter[str], data: bytes, cut: int
) -> None:
    cases["partial lines/resets"] += 1
    search = json.dumps(
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "status", "arguments": {}}}
    ).encode()
    client = Line(daemon.socket)
    try:
        client.initialize()
        client.send(search[: cut % (len(search) + 1)] + data)  # no newline: a request cut short
    finally:
        client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        client.close()  # with SO_LINGER 0: a reset, not a clean close
    well_formed_search_is_answered(daemon)


def test_a_line_up_to_the_configured_limit_is_read_and_a_longer_one_refused(daemon: Daemon) -> None:
    client = Line(daemon.socket)
    try:
        client.initialize()
        query = "lighthouse " + "x" * (3 * 1024 * 1024)
        accepted = client.request(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "memory_search", "arguments": {"query": query}},
            }
        )
        client.send(b'{"jsonrpc":"2.0","id":2,"method":"ping","pad":"' + b"y" * MAX_LINE + b'"}\n')
        refused = client.receive()
    finally:
        client.close()
    assert accepted is not None and "result" in accepted
    assert refused is not None and "longer than" in refused["error"]["message"]
    well_formed_search_is_answered(daemon)


# ---------------------------------------------------------------- files full of random bytes

TEXTS = st.text(st.characters(codec="utf-8"), max_size=200) | st.text(max_size=50)
CONTENT = st.one_of(
    st.lists(TEXTS | JSON, max_size=4),
    TEXTS,
    JSON,
    st.just([{"type": "text", "text": "sk-" + "A" * 40}]),
)
RECORDS = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["message", "session", "compaction", "custom"]) | JSON,
        "timestamp": st.sampled_from(["2026-01-05T10:00:00Z", "not a date", "9999-99-99T99:99:99Z", ""]) | JSON,
        "message": st.fixed_dictionaries(
            {}, optional={"role": st.sampled_from(["user", "assistant", "system", "tool"]) | JSON, "content": CONTENT}
        )
        | JSON,
    },
)
TRANSCRIPT_LINES = st.one_of(
    RECORDS.map(lambda r: json.dumps(r).encode()),
    st.binary(max_size=120),
    st.just(transcript_line("user", "a plain question").encode()),
    st.integers(min_value=1, max_value=200_000).map(lambda n: b'{"type":"message","message":{"content":"' + b"z" * n),
)
LINE_ENDS = st.sampled_from([b"\n", b"\r\n", b"\r", b""])


@st.composite
def transcripts(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(TRANSCRIPT_LINES, max_size=12))
    return b"".join(line + draw(LINE_ENDS) for line in lines)


def sync_is_clean(daemon: Daemon) -> None:
    client = Line(daemon.socket)
    try:
        reply = client.request({"jsonrpc": "2.0", "id": "s", "method": "memoryd/sync", "params": {"reason": "fuzz"}})
    finally:
        client.close()
    assert reply is not None and reply.get("result", {}).get("error") is None, reply


def files_case(daemon: Daemon, transcript: bytes, note: bytes) -> None:
    ws = daemon.root / "ws"
    (ws / "sessions" / "fuzz.jsonl").write_bytes(transcript)
    (ws / "memory" / "fuzz.md").write_bytes(note)
    sync_is_clean(daemon)
    well_formed_search_is_answered(daemon)


@FUZZ
@given(transcript=transcripts(), note=st.binary(max_size=2000))
def test_transcripts_and_notes_of_random_bytes_never_break_a_sync(
    daemon: Daemon, cases: Counter[str], transcript: bytes, note: bytes
) -> None:
    cases["random files"] += 1
    files_case(daemon, transcript, note)


@pytest.mark.slow
@FUZZ_SLOW
@given(
    messages=st.lists(ENVELOPES | JSON | TOOL_CALLS, min_size=1, max_size=6), initialize=st.booleans(), ending=ENDINGS
)
def test_many_more_random_messages(
    daemon: Daemon, cases: Counter[str], messages: list[object], initialize: bool, ending: str
) -> None:
    cases["JSON-RPC messages"] += 1
    run_message_case(daemon, messages, initialize, ending)


@pytest.mark.slow
@FUZZ_SLOW
@given(lines=st.lists(raw_lines(), min_size=1, max_size=3), initialize=st.booleans(), ending=ENDINGS)
def test_many_more_raw_lines(
    daemon: Daemon, cases: Counter[str], lines: list[bytes], initialize: bool, ending: str
) -> None:
    cases["raw lines"] += 1
    exchange(daemon, lines, initialize=initialize, ending=ending)
    well_formed_search_is_answered(daemon)


@pytest.mark.slow
@FUZZ_SLOW
@given(transcript=transcripts(), note=st.binary(max_size=20_000))
def test_many_more_random_files(daemon: Daemon, cases: Counter[str], transcript: bytes, note: bytes) -> None:
    cases["random files"] += 1
    files_case(daemon, transcript, note)
