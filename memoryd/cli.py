"""The `memoryd` command line. Output goes to stdout; logs and progress go to stderr.

Commands work in-process on the agent's index (taking the writer lock while they write).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TextIO

import anyio
import orjson

from memoryd import __version__
from memoryd import config as config_mod
from memoryd import logging as logs
from memoryd.config import AgentConfig, Config
from memoryd.errors import ConfigError, MemorydError
from memoryd.index.engine import IndexEngine, SearchResponse
from memoryd.progress import ProgressBar
from memoryd.store.lock import WriterLockBusyError

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
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _common()
    parser = argparse.ArgumentParser(prog="memoryd", description="Long-term memory search for AI agents.")
    parser.add_argument("--version", action="version", version=f"memoryd {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("index", parents=[common], help="bring the index up to date (--force: full rebuild)")
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

    p = sub.add_parser("sync", parents=[common], help="sync now (same as index)")
    p.add_argument("--force", action="store_true", help="full rebuild")
    p.add_argument("--json", action="store_true", help="print the sync report as JSON")

    p = sub.add_parser("config", parents=[common], help="inspect configuration")
    p.add_argument("action", choices=["show"], help="show: print the effective config")
    return parser


def _load(args: argparse.Namespace) -> Config:
    return config_mod.load(args.config, state_dir=args.state_dir, workspace=args.workspace, agent_id=args.agent)


def _run_engine(agent: AgentConfig, body: Callable[[IndexEngine], Awaitable[int]], *, writer: bool) -> int:
    async def main() -> int:
        engine = IndexEngine(agent, hold_writer_lock=writer)
        await engine.open()
        try:
            return await body(engine)
        finally:
            engine.close()

    return anyio.run(main)


def cmd_index(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    agent = cfg.agent(args.agent)
    bar = ProgressBar(f"indexing {agent.id}")

    async def body(engine: IndexEngine) -> int:
        report = await engine.sync("cli", force=args.force, progress=bar)
        bar.done()
        if args.json:
            out.write(_dump(report.to_dict()) + "\n")
        else:
            c = report.counts
            kind = "full rebuild" if report.full else "delta sync"
            out.write(
                f"{agent.id}: {kind}: {c.indexed} files indexed, {c.unchanged} unchanged, {c.deleted} removed, "
                f"{c.chunks} chunks written in {report.duration_ms} ms\n"
            )
            for path in c.unreadable:
                out.write(f"  unreadable (old rows kept): {path}\n")
        return EXIT_OK

    return _run_engine(agent, body, writer=True)


def _format_search(resp: SearchResponse) -> str:
    if not resp.results:
        return "No matches.\n"
    parts = [f"{r.score:.3f} {r.path}:{r.start_line}-{r.end_line}\n{r.snippet.rstrip()}\n\n" for r in resp.results]
    return "".join(parts)


def cmd_search(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    query = args.query_opt or args.query
    if not query or not query.strip():
        sys.stderr.write("memoryd search: a query is required (positional or --query)\n")
        return EXIT_ERROR
    agent = cfg.agent(args.agent)

    async def body(engine: IndexEngine) -> int:
        if not args.no_sync:
            try:
                engine._lock.acquire()
            except WriterLockBusyError:
                pass
            else:
                await engine.sync("search")
        resp = await engine.search(query, max_results=args.max_results, min_score=args.min_score, corpus=args.corpus)
        out.write(_dump(resp.to_dict()) + "\n" if args.json else _format_search(resp))
        return EXIT_OK

    return _run_engine(agent, body, writer=False)


def cmd_get(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    agent = cfg.agent(args.agent)

    async def body(engine: IndexEngine) -> int:
        sl = engine.read_file(args.path, from_line=args.from_line, lines=args.lines)
        out.write(_dump(sl.to_dict()) + "\n" if args.json else sl.text + ("" if sl.text.endswith("\n") else "\n"))
        return EXIT_OK

    return _run_engine(agent, body, writer=False)


def _format_status(st: dict[str, object]) -> str:
    lines = [f"{k}: {v if not isinstance(v, dict | list) else orjson.dumps(v).decode()}" for k, v in st.items()]
    return "\n".join(lines) + "\n"


def cmd_status(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    agents = [cfg.agent(args.agent)] if args.agent or args.workspace else list(cfg.agents.values())
    statuses: list[dict[str, object]] = []
    for agent in agents:

        async def body(engine: IndexEngine) -> int:
            statuses.append(engine.status())
            return EXIT_OK

        _run_engine(agent, body, writer=False)
    if args.json:
        out.write(_dump(statuses[0] if len(statuses) == 1 else statuses) + "\n")
    else:
        out.write("\n".join(_format_status(s) for s in statuses))
    return EXIT_OK


def cmd_config(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    if args.agent or args.workspace:
        agent = cfg.agent(args.agent)
        out.write(_dump(config_mod.to_dict(agent)) + "\n")
    else:
        out.write(
            _dump(
                {
                    "source": str(cfg.source_file) if cfg.source_file else None,
                    "stateDir": str(cfg.state_dir),
                    "daemon": config_mod.to_dict(cfg.daemon),
                    "agents": {k: config_mod.to_dict(a) for k, a in cfg.agents.items()},
                }
            )
            + "\n"
        )
    return EXIT_OK


COMMANDS: dict[str, Callable[[argparse.Namespace, Config, TextIO], int]] = {
    "index": cmd_index,
    "sync": cmd_index,
    "search": cmd_search,
    "get": cmd_get,
    "status": cmd_status,
    "config": cmd_config,
}


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    args = build_parser().parse_args(argv)
    stdout = out if out is not None else sys.stdout
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
