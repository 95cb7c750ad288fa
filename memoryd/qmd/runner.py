"""Running the `qmd` CLI: one subprocess per call, a deadline on every call, output capped, never orphaned.

QMD's launcher starts a second runtime process, and its vector paths can hang for minutes while they
try to fetch models. So each call starts in its own session (process group): when the deadline
passes, or the caller is cancelled, the whole group is signalled, not just the launcher. Output is
read concurrently from both pipes, so a chatty process never blocks on a full pipe, and only the
first `max_output_bytes` of each stream are kept.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, Process

from memoryd.qmd.errors import QmdCommandError, QmdTimeoutError, QmdUnavailableError
from memoryd.qmd.parse import error_summary, summarise

MAX_OUTPUT_BYTES = 200_000
"""OpenClaw caps QMD output at 200000 characters; the JSON QMD prints is almost all ASCII."""


@dataclass(frozen=True, slots=True)
class QmdOutput:
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    elapsed_ms: int
    truncated: bool  # stdout or stderr was longer than the cap and was cut


class _Capture:
    """The first `cap` bytes of a stream; the rest is read and dropped so the writer never blocks."""

    def __init__(self, cap: int, *, keep: bool = True) -> None:
        self._cap = cap if keep else 0
        self._chunks: list[bytes] = []
        self._size = 0
        self.truncated = False

    def add(self, data: bytes) -> None:
        room = self._cap - self._size
        if room <= 0:
            self.truncated = self.truncated or self._cap > 0
            return
        if len(data) > room:
            data = data[:room]
            self.truncated = True
        self._chunks.append(data)
        self._size += len(data)

    def text(self) -> str:
        return b"".join(self._chunks).decode("utf-8", "replace")


async def _drain(stream: ByteReceiveStream | None, capture: _Capture) -> None:
    if stream is None:
        return
    try:
        async for chunk in stream:
            capture.add(chunk)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        return


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return


async def _stop(process: Process, grace_s: float) -> None:
    """Stop the call's whole process group: SIGTERM and a grace period for writers, else SIGKILL at once."""
    if grace_s > 0 and process.returncode is None:
        _signal_group(process.pid, signal.SIGTERM)
        with anyio.move_on_after(grace_s):
            await process.wait()
    _signal_group(process.pid, signal.SIGKILL)
    await process.wait()


def split_command(command: str) -> tuple[str, ...]:
    """The configured `command` as argv: `qmd`, a path, or a launcher with arguments (`node /x/qmd.js`)."""
    try:
        argv = tuple(shlex.split(command))
    except ValueError as exc:
        raise QmdUnavailableError(f"cannot read the qmd command {command!r}: {exc}") from None
    if not argv:
        raise QmdUnavailableError("the qmd command is empty")
    return argv


def qmd_environment(
    base: Mapping[str, str], *, command: Sequence[str], xdg_config: Path, xdg_cache: Path
) -> dict[str, str]:
    """The agent's private QMD environment (spec §4.5): its own XDG config and cache, no colours.

    When the command is a path, its folder goes first on PATH: a project-local install keeps the
    Node runtime QMD needs beside the `qmd` launcher, and the launcher finds it through PATH.
    """
    env = dict(base)
    first = command[0]
    if os.sep in first:
        folder = str(Path(first).expanduser().parent)
        env["PATH"] = os.pathsep.join([folder, *[p for p in env.get("PATH", "").split(os.pathsep) if p]])
    env["XDG_CONFIG_HOME"] = str(xdg_config)
    env["QMD_CONFIG_DIR"] = str(xdg_config / "qmd")
    env["XDG_CACHE_HOME"] = str(xdg_cache)
    env["NO_COLOR"] = "1"
    return env


class QmdRunner:
    """Runs `qmd <args>` with one agent's environment and working directory."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        max_output_bytes: int = MAX_OUTPUT_BYTES,
    ) -> None:
        self.command = tuple(command)
        self.env = dict(env)
        self.cwd = cwd
        self.max_output_bytes = max_output_bytes

    async def run(
        self,
        args: Sequence[str],
        *,
        timeout_s: float,
        discard_stdout: bool = False,
        kill_grace_s: float = 0.0,
    ) -> QmdOutput:
        """Run once; raise QmdUnavailableError, QmdTimeoutError or QmdCommandError (non-zero exit)."""
        argv = (*self.command, *args)
        label = f"qmd {args[0]}" if args else "qmd"
        started = time.monotonic()
        try:
            process = await anyio.open_process(
                argv,
                stdin=subprocess.DEVNULL,
                cwd=self.cwd,
                env=self.env,
                start_new_session=True,
            )
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise QmdUnavailableError(f"cannot run {self.command[0]!r}: {reason}") from None
        out = _Capture(self.max_output_bytes, keep=not discard_stdout)
        err = _Capture(self.max_output_bytes)
        try:
            with anyio.move_on_after(timeout_s) as deadline:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_drain, process.stdout, out)
                    tg.start_soon(_drain, process.stderr, err)
                await process.wait()
        finally:
            with anyio.CancelScope(shield=True):
                if deadline.cancelled_caught or process.returncode is None:
                    await _stop(process, kill_grace_s)
                await process.aclose()
        elapsed_ms = int((time.monotonic() - started) * 1000)
        if deadline.cancelled_caught:
            tail = err.text()
            detail = f": {summarise(tail)}" if tail.strip() else ""
            raise QmdTimeoutError(f"{label} timed out after {int(timeout_s * 1000)} ms{detail}")
        returncode = process.returncode if process.returncode is not None else -1
        result = QmdOutput(
            args=tuple(args),
            returncode=returncode,
            stdout=out.text(),
            stderr=err.text(),
            elapsed_ms=elapsed_ms,
            truncated=out.truncated or err.truncated,
        )
        if returncode != 0:
            why = error_summary(result.stderr) or error_summary(result.stdout) or "no output"
            raise QmdCommandError(
                f"{label} failed (exit {returncode}): {why}",
                returncode=returncode,
                stderr=result.stderr,
                stdout=result.stdout,
            )
        return result
