"""The daemon's claim on its state directory: one holder, a record clients can believe, nothing left behind."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd import __version__
from memoryd.errors import DaemonRunningError, NotPrivateError
from memoryd.runtime.claim import claim_state_dir
from memoryd.runtime.record import DaemonRecord, held_by, live_record, lock_path, read_record, record_path
from tests.privileges import needs_root

HOLD_LOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
os.ftruncate(fd, 0)
os.write(fd, f"{os.getpid()}\\n".encode())
print("held", flush=True)
sys.stdin.read()
"""
"""A process that holds a state directory's lock the way a daemon does, until its stdin closes."""


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(lock_path(state))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    with proc:
        yield state, proc
        proc.kill()


def test_a_new_state_directory_is_created_private(tmp_path: Path) -> None:
    state = tmp_path / "a" / "state"
    old = os.umask(0)
    try:
        claim = claim_state_dir(state)
    finally:
        os.umask(old)
    try:
        assert stat.S_IMODE(os.lstat(state).st_mode) == 0o700
        assert stat.S_IMODE(os.lstat(lock_path(state)).st_mode) == 0o600
        assert not claim.tightened
    finally:
        claim.release()


def test_an_existing_state_directory_open_to_others_is_tightened(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    os.chmod(state, 0o755)  # what memoryd made before: mkdir(parents=True) of agents/<id>
    claim = claim_state_dir(state)
    try:
        assert claim.tightened
        assert stat.S_IMODE(os.lstat(state).st_mode) == 0o700
    finally:
        claim.release()


def test_a_symlinked_state_directory_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(NotPrivateError, match="symbolic link"):
        claim_state_dir(link)


@needs_root("chown a state directory to uid 65534 (another user's)")
def test_a_foreign_state_directory_is_refused(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign"
    foreign.mkdir(mode=0o700)
    os.chown(foreign, 65534, 65534)  # ownership is checked, not permission bits: holds for root too
    with pytest.raises(NotPrivateError, match="belongs to uid 65534"):
        claim_state_dir(foreign)
    assert not lock_path(foreign).exists()


def test_the_record_says_where_the_daemon_listens_and_goes_on_release(tmp_path: Path) -> None:
    state = tmp_path / "state"
    claim = claim_state_dir(state)
    claim.publish(Path("/run/somewhere/memoryd.sock"), log_file="/var/log/x.log")
    record = read_record(state)
    assert record is not None
    assert (record.pid, record.socket, record.version, record.log) == (
        os.getpid(),
        Path("/run/somewhere/memoryd.sock"),
        __version__,
        "/var/log/x.log",
    )
    assert record.started_at.endswith("Z")
    assert stat.S_IMODE(os.lstat(record_path(state)).st_mode) == 0o600
    assert live_record(state) == (os.getpid(), record)
    claim.release()
    assert not record_path(state).exists()
    assert held_by(state) is None
    assert live_record(state) == (None, None)


def test_a_second_claim_names_the_live_daemon(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = claim_state_dir(state)
    first.publish(Path("/run/user/1000/memoryd/memoryd.sock"))
    try:
        with pytest.raises(DaemonRunningError) as refused:
            claim_state_dir(state, patience_s=30)  # a live record: refused at once, not after the patience
        assert f"already serves {state}: pid {os.getpid()}, socket /run/user/1000/memoryd/memoryd.sock" in str(
            refused.value
        )
    finally:
        first.release()
    claim_state_dir(state).release()  # free again once released


def test_a_holder_that_has_not_recorded_yet_is_named_by_its_pid(
    holder: tuple[Path, subprocess.Popen[str]],
) -> None:
    state, proc = holder
    assert held_by(state) == proc.pid
    assert live_record(state) == (proc.pid, None)
    with pytest.raises(DaemonRunningError, match=f"pid {proc.pid}.*still starting"):
        claim_state_dir(state, patience_s=0.1)


def test_a_killed_daemons_record_is_not_believed_and_its_state_directory_is_free(
    holder: tuple[Path, subprocess.Popen[str]],
) -> None:
    state, proc = holder
    stale = DaemonRecord(proc.pid, Path("/gone/memoryd.sock"), __version__, "2026-01-01T00:00:00Z", state)
    record_path(state).write_bytes(stale.to_json())
    assert live_record(state) == (proc.pid, stale)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)  # reaped: the kernel has dropped its lock
    assert held_by(state) is None
    assert live_record(state) == (None, None)  # the record stays on disk, but nobody holds the lock
    claim = claim_state_dir(state)
    claim.publish(Path("/new/memoryd.sock"))
    try:
        assert live_record(state)[1] == read_record(state)
        assert read_record(state) is not None and read_record(state).socket == Path("/new/memoryd.sock")  # type: ignore[union-attr]
    finally:
        claim.release()


def test_a_clients_probe_never_makes_a_starting_daemon_give_up(tmp_path: Path) -> None:
    """Clients test the lock by taking it shared for an instant; a daemon starting meanwhile retries."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    for _ in range(200):
        assert held_by(state) is None
    claim = claim_state_dir(state)
    try:
        for _ in range(200):
            assert held_by(state) == os.getpid()
    finally:
        claim.release()


@needs_root("chown the daemon record to uid 65534 (another user's)")
def test_a_record_of_another_user_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    record_path(state).write_bytes(DaemonRecord(1, Path("/evil/memoryd.sock"), "0", "", state).to_json())
    os.chown(record_path(state), 65534, 65534)
    with pytest.raises(NotPrivateError, match="belongs to uid 65534"):
        read_record(state)


def test_a_symlinked_record_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    record_path(state).symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(NotPrivateError, match="symbolic link"):
        read_record(state)


def test_a_daemon_that_has_just_locked_is_told_from_a_clients_probe(tmp_path: Path) -> None:
    """An exclusive holder is a daemon, from its first instant (before its pid or record is written):
    the claim gives up at once, not after the patience it grants a client's shared probe."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    script = HOLD_LOCK.replace('os.ftruncate(fd, 0)\nos.write(fd, f"{os.getpid()}\\n".encode())\n', "")
    assert "os.write" not in script
    with subprocess.Popen(
        [sys.executable, "-c", script, str(lock_path(state))], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None and proc.stdout.readline() == "held\n"
        with pytest.raises(DaemonRunningError, match=r"another process.*still starting"):
            claim_state_dir(state, patience_s=3600)
        proc.kill()
