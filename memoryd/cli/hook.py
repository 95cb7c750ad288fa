"""`memoryd hook HOST EVENT`: what Claude Code and Codex run on their hook events.

It reads the host's hook JSON on stdin and answers on stdout in the host's format, talking only to the
daemon already running (it never starts one: a hook that spawned daemons is how peers leaked hundreds
of processes). Recall (`UserPromptSubmit`) and the brief (`SessionStart`) add context; capture
(`SessionEnd`, `Stop`, `PreCompact`) asks the daemon to index the session now. Whatever goes wrong —
no daemon, bad JSON, a bad config, a slow or failing daemon — it exits 0 with nothing on stdout, so
the user's prompt goes through untouched (Claude Code reads exit 2 as "block the prompt"), and says
why in `<state dir>/hooks.log`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

from memoryd import hooksettings, paths
from memoryd.cli.exits import EXIT_OK
from memoryd.cli.hooks import brief, recall, state
from memoryd.cli.hooks import project as projects
from memoryd.cli.hooks.payload import CAPTURE_EVENTS, HOSTS, HookInput, Host, answer, event_name, parse
from memoryd.cli.hooks.transcript import previous_user_turn
from memoryd.cli.rpc import DaemonClient
from memoryd.errors import DaemonError, NotFoundError, ProtocolError
from memoryd.hooksettings import HooksSettings
from memoryd.runtime.locate import target
from memoryd.runtime.private import PRIVATE_FILE_MODE

if TYPE_CHECKING:
    from memoryd.config import AgentConfig

LOG_NAME = "hooks.log"
LOG_MAX_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Setup:
    """What one hook call needs of the configuration: its `[hooks]` table, the state directory and any
    socket the user chose. The whole settings tree is built only where needed (the session-start
    brief looks up the agent's workspace): a recall never pays for it."""

    args: argparse.Namespace
    hooks: HooksSettings
    state_dir: Path
    socket: Path | None

    @classmethod
    def load(cls, args: argparse.Namespace) -> Setup:
        hooks, socket_path = hooksettings.read_file(Path(args.config).expanduser() if args.config else None)
        state_dir = (Path(args.state_dir) if args.state_dir else paths.state_dir()).expanduser().absolute()
        if args.socket:
            chosen: Path | None = Path(args.socket).expanduser()
        else:  # as Config.explicit_socket: the environment wins over daemon.socket_path
            chosen = paths.explicit_socket() or (Path(socket_path).expanduser() if socket_path else None)
        return cls(args, hooks, state_dir, chosen)

    def agent_config(self, agent: str | None) -> AgentConfig | None:
        """The agent as this machine's configuration describes it (the daemon's may differ; None: unknown)."""
        from memoryd import config as config_mod

        cfg = config_mod.load(self.args.config, state_dir=self.args.state_dir)
        if agent:
            return cfg.agents.get(agent)
        return next(iter(cfg.agents.values())) if len(cfg.agents) == 1 else None


def run_safely(args: argparse.Namespace, out: TextIO, stdin: BinaryIO | None = None) -> int:
    """Run the hook; any failure is logged and answered with exit 0 and an empty stdout."""
    started = time.monotonic()
    state_dir: Path | None = None
    try:
        setup = Setup.load(args)
        state_dir = setup.state_dir
        text = run(setup, (stdin or sys.stdin.buffer).read(), started)
    except BaseException as exc:
        log_error(state_dir or paths.state_dir(), f"{args.host} {args.event}", exc)
        return EXIT_OK
    if text:
        with contextlib.suppress(OSError, ValueError):
            out.write(text)
            out.flush()
    return EXIT_OK


def run(setup: Setup, raw: bytes, started: float) -> str:
    """The hook's stdout for this call (empty: nothing to add)."""
    args = setup.args
    if args.host not in HOSTS:
        raise ProtocolError(f"unknown hook host {args.host!r} (known: {', '.join(HOSTS)})")
    host: Host = args.host
    hook = parse(host, event_name(host, args.event), raw)
    found = target(setup.state_dir, setup.socket)  # no probe connection first: the client checks the peer
    if found.holder is None and found.source != "explicit":
        raise DaemonError("no memoryd daemon is running (hooks never start one: run the service)")
    socket = found.socket
    if hook.event in CAPTURE_EVENTS:
        outcome = _capture(setup, socket, args.agent, hook)
        state.record_run(setup.state_dir, host, hook.event, injected=0, chars=0, outcome=outcome)
        return ""
    deadline = started + setup.hooks.timeout_ms / 1000
    if hook.event == "UserPromptSubmit":
        block, shown = _recall(setup, socket, args.agent, hook, deadline)
    else:
        block, shown = _session_start(setup, socket, args.agent, hook, deadline), []
    outcome = "injected" if block else "nothing"
    state.record_run(setup.state_dir, host, hook.event, injected=len(shown), chars=len(block), outcome=outcome)
    if not block:
        return ""
    if shown:
        state.SessionState(setup.state_dir, host, hook.session_id).remember(h.key for h in shown)
    return answer(hook.event, block)


def only_served(ids: list[str]) -> str:
    """The daemon's only agent (`memoryd.cli.agents.only_served`'s rule, without its configuration import)."""
    if len(ids) == 1:
        return ids[0]
    raise NotFoundError(f"the daemon serves {', '.join(ids) or 'no agent'}: name one with --agent in the hook command")


def _client(socket: Path, agent: str | None, deadline: float) -> DaemonClient:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise DaemonError("the hook's time ran out before it reached the daemon (hooks.timeout_ms)")
    return DaemonClient.open(socket, agent, pick=only_served, timeout=remaining)


def _tool(client: DaemonClient, name: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """A tool's structured result; None for a tool error (a missing file, say)."""
    result = client.call_tool(name, arguments)
    data = result.get("structuredContent")
    return None if result.get("isError") or not isinstance(data, dict) else data


def _recall(
    setup: Setup, socket: Path, agent: str | None, hook: HookInput, deadline: float
) -> tuple[str, list[recall.Hit]]:
    prompt = hook.prompt.strip()
    if not prompt or prompt.startswith("/"):  # nothing typed, or a slash command: nothing to recall
        return "", []
    settings = setup.hooks
    previous = ""
    if len(prompt.split()) < settings.follow_up_words:
        previous = previous_user_turn(hook.transcript_path, prompt)
    arguments = {
        "query": recall.query_for(prompt, previous, settings.follow_up_words),
        "corpus": "all",
        "maxResults": min(100, settings.max_results + 4),  # room for what the session may not see again
        "sessionKey": f"{hook.host}:{hook.session_id}" if hook.session_id else None,
    }
    with _client(socket, agent, deadline) as client:
        reply = _tool(client, "memory_search", {k: v for k, v in arguments.items() if v is not None})
    if reply is None:
        raise DaemonError("memory_search failed on the daemon")
    chosen = recall.choose(
        recall.hits_of(reply),
        seen=state.SessionState(setup.state_dir, hook.host, hook.session_id).seen(),
        session_id=hook.session_id,
        transcript_path=hook.transcript_path,
        project=projects.current(hook.host, hook.cwd, hook.transcript_path),
        scope=settings.scope,
        roots=recall.Roots(claude_projects(), codex_sessions()),
        limit=settings.max_results,
    )
    return recall.render(chosen, settings.max_chars)


def claude_projects() -> Path:
    """Claude Code's transcript folder, as the `claude-code` sessions preset finds it: `$CLAUDE_CONFIG_DIR/projects`,
    else `~/.claude/projects`."""
    base = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
    return (Path(base).expanduser() if base else Path(os.environ.get("HOME") or Path.home()) / ".claude") / "projects"


def codex_sessions() -> Path:
    """Codex's transcript folder, as the `codex` sessions preset finds it (`memoryd.config.sessions`,
    not imported here to keep the hook light): `$CODEX_HOME/sessions`, else `~/.codex/sessions`."""
    base = os.environ.get("CODEX_HOME", "").strip()
    return (Path(base).expanduser() if base else Path(os.environ.get("HOME") or Path.home()) / ".codex") / "sessions"


def _session_start(setup: Setup, socket: Path, agent: str | None, hook: HookInput, deadline: float) -> str:
    settings = setup.hooks
    flush = settings.flush and hook.host == "claude-code" and hook.source == "compact"
    mode = settings.session_start
    configured = setup.agent_config(agent) if mode != "off" and settings.session_start_chars else None
    want = mode == "on" or (mode == "auto" and not _host_has_memory(configured, hook))
    if not want or settings.session_start_chars == 0:
        return brief.FLUSH if flush else ""
    with _client(socket, agent, deadline) as client:

        def get(path: str, lines: int) -> str | None:
            data = _tool(client, "memory_get", {"path": path, "from": 1, "lines": lines})
            text = data.get("text") if data else None
            return text if isinstance(text, str) else None

        names = brief.daily_notes(configured.workspace if configured else None)
        text = brief.brief(get, settings.session_start_chars, names)
    return "\n".join(p for p in (text, brief.FLUSH if flush else "") if p)


def _host_has_memory(configured: AgentConfig | None, hook: HookInput) -> bool:
    if configured is None:
        return False
    return brief.host_loads(hook.host, hook.cwd, hook.transcript_path, configured.workspace / "MEMORY.md")


def _capture(setup: Setup, socket: Path, agent: str | None, hook: HookInput) -> str:
    """Ask the daemon to index the session's transcript now (that file alone, no debounce; a delta sync
    of everything when the host names none), waiting for its report up to `hooks.capture_timeout_ms`;
    past that the hook leaves and the sync runs to its end in the daemon. A transcript outside the
    agent's session folders is refused by the daemon, and the refusal goes to the log."""
    wait = setup.hooks.capture_timeout_ms / 1000
    sessions = [hook.transcript_path] if hook.transcript_path else []
    with DaemonClient.open(socket, agent, pick=only_served, timeout=wait) as client:
        try:
            client.request("memoryd/sync", {"force": False, "reason": f"hook:{hook.event}", "sessions": sessions})
        except DaemonError as exc:
            if isinstance(exc.__cause__, TimeoutError):
                return "pending"
            raise
    return "captured"


def log_error(state_dir: Path, what: str, exc: BaseException) -> None:
    """One line in `<state dir>/hooks.log` (0600, kept under LOG_MAX_BYTES by rotating to `.1`)."""
    message = " ".join(str(exc).split())[:500] or type(exc).__name__
    line = f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {what}: {type(exc).__name__}: {message}\n"
    with contextlib.suppress(OSError):
        if not state_dir.is_dir():
            return  # no state directory: memoryd never ran for this user; nothing to write into
        path = state_dir / LOG_NAME
        with contextlib.suppress(OSError):
            if path.stat().st_size > LOG_MAX_BYTES:
                os.replace(path, path.with_name(LOG_NAME + ".1"))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, PRIVATE_FILE_MODE)
        try:
            os.write(fd, line.encode("utf-8", "replace"))
        finally:
            os.close(fd)
