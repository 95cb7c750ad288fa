"""The daemon takes over the listening socket systemd passes as fd 3 (LISTEN_PID / LISTEN_FDS)."""

from __future__ import annotations

import json
import os
import select
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memoryd.errors import DaemonError
from memoryd.service.activation import inherited_unix_listener

# Unless systemd already did (argv "activated"), plays systemd's part after fork: the passed
# descriptor becomes fd 3 and LISTEN_PID names this very process. Then it calls the function under
# test, serves one client and reports what it got as one JSON line.
CHILD = r"""
import json, os, socket, sys
from memoryd.errors import DaemonError
from memoryd.service.activation import inherited_unix_listener

if sys.argv[1] != "activated":
    passed = int(sys.argv[1])
    if passed != 3:
        os.dup2(passed, 3)
        os.close(passed)
    os.environ["LISTEN_PID"] = str(os.getpid())
    os.environ["LISTEN_FDS"] = sys.argv[2]
try:
    listener = inherited_unix_listener()
except DaemonError as exc:
    sys.stdout.write(json.dumps({"error": str(exc)}))
    sys.exit(0)
connection, _ = listener.accept()
connection.sendall(b"served by the activated daemon")
connection.close()
sys.stdout.write(json.dumps({
    "fd": listener.fileno(),
    "inheritable": os.get_inheritable(listener.fileno()),
    "left": sorted(name for name in os.environ if name.startswith("LISTEN_")),
}))
"""


def activated_child(passed: socket.socket | int, count: str = "1") -> subprocess.Popen[str]:
    fd = passed if isinstance(passed, int) else passed.fileno()
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(fd), count], pass_fds=(fd,), stdout=subprocess.PIPE, text=True
    )


def report(child: subprocess.Popen[str]) -> dict[str, Any]:
    out, _ = child.communicate(timeout=30)
    assert child.returncode == 0
    result: dict[str, Any] = json.loads(out)
    return result


@pytest.fixture
def socket_path(tmp_path: Path) -> Path:
    return tmp_path / "memoryd.sock"


def test_the_activated_daemon_accepts_clients_on_the_socket_systemd_opened(socket_path: Path) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(socket_path))
    listener.listen()
    child = activated_child(listener)
    listener.close()  # from here on only the child holds the listening socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(30)
        client.connect(str(socket_path))
        greeting = client.recv(100)

    assert greeting == b"served by the activated daemon"
    assert report(child) == {"fd": 3, "inheritable": False, "left": []}


def test_the_listener_passed_by_systemds_own_activation_tool_is_taken_over(socket_path: Path) -> None:
    activate = shutil.which("systemd-socket-activate")
    assert activate is not None, "systemd-socket-activate is missing: apt-get install -y systemd"
    child = subprocess.Popen(
        [activate, "--listen", str(socket_path), sys.executable, "-c", CHILD, "activated"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stderr is not None
        ready, _, _ = select.select([child.stderr], [], [], 30)
        assert ready, "systemd-socket-activate never said it was listening"
        assert "Listening on" in child.stderr.readline()

        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(30)
            client.connect(str(socket_path))
            greeting = client.recv(100)

        assert greeting == b"served by the activated daemon"
        assert report(child) == {"fd": 3, "inheritable": False, "left": []}
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)
        for stream in (child.stdout, child.stderr):
            if stream is not None:
                stream.close()


def test_a_connected_socket_pair_is_refused_as_not_listening() -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with ours, theirs:
        child = activated_child(theirs)

        assert "not a listening Unix stream socket" in report(child)["error"]


def test_a_tcp_listener_is_refused_as_not_a_unix_socket() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        child = activated_child(listener)

        assert "AF_INET" in report(child)["error"]


def test_a_descriptor_that_is_no_socket_is_refused(tmp_path: Path) -> None:
    fd = os.open(tmp_path / "plain-file", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        child = activated_child(fd)

        assert "unusable" in report(child)["error"]
    finally:
        os.close(fd)


def test_more_than_one_socket_is_refused(socket_path: Path) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(socket_path))
        listener.listen()
        child = activated_child(listener, count="2")

        assert "exactly one" in report(child)["error"]


def test_without_activation_variables_there_is_no_inherited_listener(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
        monkeypatch.delenv(name, raising=False)

    assert inherited_unix_listener() is None


def test_variables_meant_for_another_process_are_ignored_and_cleared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LISTEN_PID", str(os.getpid() + 1))
    monkeypatch.setenv("LISTEN_FDS", "1")
    monkeypatch.setenv("LISTEN_FDNAMES", "memoryd.socket")

    assert inherited_unix_listener() is None
    assert [name for name in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES") if name in os.environ] == []


def test_zero_passed_sockets_means_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LISTEN_PID", str(os.getpid()))
    monkeypatch.setenv("LISTEN_FDS", "0")

    assert inherited_unix_listener() is None


def test_malformed_variables_are_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LISTEN_PID", str(os.getpid()))
    monkeypatch.setenv("LISTEN_FDS", "one")

    with pytest.raises(DaemonError, match="LISTEN_FDS='one'"):
        inherited_unix_listener()
