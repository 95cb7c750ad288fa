"""The global flags before the subcommand too, git-style (`memoryd --config X status`), without breaking
them after it; given both places, the subcommand's value wins. It was `invalid choice: 'X'`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
from hypothesis import given
from hypothesis import strategies as st

from memoryd.cli.parser import GLOBAL_FLAGS, command_of, parse
from tests.conftest import write

PATHS = {"config", "workspace", "state_dir", "socket"}
values = st.text(alphabet="abcxyz019_.", min_size=1, max_size=8)


@given(
    before=st.dictionaries(st.sampled_from(sorted(GLOBAL_FLAGS)), values),
    after=st.dictionaries(st.sampled_from(sorted(GLOBAL_FLAGS)), values),
    joined=st.booleans(),
)
def test_a_global_flag_is_read_before_or_after_the_subcommand_and_the_subcommands_wins(
    before: dict[str, str], after: dict[str, str], joined: bool
) -> None:
    def spelled(flags: dict[str, str]) -> list[str]:
        return [w for flag, v in flags.items() for w in ([f"{flag}={v}"] if joined else [flag, v])]

    argv = [*spelled(before), "search", "bees", *spelled(after)]
    assert command_of(argv) == "search"
    args = parse(argv)
    assert (args.command, args.query) == ("search", "bees")
    for flag, dest in GLOBAL_FLAGS.items():
        value = after.get(flag, before.get(flag))
        expected = Path(value) if value is not None and dest in PATHS else value
        assert getattr(args, dest) == expected, (flag, argv)


def test_a_global_flags_value_is_never_taken_for_the_subcommand() -> None:
    assert command_of(["--config", "eval", "status"]) == "status"
    assert command_of(["--log-level", "debug", "--version"]) is None
    assert parse(["--config", "status", "get", "MEMORY.md"]).config == Path("status")


def test_memoryd_config_x_status_runs(tmp_path: Path) -> None:
    config = write(tmp_path / "c.toml", f'[defaults]\nprovider = "none"\n[agents.solo]\nworkspace = "{tmp_path}/ws"\n')
    write(tmp_path / "ws" / "MEMORY.md", "# Notes\n")
    cmd = [sys.executable, "-m", "memoryd", "--config", str(config), "--state-dir", str(tmp_path / "st")]
    out = subprocess.run([*cmd, "status", "--json"], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert orjson.loads(out.stdout)["agent"] == "solo"
