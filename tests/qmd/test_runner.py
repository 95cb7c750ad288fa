"""Every QMD call is a subprocess with a deadline and capped output, and leaves nothing running."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import anyio
import pytest

from memoryd.qmd.errors import QmdCommandError, QmdTimeoutError, QmdUnavailableError
from memoryd.qmd.runner import QmdRunner, qmd_environment, split_command
from tests.qmd.standin import HANG_TIMEOUT_MS, StandIn, wait_gone, wait_running

pytestmark = pytest.mark.anyio


def runner_for(standin: StandIn, tmp_path: Path, **kw: int) -> QmdRunner:
    env = qmd_environment(
        dict(os.environ), command=(str(standin.path),), xdg_config=tmp_path / "cfg", xdg_cache=tmp_path / "cache"
    )
    return QmdRunner((str(standin.path),), env=env, cwd=tmp_path, **kw)


async def test_a_call_returns_stdout_and_runs_in_the_agents_private_environment(
    standin: StandIn, tmp_path: Path
) -> None:
    out = await runner_for(standin, tmp_path).run(["--version"], timeout_s=10)
    assert out.returncode == 0 and out.stdout.strip() == "qmd 9.9.9 (standin)"
    (call,) = standin.calls()
    assert call["cwd"] == str(tmp_path)
    assert call["env"] == {
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "QMD_CONFIG_DIR": str(tmp_path / "cfg" / "qmd"),
        "NO_COLOR": "1",
    }


def test_a_command_given_as_a_path_puts_its_folder_first_on_path(tmp_path: Path) -> None:
    env = qmd_environment(
        {"PATH": "/usr/bin:/bin"}, command=("/opt/q/bin/qmd",), xdg_config=tmp_path, xdg_cache=tmp_path
    )
    assert env["PATH"].split(os.pathsep) == ["/opt/q/bin", "/usr/bin", "/bin"]
    bare = qmd_environment({"PATH": "/usr/bin"}, command=("qmd",), xdg_config=tmp_path, xdg_cache=tmp_path)
    assert bare["PATH"] == "/usr/bin"


def test_the_command_setting_may_carry_arguments() -> None:
    assert split_command("node '/opt/my qmd/qmd.js'") == ("node", "/opt/my qmd/qmd.js")
    with pytest.raises(QmdUnavailableError):
        split_command("   ")
    with pytest.raises(QmdUnavailableError):
        split_command("qmd 'unclosed")


async def test_a_non_zero_exit_raises_with_the_exit_code_and_stderr(standin: StandIn, tmp_path: Path) -> None:
    standin.fail("update", exit=3, stderr="SQLITE_BUSY: database is locked\n")
    with pytest.raises(QmdCommandError) as caught:
        await runner_for(standin, tmp_path).run(["update"], timeout_s=10)
    assert caught.value.returncode == 3
    assert "database is locked" in caught.value.stderr
    assert "exit 3" in str(caught.value) and "database is locked" in str(caught.value)


async def test_a_missing_binary_is_unavailable_not_a_crash(tmp_path: Path) -> None:
    runner = QmdRunner((str(tmp_path / "nowhere" / "qmd"),), env=dict(os.environ), cwd=tmp_path)
    with pytest.raises(QmdUnavailableError, match="cannot run"):
        await runner.run(["--version"], timeout_s=5)


async def test_a_file_that_is_not_executable_is_unavailable(tmp_path: Path) -> None:
    plain = tmp_path / "qmd"
    plain.write_text("not a program\n", encoding="utf-8")
    with pytest.raises(QmdUnavailableError):
        await QmdRunner((str(plain),), env=dict(os.environ), cwd=tmp_path).run(["--version"], timeout_s=5)


async def test_a_hanging_call_is_killed_at_its_deadline_with_its_children(standin: StandIn, tmp_path: Path) -> None:
    standin.fail("embed", hang=True, child=True)
    with anyio.fail_after(10), pytest.raises(QmdTimeoutError, match=f"timed out after {HANG_TIMEOUT_MS} ms") as caught:
        await runner_for(standin, tmp_path).run(["embed"], timeout_s=HANG_TIMEOUT_MS / 1000)
    assert "loading model" in str(caught.value)  # what it was doing when it was stopped
    (call,) = standin.calls("embed")
    await wait_gone(call["pid"])
    await wait_gone(standin.child_pid())  # the whole process group, not just the launcher


async def test_a_writer_gets_a_grace_period_before_it_is_killed(standin: StandIn, tmp_path: Path) -> None:
    standin.fail("update", hang=True)
    with anyio.fail_after(10), pytest.raises(QmdTimeoutError):
        await runner_for(standin, tmp_path).run(["update"], timeout_s=HANG_TIMEOUT_MS / 1000, kill_grace_s=0.5)
    await wait_gone(standin.calls("update")[0]["pid"])


async def test_a_slow_call_within_its_deadline_succeeds(standin: StandIn, tmp_path: Path) -> None:
    standin.fail("status", sleep=0.3, stdout="Vectors: 4 embedded\n")
    out = await runner_for(standin, tmp_path).run(["status"], timeout_s=10)
    assert out.stdout == "Vectors: 4 embedded\n"


async def test_output_beyond_the_cap_is_dropped_and_flagged(standin: StandIn, tmp_path: Path) -> None:
    standin.fail("search", stdout="[", stdout_bytes=300_000)
    out = await runner_for(standin, tmp_path, max_output_bytes=1000).run(["search"], timeout_s=10)
    assert len(out.stdout) == 1000 and out.truncated


async def test_discarded_stdout_is_still_read_so_the_process_never_blocks(standin: StandIn, tmp_path: Path) -> None:
    standin.fail("update", stdout_bytes=2_000_000, stdout="")
    out = await runner_for(standin, tmp_path).run(["update"], timeout_s=10, discard_stdout=True)
    assert out.stdout == "" and out.returncode == 0


async def test_a_cancelled_caller_leaves_no_process_behind(standin: StandIn, tmp_path: Path) -> None:
    fifo = tmp_path / "running.fifo"
    os.mkfifo(fifo)
    standin.fail("query", hang=True, child=True, notify=str(fifo))
    runner = runner_for(standin, tmp_path)
    async with anyio.create_task_group() as tg:
        tg.start_soon(functools.partial(runner.run, ["query"], timeout_s=60.0))
        await wait_running(fifo)
        tg.cancel_scope.cancel()
    await wait_gone(standin.calls("query")[0]["pid"])
    await wait_gone(standin.child_pid())
