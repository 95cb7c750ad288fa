"""The `memoryd` argument parser: argparse only, so `memoryd --help` starts in a blink.

Nothing here may import a command's implementation. `eval`'s options are registered by
`memoryd.eval.cli.add_parser`, a module that imports the whole evaluation harness; so it is asked
only when the command line runs `eval` (or a caller wants every option, as the docs test does), and
everywhere else `eval` is listed by name and help alone.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from memoryd import __version__

EVAL_HELP = "measure retrieval quality on public dev sets"


GLOBAL_FLAGS = {
    "--config": "config",
    "--agent": "agent",
    "--workspace": "workspace",
    "--state-dir": "state_dir",
    "--log-level": "log_level",
    "--socket": "socket",
}
"""The flags every command takes (each with a value), accepted before the subcommand too, git-style."""


def _common() -> argparse.ArgumentParser:
    """The global flags. Their default is SUPPRESS, before and after the subcommand alike, so a flag given
    before it is not overwritten by the subcommand's default (`parse` starts every one at None)."""
    common = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS)
    common.add_argument("--config", type=Path, help="config file (default: $XDG_CONFIG_HOME/memoryd/config.toml)")
    common.add_argument("--agent", help="agent id (default: the only enabled agent; required when there are several)")
    common.add_argument(
        "--workspace", type=Path, help="an ad-hoc agent rooted at PATH (transcripts from PATH/sessions)"
    )
    common.add_argument("--state-dir", type=Path, help="where databases live (default: $XDG_STATE_HOME/memoryd)")
    common.add_argument("--log-level", help="debug, info, warning, error (default: warning)")
    common.add_argument(
        "--socket", type=Path, help="the daemon's socket (default: $XDG_RUNTIME_DIR/memoryd/memoryd.sock)"
    )
    return common


def command_of(argv: Sequence[str]) -> str | None:
    """The subcommand `argv` names: its first word that is neither an option nor a global flag's value."""
    words = iter(argv)
    for word in words:
        if word in GLOBAL_FLAGS:
            next(words, None)  # its value
        elif not word.startswith("-"):
            return word
    return None


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """The command line; a global flag may come before the subcommand (`memoryd --config X status`) or after
    it, and given both places, the subcommand's wins. Every global flag not given is None."""
    command = command_of(argv)
    parser = _hook_parser() if command == "hook" else build_parser(with_eval=command == "eval")
    return parser.parse_args(argv, namespace=argparse.Namespace(**dict.fromkeys(GLOBAL_FLAGS.values())))


def _add_hook(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("hook", parents=[common], help="run as a Claude Code or Codex hook (host JSON on stdin)")
    p.add_argument("host", help="claude-code or codex")  # no choices: a usage error would exit 2, which blocks
    p.add_argument("event", help="the host's hook event: SessionStart, UserPromptSubmit, PreCompact, SessionEnd, Stop")


class _HookParser(argparse.ArgumentParser):
    """A usage error exits 0, not 2: Claude Code reads exit 2 from a UserPromptSubmit hook as "block the
    prompt", and a hook entry left by another memoryd version must never do that."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(0, f"{self.prog}: error: {message}\n")


def _hook_parser() -> argparse.ArgumentParser:
    """The parser of `memoryd hook` alone: it runs before every prompt, so it skips building the others."""
    common = _common()
    parser: argparse.ArgumentParser = _HookParser(prog="memoryd", parents=[common])
    sub: argparse._SubParsersAction[argparse.ArgumentParser] = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_HookParser
    )
    _add_hook(sub, common)
    return parser


def build_parser(*, with_eval: bool = True) -> argparse.ArgumentParser:
    """The full parser; `with_eval=False` lists `eval` without importing its module (and its harness)."""
    common = _common()
    parser = argparse.ArgumentParser(
        prog="memoryd", description="Long-term memory search for AI agents.", parents=[common]
    )
    parser.add_argument("--version", action="version", version=f"memoryd {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("serve", parents=[common], help="run the daemon in the foreground (for systemd/launchd)")
    p.add_argument("--log-format", choices=["console", "json"], help="log format (default from config: console)")
    p.add_argument(
        "--http", metavar="HOST:PORT", help="also serve MCP over Streamable HTTP and the viewer (default: daemon.http)"
    )

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
    p.add_argument(
        "--min-score",
        type=float,
        help="drop results scoring below X (default from config: 0.10; 0: the ranking as it is, no abstention)",
    )
    p.add_argument("--corpus", choices=["memory", "sessions", "all"], default="all", help="which sources to search")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--no-sync", action="store_true", help="search the index as it is, without a delta sync first")

    p = sub.add_parser("setup", parents=[common], help="the MCP entry for an MCP host (print it, or --write it)")
    p.add_argument("host", choices=["claude-code", "claude-desktop", "codex", "cursor"], help="the MCP host")
    p.add_argument("--write", action="store_true", help="merge it into the host's config file (a backup is kept)")
    p.add_argument(
        "--hooks",
        choices=["none", "recall", "all"],
        default="all",
        help="Claude Code and Codex: also install memoryd's hooks (recall: before each prompt; all: also the "
        "session-start brief and capture; none: remove them) (default: all)",
    )

    _add_hook(sub, common)

    p = sub.add_parser("forget", parents=[common], help="delete retained session transcripts for good")
    p.add_argument("paths", nargs="*", help="transcripts as results name them (claude-code/...), or their old path")
    p.add_argument("--all", action="store_true", help="every retained transcript of the agent")
    p.add_argument("--before", help="only transcripts whose last message is before this date (YYYY-MM-DD, UTC)")
    p.add_argument("--after", help="only transcripts whose last message is on or after this date")
    p.add_argument("--json", action="store_true", help="print the report as JSON")

    p = sub.add_parser("reload", parents=[common], help="make the running daemon read its configuration again")
    p.add_argument("--json", action="store_true", help="print the daemon's reply as JSON")

    p = sub.add_parser("remember", parents=[common], help="save a memory (append to today's note or MEMORY.md)")
    p.add_argument("text", help="what to remember, as markdown; '-' reads it from stdin")
    p.add_argument("--long-term", action="store_true", help="append to MEMORY.md instead of today's daily note")
    p.add_argument("--heading", help="file it under this '## heading' section (started at the end if missing)")
    p.add_argument("--json", action="store_true", help="print the memory_write reply as JSON")

    p = sub.add_parser("get", parents=[common], help="print lines of a memory file")
    p.add_argument("path", help="workspace-relative path, e.g. memory/2026-01-05.md")
    p.add_argument("--from", dest="from_line", type=int, help="first line (1-based)")
    p.add_argument("--lines", type=int, help="number of lines")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("status", parents=[common], help="show index status")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--deep", action="store_true", help="also probe the vector store and embeddings")
    p.add_argument("--watch", action="store_true", help="show each agent's indexing progress until every one is idle")

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

    if with_eval:
        from memoryd.eval import cli as eval_cli

        eval_cli.add_parser(sub, parents=[common])
    else:
        sub.add_parser("eval", help=EVAL_HELP)

    p = sub.add_parser("model", parents=[common], help="the local embedding model")
    p.add_argument("action", choices=["pull"], help="pull: locate or download (and prepare) the model now")

    p = sub.add_parser("token", parents=[common], help="bearer tokens of the HTTP face: create, list, revoke")
    p.add_argument("action", choices=["create", "list", "revoke"], help="create (--agent ID[,ID]), list, revoke ID")
    p.add_argument("id", nargs="?", help="revoke: the token's id (from token list)")
    p.add_argument("--read-only", action="store_true", help="create: no memory_write with this token")
    p.add_argument("--expires", metavar="DURATION", help="create: valid for 30m, 12h, 7d, 2w… (default: no expiry)")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("config", parents=[common], help="inspect configuration")
    p.add_argument("action", choices=["show"], help="show: print the effective config")
    return parser
