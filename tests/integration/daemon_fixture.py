"""The real daemon as a subprocess, shared by the integration and survival suites.

The daemon's stderr is drained by a thread into memory: a pipe nobody reads fills up after a few
hundred log lines and then blocks the daemon's logging (and with it the daemon). Tests wait for a
log line with a deadline (`wait_for_line`) and can read the whole log afterwards (`log_text`).
`wrapper` runs the daemon under another program that execs it (setpriv, unshare), so the pid is
the daemon's own.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import anyio
from mcp.client import Client

from memoryd.server.client import unix_client

READY_LINE = "memoryd ready"


class LogPump:
    """Reads one process's stderr line by line in a thread; waiters are woken per line."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: list[str] = []
        self.eof = False
        self._stream = stream
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="daemon-stderr", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for line in self._stream:
                with self._cond:
                    self.lines.append(line)
                    self._cond.notify_all()
        except (OSError, ValueError):
            pass  # the stream was closed under us: the process is gone
        finally:
            with self._cond:
                self.eof = True
                self._cond.notify_all()

    def wait_for(self, needle: str, start: int, timeout: float) -> int | None:
        """Index of the first line at or after `start` containing `needle`; None at end of stream or timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            scanned = start
            while True:
                for i in range(scanned, len(self.lines)):
                    if needle in self.lines[i]:
                        return i
                scanned = len(self.lines)
                remaining = deadline - time.monotonic()
                if self.eof or remaining <= 0:
                    return None
                self._cond.wait(remaining)

    def close(self) -> None:
        self._thread.join(timeout=10)
        self._stream.close()

    @property
    def closed(self) -> bool:
        return self._stream.closed


@dataclass
class Daemon:
    root: Path
    config: Path
    state: Path
    socket: Path
    env: dict[str, str]
    proc: subprocess.Popen[str] | None = None
    wrapper: Sequence[str] = ()
    serve_args: Sequence[str] = ()
    """More `memoryd serve` arguments (`--socket PATH`)."""
    runs: list[LogPump] = field(default_factory=list)
    _cursor: int = 0

    def start(
        self,
        *,
        crash_at: str | None = None,
        crash_skip: int = 0,
        expect_ready: bool = True,
        extra_env: dict[str, str] | None = None,
        log_level: str = "info",
    ) -> None:
        self._close_pump()
        env = dict(self.env)
        env.pop("MEMORYD_CRASH_AT", None)
        env.pop("MEMORYD_CRASH_SKIP", None)
        if crash_at:
            env["MEMORYD_CRASH_AT"] = crash_at
            env["MEMORYD_CRASH_SKIP"] = str(crash_skip)
        env.update(extra_env or {})
        command = [
            sys.executable,
            "-m",
            "memoryd",
            "serve",
            "--config",
            str(self.config),
            "--state-dir",
            str(self.state),
            "--log-level",
            log_level,
            *self.serve_args,
        ]
        self.proc = subprocess.Popen(
            [*self.wrapper, *command],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
        )
        assert self.proc.stderr is not None
        self.runs.append(LogPump(self.proc.stderr))
        self._cursor = 0
        if expect_ready:
            try:
                self.wait_for_line(READY_LINE)
            except AssertionError:
                self.close()  # a start that failed leaves no process or pipe for a later test's collector
                raise
            self._cursor = 0  # what the daemon logs while it gets ready (first syncs) is still to be waited for

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_for_line(self, needle: str, timeout: float = 30.0, *, since_start: bool = False) -> str:
        """Wait until the current run logs a line containing `needle` (after the last line waited for,
        or anywhere in this run's log with `since_start`)."""
        pump = self.runs[-1]
        index = pump.wait_for(needle, 0 if since_start else self._cursor, timeout)
        if index is None:
            assert self.proc is not None
            code = self.proc.poll()
            state = f"exited ({code})" if code is not None else f"still running after {timeout:g} s"
            raise AssertionError(f"daemon {state} without logging {needle!r}; log:\n" + "".join(pump.lines))
        self._cursor = index + 1
        return pump.lines[index]

    def log_text(self) -> str:
        """Everything every run of this daemon has logged so far."""
        return "".join(line for pump in self.runs for line in pump.lines)

    def wait_exit(self, timeout: float = 60.0) -> int:
        assert self.proc is not None
        code = self.proc.wait(timeout=timeout)
        self._close_pump()
        return code

    def stop(self, sig: int = signal.SIGTERM) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.wait_exit(30)

    def kill(self) -> int:
        return self.stop(signal.SIGKILL)

    def _close_pump(self) -> None:
        if self.runs and self.proc is not None and self.proc.poll() is not None:
            self.runs[-1].close()

    def close(self) -> None:
        """End of the test: kill the daemon if it runs and close every run's log pipe, also of a run that
        ended without being waited for (a failed start), so no pipe is left for a later test to find."""
        if self.alive:
            self.kill()
        for pump in self.runs:
            pump.close()


async def search_response(sock: Path, agent: str | None, query: str, wait_ms: int = 0) -> dict[str, Any]:
    """One memory_search over a fresh MCP connection (the SDK's client); the structured result."""
    async with Client(unix_client(sock, agent)) as client:
        args: dict[str, Any] = {"query": query, "minScore": 0}
        if wait_ms:
            args["waitFresh"] = wait_ms
        result = await client.call_tool("memory_search", args)
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def search(sock: Path, agent: str | None, query: str, wait_ms: int = 0) -> list[str]:
    """The paths memory_search returns for `query`."""
    response = await search_response(sock, agent, query, wait_ms)
    return [r["path"] for r in response["results"]]


async def eventually(sock: Path, agent: str | None, query: str, expected: list[str], deadline_s: float = 20.0) -> None:
    """Search with waitFresh until the expected paths come back; fail after `deadline_s`.

    waitFresh makes the daemon wait for changes it knows about; the short pause between tries
    only covers the moment before its watcher has seen the change at all.
    """
    with anyio.fail_after(deadline_s):
        while True:
            if await search(sock, agent, query, wait_ms=1000) == expected:
                return
            await anyio.sleep(0.05)  # a bounded retry of a query, not synchronisation
