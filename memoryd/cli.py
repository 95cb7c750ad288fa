"""The `memoryd` command line. Output goes to stdout; logs and progress go to stderr.

`search`, `get`, `status`, `sync` and `index` talk to the running daemon when one answers on
the socket, and work in-process otherwise (taking the index's writer lock while they write).
`--workspace` agents are ad hoc, so they always run in-process.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TextIO, TypeVar

import anyio
import orjson

from memoryd import __version__, daemon, paths
from memoryd import config as config_mod
from memoryd import logging as logs
from memoryd.config import AgentConfig, Config
from memoryd.daemon import DaemonService
from memoryd.embeddings.local import LoadState, LocalEmbeddingProvider
from memoryd.embeddings.select import Selection, select_provider
from memoryd.errors import ConfigError, DaemonError, DaemonRunningError, MemorydError, first_error
from memoryd.eval import cli as eval_cli
from memoryd.index.engine import IndexEngine
from memoryd.index.supervisor import Supervisor
from memoryd.index.watcher import Watcher
from memoryd.progress import ProgressBar
from memoryd.runtime.locate import find_daemon, start_daemon
from memoryd.runtime.private import ensure_private_dir
from memoryd.runtime.record import EXIT_ALREADY_RUNNING
from memoryd.server.client import call_tool, request_sync
from memoryd.server.stdio import run_bridge, serve_stdio
from memoryd.service.install import InstallResult, install_service, uninstall_service
from memoryd.store.lock import WriterLockBusyError

T = TypeVar("T")

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2


def _dump(obj: object) -> str:
    return orjson.dumps(obj, option=orjson.OPT_INDENT_2).decode()


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", type=Path, help="config file (default: $XDG_CONFIG_HOME/memoryd/config.toml)")
    common.add_argument("--agent", help="agent id (default: the only configured agent, or 'main')")
    common.add_argument(
        "--workspace", type=Path, help="an ad-hoc agent rooted at PATH (transcripts from PATH/sessions)"
    )
    common.add_argument("--state-dir", type=Path, help="where databases live (default: $XDG_STATE_HOME/memoryd)")
    common.add_argument("--log-level", default=None, help="debug, info, warning, error (default: warning)")
    common.add_argument(
        "--socket", type=Path, help="the daemon's socket (default: the running daemon's, from its state directory)"
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _common()
    parser = argparse.ArgumentParser(prog="memoryd", description="Long-term memory search for AI agents.")
    parser.add_argument("--version", action="version", version=f"memoryd {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("serve", parents=[common], help="run the daemon in the foreground (for systemd/launchd)")
    p.add_argument("--log-format", choices=["console", "json"], help="log format (default from config: console)")

    p = sub.add_parser("mcp", parents=[common], help="MCP over stdio for Claude and other clients (via the daemon)")
    p.add_argument("--standalone", action="store_true", help="serve in this process instead of through the daemon")

    for name, what in (("index", "bring the index up to date"), ("sync", "sync now (the same as index)")):
        p = sub.add_parser(name, parents=[common], help=f"{what} (--force: full rebuild)")
        p.add_argument("--force", action="store_true", help="rebuild everything into a new database and swap it in")
        p.add_argument("--json", action="store_true", help="print the sync report as JSON")

    p = sub.add_parser("search", parents=[common], help="search memory")
    p.add_argument("query", nargs="?", help="what to look for")
    p.add_argument("--query", dest="query_opt", help="the query (wins over the positional one)")
    p.add_argument("--max-results", type=int, help="at most N results (default from config: 6)")
    p.add_argument("--min-score", type=float, help="drop results scoring below X (default from config: 0.35)")
    p.add_argument("--corpus", choices=["memory", "sessions", "all"], default="all", help="which sources to search")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--no-sync", action="store_true", help="search the index as it is, without a delta sync first")

    p = sub.add_parser("get", parents=[common], help="print lines of a memory file")
    p.add_argument("path", help="workspace-relative path, e.g. memory/2026-01-05.md")
    p.add_argument("--from", dest="from_line", type=int, help="first line (1-based)")
    p.add_argument("--lines", type=int, help="number of lines")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("status", parents=[common], help="show index status")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--deep", action="store_true", help="also probe the vector store and embeddings")

    p = sub.add_parser("install-service", parents=[common], help="install and start memoryd as a user service")
    p.add_argument("--force", action="store_true", help="overwrite a unit/plist you edited")
    p.add_argument("--no-enable", action="store_true", help="write the files but do not enable or start the service")
    p.add_argument(
        "--socket-activation",
        action="store_true",
        help="systemd: also install memoryd.socket (clients connect before the daemon runs and while it restarts)",
    )

    p = sub.add_parser("uninstall-service", parents=[common], help="stop and remove the user service")
    p.add_argument("--force", action="store_true", help="remove a unit/plist you edited")

    eval_cli.add_parser(sub, parents=[common])

    p = sub.add_parser("model", parents=[common], help="the local embedding model")
    p.add_argument("action", choices=["pull"], help="pull: locate or download (and prepare) the model now")

    p = sub.add_parser("config", parents=[common], help="inspect configuration")
    p.add_argument("action", choices=["show"], help="show: print the effective config")
    return parser


def _load(args: argparse.Namespace) -> Config:
    return config_mod.load(args.config, state_dir=args.state_dir, workspace=args.workspace, agent_id=args.agent)


# ---------------------------------------------------------------------------- daemon or in-process


def _explicit_socket(args: argparse.Namespace, cfg: Config) -> Path | None:
    """A socket the user chose: `--socket`, `$MEMORYD_SOCKET`, `daemon.socket_path`."""
    return Path(args.socket).expanduser() if args.socket else cfg.explicit_socket


def _live_daemon(args: argparse.Namespace, cfg: Config) -> Path | None:
    """The socket of the daemon to talk to (found from any environment, see memoryd.runtime.locate),
    or None to work in-process; ad-hoc `--workspace` agents always run in-process."""
    found = None if args.workspace is not None else find_daemon(cfg.state_dir, _explicit_socket(args, cfg))
    if found is None:  # in-process: databases go into the state directory, private like the daemon's
        ensure_private_dir(cfg.state_dir, what="state directory", tighten=True)
    return found


def _run_engine(
    agent: AgentConfig, body: Callable[[IndexEngine], Awaitable[T]], *, writer: bool, embed: bool = False
) -> T:
    """Run `body` on the agent's engine in this process; `embed` loads the agent's embedding provider
    first, so an in-process index or search builds and reads the same index the daemon would."""

    async def main() -> T:
        selection = Selection(None)
        if embed:
            selection = await select_provider(agent.settings, cache_dir=paths.cache_dir())
        engine = IndexEngine(
            agent, selection.provider, provider_unavailable_reason=selection.reason, hold_writer_lock=writer
        )
        engine.fallback_from = selection.fallback_from
        engine.state.provider_state = "ready" if selection.provider else "unavailable"
        await engine.open()
        try:
            return await body(engine)
        finally:
            with anyio.CancelScope(shield=True):
                await engine.aclose()
            if selection.provider is not None:
                await selection.provider.aclose()

    return anyio.run(main)


def _tool(path: Path, agent: str | None, name: str, arguments: dict[str, object]) -> dict[str, object]:
    """Call a tool on the daemon; a tool error becomes a MemorydError with the daemon's message."""
    result = anyio.run(call_tool, path, agent, name, arguments)
    text = " ".join(getattr(c, "text", "") for c in result.content)
    if result.is_error:
        raise DaemonError(text or f"{name} failed")
    data = result.structured_content
    if not isinstance(data, dict):
        raise DaemonError(f"the daemon sent no structured result for {name}")
    return data


# ---------------------------------------------------------------------------- commands


def cmd_serve(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    d = cfg.daemon
    stream: TextIO | None = None
    if d.log_file:
        log_path = Path(d.log_file).expanduser()
        log_path.parent.mkdir(parents=True, exist_ok=True)
        stream = log_path.open("a", encoding="utf-8")
    logs.configure(args.log_level or d.log_level, args.log_format or d.log_format, stream)
    try:
        return daemon.run(cfg, config_path=args.config, socket_path=args.socket)
    except DaemonRunningError as exc:
        sys.stderr.write(f"memoryd serve: {exc}\n")
        return EXIT_ALREADY_RUNNING


def cmd_mcp(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    if args.standalone or args.workspace is not None:
        agent = cfg.agent(args.agent)
        solo = dataclasses.replace(cfg, agents={agent.id: agent})
        anyio.run(_standalone, solo, agent.id)
        return EXIT_OK
    path = start_daemon(_serve_args(args), cfg.state_dir, _explicit_socket(args, cfg))
    anyio.run(run_bridge, path, args.agent)
    return EXIT_OK


async def _standalone(cfg: Config, agent_id: str) -> None:
    supervisor = Supervisor(cfg)
    service = DaemonService(supervisor)
    watcher = Watcher(lambda: list(supervisor.actors.values()))
    async with anyio.create_task_group() as tg:
        await tg.start(supervisor.run)
        await tg.start(watcher.run)
        await serve_stdio(service, agent_id)
        tg.cancel_scope.cancel()


def _serve_args(args: argparse.Namespace) -> list[str]:
    """`memoryd serve`'s arguments for a daemon `memoryd mcp` starts: this command's config, state
    directory and chosen socket (absolute: the daemon outlives this process)."""
    serve: list[str] = []
    for flag, value in (("--socket", args.socket), ("--config", args.config), ("--state-dir", args.state_dir)):
        if value:
            serve += [flag, str(Path(value).expanduser().absolute())]
    return serve


def cmd_index(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    live = _live_daemon(args, cfg)
    if live is not None:
        report = anyio.run(lambda: request_sync(live, args.agent, force=args.force, reason="cli"))
    else:
        agent = cfg.agent(args.agent)
        bar = ProgressBar(f"indexing {agent.id}")

        async def body(engine: IndexEngine) -> dict[str, object]:
            result = await engine.sync("cli", force=args.force, progress=bar)
            bar.done()
            return result.to_dict()

        report = _run_engine(agent, body, writer=True, embed=True)
    if args.json:
        out.write(_dump(report) + "\n")
        return EXIT_OK
    kind = "full rebuild" if report.get("full") else "delta sync"
    out.write(
        f"{kind}: {report.get('indexed')} files indexed, {report.get('unchanged')} unchanged, "
        f"{report.get('deleted')} removed, {report.get('chunks')} chunks written in {report.get('durationMs')} ms\n"
    )
    unreadable = report.get("unreadable")
    for path in unreadable if isinstance(unreadable, list) else []:
        out.write(f"  unreadable (old rows kept): {path}\n")
    degraded = report.get("degraded")
    for place in degraded if isinstance(degraded, list) else []:
        out.write(f"  cannot read {place.get('path')} ({place.get('role')}: {place.get('reason')}); old rows kept\n")
    return EXIT_OK


def format_search(resp: dict[str, object]) -> str:
    results = resp.get("results")
    if not isinstance(results, list) or not results:
        return "No matches.\n"
    parts = []
    for r in results:
        snippet = str(r.get("snippet", ""))
        if r.get("citation"):  # the header line cites already, as OpenClaw's CLI prints it
            snippet = snippet.removesuffix(f"\n\nSource: {r['citation']}")
        snippet = snippet.rstrip()
        parts.append(f"{float(r['score']):.3f} {r['path']}:{r['startLine']}-{r['endLine']}\n{snippet}\n\n")
    return "".join(parts)


def cmd_search(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    query = args.query_opt or args.query
    if not query or not query.strip():
        sys.stderr.write("memoryd search: a query is required (positional or --query)\n")
        return EXIT_ERROR
    live = _live_daemon(args, cfg)
    if live is not None:
        arguments: dict[str, object] = {"query": query, "corpus": args.corpus}
        if args.max_results is not None:
            arguments["maxResults"] = args.max_results
        if args.min_score is not None:
            arguments["minScore"] = args.min_score
        resp = _tool(live, args.agent, "memory_search", arguments)
    else:
        agent = cfg.agent(args.agent)

        async def body(engine: IndexEngine) -> dict[str, object]:
            if not args.no_sync:
                try:
                    engine.take_writer_lock()
                except WriterLockBusyError:
                    pass  # somebody else is writing: search the index as it is
                else:
                    await engine.sync("search")
            result = await engine.search(
                query, max_results=args.max_results, min_score=args.min_score, corpus=args.corpus
            )
            return result.to_dict()

        resp = _run_engine(agent, body, writer=False, embed=True)
    out.write(_dump(resp) + "\n" if args.json else format_search(resp))
    fresh = resp.get("freshness")
    degraded = fresh.get("degraded") if isinstance(fresh, dict) else None
    for place in degraded if isinstance(degraded, list) else []:
        sys.stderr.write(
            f"memoryd: cannot read {place.get('path')} ({place.get('reason')}): its newer changes are missed\n"
        )
    return EXIT_OK


def cmd_get(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    live = _live_daemon(args, cfg)
    if live is not None:
        arguments: dict[str, object] = {"path": args.path}
        if args.from_line is not None:
            arguments["from"] = args.from_line
        if args.lines is not None:
            arguments["lines"] = args.lines
        got = _tool(live, args.agent, "memory_get", arguments)
    else:
        agent = cfg.agent(args.agent)

        async def body(engine: IndexEngine) -> dict[str, object]:
            return engine.read_file(args.path, from_line=args.from_line, lines=args.lines).to_dict()

        got = _run_engine(agent, body, writer=False)
    text = str(got.get("text", ""))
    out.write(_dump(got) + "\n" if args.json else text + ("" if text.endswith("\n") else "\n"))
    return EXIT_OK


def _format_status(st: dict[str, object]) -> str:
    lines = [f"{k}: {v if not isinstance(v, dict | list) else orjson.dumps(v).decode()}" for k, v in st.items()]
    return "\n".join(lines) + "\n"


def cmd_status(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    live = _live_daemon(args, cfg)
    statuses: list[dict[str, object]] = []
    if live is not None:
        agent_ids = [args.agent] if args.agent else list(cfg.agents)
        statuses = [_tool(live, a, "status", {"deep": args.deep}) for a in agent_ids]
    else:
        agents = [cfg.agent(args.agent)] if args.agent or args.workspace else list(cfg.agents.values())
        for agent in agents:

            async def body(engine: IndexEngine) -> dict[str, object]:
                st = engine.status()
                st["daemon"] = None
                return st

            statuses.append(_run_engine(agent, body, writer=False))
    if args.json:
        out.write(_dump(statuses[0] if len(statuses) == 1 else statuses) + "\n")
    else:
        out.write("\n".join(_format_status(s) for s in statuses))
    return EXIT_OK


def cmd_config(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    if args.agent or args.workspace:
        out.write(_dump(config_mod.to_dict(cfg.agent(args.agent))) + "\n")
        return EXIT_OK
    shown = {
        "source": str(cfg.source_file) if cfg.source_file else None,
        "stateDir": str(cfg.state_dir),
        "socket": str(cfg.socket),
        "daemon": config_mod.to_dict(cfg.daemon),
        "agents": {k: config_mod.to_dict(a) for k, a in cfg.agents.items()},
    }
    out.write(_dump(shown) + "\n")
    return EXIT_OK


def _print_install(result: InstallResult, out: TextIO) -> int:
    for change in result.files:
        out.write(f"{change.action}: {change.path}\n")
    for command in result.commands:
        out.write(f"ran: {' '.join(command.argv)} (exit {command.returncode})\n")
        if not command.ok and command.output:
            out.write(f"  {command.output.strip()}\n")
    for argv in result.pending:
        out.write(f"to do: {' '.join(argv)}\n")
    for note in result.notes:
        out.write(f"note: {note}\n")
    return EXIT_OK if result.ok else EXIT_ERROR


def cmd_model(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    local = cfg.agent(args.agent).settings.local
    cache = Path(local.model_cache_dir).expanduser() if local.model_cache_dir else paths.cache_dir() / "models"
    model_path = Path(local.model_path).expanduser() if local.model_path else None

    def progress(name: str, done: int, total: int | None) -> None:
        if sys.stderr.isatty():
            size = f" of {total / 1e6:.1f} MB" if total else ""
            sys.stderr.write(f"\rdownloading {name}: {done / 1e6:.1f} MB{size}")

    async def pull() -> LocalEmbeddingProvider:
        provider = LocalEmbeddingProvider(cache, model_path=model_path, progress=progress)
        await provider.load()
        return provider

    provider = anyio.run(pull)
    if provider.state is not LoadState.READY:
        raise provider.error or DaemonError("the local model did not load")
    out.write(f"{provider.model}: ready ({provider.dims} dims, source: {provider.source})\n")
    anyio.run(provider.aclose)
    return EXIT_OK


def cmd_install_service(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    result = install_service(enable=not args.no_enable, force=args.force, socket_activation=args.socket_activation)
    return _print_install(result, out)


def cmd_uninstall_service(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    return _print_install(uninstall_service(force=args.force), out)


COMMANDS: dict[str, Callable[[argparse.Namespace, Config, TextIO], int]] = {
    "serve": cmd_serve,
    "mcp": cmd_mcp,
    "index": cmd_index,
    "sync": cmd_index,
    "search": cmd_search,
    "get": cmd_get,
    "status": cmd_status,
    "config": cmd_config,
    "install-service": cmd_install_service,
    "model": cmd_model,
    "eval": lambda args, cfg, out: eval_cli.run(args, out),
    "uninstall-service": cmd_uninstall_service,
}


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    args = build_parser().parse_args(argv)
    stdout = out if out is not None else sys.stdout
    if args.command != "serve":
        logs.configure(args.log_level or "warning")
    try:
        cfg = _load(args)
        return COMMANDS[args.command](args, cfg, stdout)
    except ConfigError as exc:
        sys.stderr.write(f"memoryd: {exc}\n")
        return EXIT_USAGE
    except MemorydError as exc:
        sys.stderr.write(f"memoryd {args.command}: {exc}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BaseExceptionGroup as group:  # errors raised inside task groups (socket clients, the daemon)
        inner = first_error(group)
        if isinstance(inner, KeyboardInterrupt):
            return 130
        if not isinstance(inner, MemorydError | ConfigError):
            raise
        sys.stderr.write(f"memoryd {args.command}: {inner}\n")
        return EXIT_USAGE if isinstance(inner, ConfigError) else EXIT_ERROR
