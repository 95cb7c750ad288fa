"""Which socket a client uses: the chosen one, the live daemon's record, the default; and never a
socket that is not the user's."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from functools import partial
from pathlib import Path

import anyio
import pytest

from memoryd import paths
from memoryd.errors import DaemonError, NotPrivateError
from memoryd.runtime.claim import StateClaim, claim_state_dir
from memoryd.runtime.locate import answers, find_daemon
from memoryd.runtime.record import lock_path
from memoryd.server.unix import serve_unix
from tests.runtime.test_claim import HOLD_LOCK
from tests.server.fakes import FakeMemoryService


@pytest.fixture
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("st") / "state"


@pytest.fixture
async def recorded_daemon(
    tmp_path_factory: pytest.TempPathFactory, state: Path
) -> AsyncIterator[tuple[Path, StateClaim]]:
    """A daemon socket somewhere the default does not point, recorded in `state` as `serve` does."""
    sock = tmp_path_factory.mktemp("r") / "elsewhere" / "memoryd.sock"
    claim = claim_state_dir(state)
    async with anyio.create_task_group() as tg:
        await tg.start(partial(serve_unix, FakeMemoryService(), sock))
        claim.publish(sock)
        yield sock, claim
        tg.cancel_scope.cancel()
    claim.release()


def test_nothing_holding_and_nothing_answering_means_in_process(state: Path) -> None:
    assert find_daemon(state, None) is None


@pytest.mark.anyio
async def test_the_recorded_socket_wins_over_the_default(recorded_daemon: tuple[Path, StateClaim], state: Path) -> None:
    sock, _claim = recorded_daemon
    assert paths.socket_path(state) != sock
    assert await anyio.to_thread.run_sync(find_daemon, state, None) == sock


@pytest.mark.anyio
async def test_a_chosen_socket_where_nothing_answers_names_where_the_daemon_listens(
    recorded_daemon: tuple[Path, StateClaim], state: Path, tmp_path: Path
) -> None:
    sock, _claim = recorded_daemon
    chosen = tmp_path / "wrong.sock"
    with pytest.raises(DaemonError, match=f"nothing answers on {chosen}.*listens on {sock}"):
        await anyio.to_thread.run_sync(find_daemon, state, chosen)


@pytest.fixture
def silent_holder(state: Path) -> Iterator[int]:
    """A process holding the state directory that never listens: a daemon stuck while starting."""
    state.mkdir(mode=0o700, parents=True)
    with subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(lock_path(state))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None and proc.stdout.readline() == "held\n"
        yield proc.pid
        proc.kill()


def test_a_daemon_holding_the_state_directory_is_waited_for_never_worked_around(
    state: Path, silent_holder: int
) -> None:
    with pytest.raises(DaemonError) as failed:
        find_daemon(state, None, wait_s=0.3)
    message = str(failed.value)
    assert f"the memoryd daemon (pid {silent_holder}) holds {state} but does not answer" in message
    assert str(state / "daemon.log") in message  # where to look


def test_a_socket_directory_open_to_others_is_refused_not_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "open"
    folder.mkdir()
    os.chmod(folder, 0o755)
    with pytest.raises(NotPrivateError, match="open to others"):
        answers(folder / "memoryd.sock")


def test_a_stale_socket_file_does_not_answer(tmp_path: Path) -> None:
    folder = tmp_path / "rt"
    folder.mkdir(mode=0o700)
    leftover = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    leftover.bind(str(folder / "memoryd.sock"))
    leftover.close()
    assert answers(folder / "memoryd.sock") is False
    assert answers(tmp_path / "missing" / "memoryd.sock") is False


def test_the_default_socket_is_in_the_state_directory_without_a_runtime_directory(
    monkeypatch: pytest.MonkeyPatch, state: Path
) -> None:
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.delenv("MEMORYD_SOCKET", raising=False)
    logind = Path("/run/user") / str(os.geteuid())
    expected = logind / "memoryd" / "memoryd.sock" if paths._users_dir(logind, private=True) else state / "memoryd.sock"
    assert paths.socket_path(state) == expected
    long_state = Path("/x" * 60)
    if expected.parent == state:
        assert paths.socket_path(long_state) == Path(f"/tmp/memoryd-{os.geteuid()}/memoryd.sock")
