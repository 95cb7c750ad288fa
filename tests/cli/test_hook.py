"""`memoryd hook`: the hosts' documented hook JSON on stdin of the real command, against the real daemon.

Recall injects cited snippets in the host's output shape within the budget, never the same snippet twice
in a session, never the session's own transcript, never another project's transcript (unless
`hooks.scope = "all"`); capture makes a finished session searchable at once; and whatever fails (no
daemon, bad JSON, a refusing or stalled daemon) the hook exits 0 with nothing on stdout.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.cli.test_imports import heavy, imported
from tests.conftest import write
from tests.integration.daemon_fixture import Daemon

pytestmark = pytest.mark.integration

INPUTS = Path(__file__).parent / "hook_inputs"
SESSION = "11111111-2222-4333-8444-555555555555"
CONFIG = """
[defaults]
provider = "none"
[agents.main]
workspace = "{root}/ws"
sessions = ["claude-code"]
"""
HOOK_CMD = (sys.executable, "-m", "memoryd", "hook")
HookRun = Callable[..., subprocess.CompletedProcess[str]]


def claude_record(role: str, text: str) -> str:
    return json.dumps({"type": role, "message": {"role": role, "content": text}}) + "\n"


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    ws = tmp_path / "ws"
    write(
        ws / "MEMORY.md", "# Memory\n\n- The staging database lives on host kestrel.\n- Deploys happen on Tuesdays.\n"
    )
    write(
        ws / "memory" / "2026-11-03.md",
        "# Standup\n\n## Decisions\n\nWe chose Postgres logical replication for the orchard migration.\n",
    )
    projects = tmp_path / "claude" / "projects"
    write(projects / "-proj-a" / f"{SESSION}.jsonl", claude_record("user", "Remember the zebra marmalade plan."))
    write(projects / "-proj-a" / "older-session.jsonl", claude_record("user", "The heron pipeline needs a retry."))
    write(projects / "-proj-b" / "other.jsonl", claude_record("user", "The walrus accordion ships in May."))
    config = write(tmp_path / "config.toml", CONFIG.format(root=tmp_path))
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "rt"), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    d = Daemon(tmp_path, config, tmp_path / "state", tmp_path / "rt" / "memoryd" / "memoryd.sock", env)
    d.start()
    yield d
    d.stop()


def payload(host: str, event: str, **fields: Any) -> bytes:
    """The host's documented example input for `event`, with this test's fields put in."""
    data = json.loads((INPUTS / f"{host}.{event}.json").read_text())
    data.update(fields)
    return json.dumps(data).encode()


@pytest.fixture
def hook(daemon: Daemon) -> HookRun:
    def run(
        host: str, event: str, stdin: bytes, *, hooks: str = "", env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        config = daemon.config
        if hooks:  # the hook's own config (its [hooks] table) beside the daemon's
            config = write(daemon.root / "hook-config.toml", config.read_text() + "\n[hooks]\n" + hooks)
        cmd = [sys.executable, "-m", "memoryd", "hook", host, event, "--config", str(config)]
        cmd += ["--state-dir", str(daemon.state)]
        return subprocess.run(
            cmd, input=stdin.decode(), capture_output=True, text=True, env=env or daemon.env, timeout=60, check=False
        )

    return run


def prompt(daemon: Daemon, text: str, *, session: str = "s-1", project: str = "-proj-a") -> bytes:
    transcript = daemon.root / "claude" / "projects" / project / f"{session}.jsonl"
    return payload(
        "claude-code",
        "UserPromptSubmit",
        session_id=session,
        transcript_path=str(transcript),
        cwd="/proj/a",
        prompt=text,
    )


def context(done: subprocess.CompletedProcess[str], event: str = "UserPromptSubmit") -> str:
    """The injected text, checked to be exactly the documented output shape."""
    assert done.returncode == 0, done.stderr
    out = orjson.loads(done.stdout)
    assert set(out) == {"hookSpecificOutput"}
    assert set(out["hookSpecificOutput"]) == {"hookEventName", "additionalContext"}
    assert out["hookSpecificOutput"]["hookEventName"] == event
    text: str = out["hookSpecificOutput"]["additionalContext"]
    return text


def silent(done: subprocess.CompletedProcess[str]) -> None:
    assert (done.returncode, done.stdout) == (0, ""), done.stderr


def test_recall_injects_cited_lines_once_per_session(daemon: Daemon, hook: HookRun) -> None:
    first = context(
        hook("claude-code", "UserPromptSubmit", prompt(daemon, "which replication for the orchard migration?"))
    )
    assert "memory/2026-11-03.md#L" in first
    assert "Postgres logical replication" in first
    assert len(first) <= 1500
    silent(hook("claude-code", "UserPromptSubmit", prompt(daemon, "the orchard migration replication again")))
    again = context(hook("claude-code", "UserPromptSubmit", prompt(daemon, "orchard replication", session="s-2")))
    assert "Postgres logical replication" in again  # another session has not seen it
    last = json.loads((daemon.state / "hooks" / "last.json").read_text())
    assert last["claude-code UserPromptSubmit"]["outcome"] == "injected"
    assert last["claude-code UserPromptSubmit"]["injected"] >= 1
    assert "orchard" not in (daemon.state / "hooks" / "last.json").read_text()  # counts, never text


def test_nothing_when_memory_has_nothing(daemon: Daemon, hook: HookRun) -> None:
    silent(hook("claude-code", "UserPromptSubmit", prompt(daemon, "quaternion sprocket lubrication")))
    silent(hook("claude-code", "UserPromptSubmit", prompt(daemon, "/compact")))


def test_own_transcript_and_other_projects_are_left_out(daemon: Daemon, hook: HookRun) -> None:
    silent(hook("claude-code", "UserPromptSubmit", prompt(daemon, "zebra marmalade plan", session=SESSION)))
    other = context(hook("claude-code", "UserPromptSubmit", prompt(daemon, "zebra marmalade plan", session="s-3")))
    assert f"claude-code/-proj-a/{SESSION}.jsonl#L1" in other
    silent(hook("claude-code", "UserPromptSubmit", prompt(daemon, "walrus accordion ships")))
    wide = hook("claude-code", "UserPromptSubmit", prompt(daemon, "walrus accordion ships"), hooks='scope = "all"\n')
    assert "claude-code/-proj-b/other.jsonl#L1" in context(wide)


def test_a_session_id_inside_another_file_name_is_not_that_file(daemon: Daemon, hook: HookRun) -> None:
    # Session "older" is not the transcript older-session.jsonl: only the whole id names a file.
    found = context(hook("claude-code", "UserPromptSubmit", prompt(daemon, "heron pipeline retry", session="older")))
    assert "claude-code/-proj-a/older-session.jsonl#L1" in found


def test_the_budget_holds(daemon: Daemon, hook: HookRun) -> None:
    text = context(
        hook(
            "claude-code",
            "UserPromptSubmit",
            prompt(daemon, "kestrel staging Tuesdays orchard heron"),
            hooks="max_chars = 300\n",
        )
    )
    assert len(text) <= 300
    assert text.startswith("<memoryd-recall>") and text.endswith("</memoryd-recall>")


def test_a_short_follow_up_searches_the_previous_turn(daemon: Daemon, hook: HookRun) -> None:
    transcript = daemon.root / "claude" / "projects" / "-proj-a" / "s-4.jsonl"
    write(
        transcript,
        claude_record("user", "Where does the staging database live?") + claude_record("assistant", "On a host."),
    )
    stdin = payload("claude-code", "UserPromptSubmit", session_id="s-4", transcript_path=str(transcript), prompt="and?")
    assert "kestrel" in context(hook("claude-code", "UserPromptSubmit", stdin))


def test_codex_prompt_gets_its_documented_shape(daemon: Daemon, hook: HookRun) -> None:
    stdin = payload("codex", "UserPromptSubmit", prompt="which replication did we choose for the orchard?")
    assert "Postgres logical replication" in context(hook("codex", "UserPromptSubmit", stdin))


def test_session_start_brief(daemon: Daemon, hook: HookRun) -> None:
    stdin = payload("claude-code", "SessionStart", session_id="s-5", cwd=str(daemon.root / "repo"))
    text = context(hook("claude-code", "SessionStart", stdin, hooks='session_start = "on"\n'), "SessionStart")
    assert "kestrel" in text and "memory/2026-11-03.md: # Standup; ## Decisions" in text
    write(daemon.root / "repo" / "CLAUDE.md", f"See @{daemon.root / 'ws' / 'MEMORY.md'}\n")
    silent(hook("claude-code", "SessionStart", stdin))  # auto: Claude Code already loads that MEMORY.md
    compacted = payload(
        "claude-code", "SessionStart", session_id="s-5", cwd=str(daemon.root / "repo"), source="compact"
    )
    flushed = context(hook("claude-code", "SessionStart", compacted, hooks="flush = true\n"), "SessionStart")
    assert "memory_write" in flushed and "kestrel" not in flushed
    codex = hook("codex", "SessionStart", payload("codex", "SessionStart"), hooks='session_start = "on"\n')
    assert "kestrel" in context(codex, "SessionStart")


def test_capture_makes_the_session_searchable_at_once(daemon: Daemon, hook: HookRun) -> None:
    transcript = daemon.root / "claude" / "projects" / "-proj-a" / "s-6.jsonl"
    write(transcript, claude_record("user", "The pelican firmware goes out on Friday."))
    stdin = payload("claude-code", "SessionEnd", session_id="s-6", transcript_path=str(transcript), cwd="/proj/a")
    silent(hook("claude-code", "SessionEnd", stdin))
    found = context(hook("claude-code", "UserPromptSubmit", prompt(daemon, "pelican firmware release", session="s-7")))
    assert "claude-code/-proj-a/s-6.jsonl#L1" in found
    last = json.loads((daemon.state / "hooks" / "last.json").read_text())
    assert last["claude-code SessionEnd"]["outcome"] == "captured"


def test_capture_of_a_transcript_outside_the_session_folders_is_logged(daemon: Daemon, hook: HookRun) -> None:
    stray = write(daemon.root / "elsewhere" / "s-9.jsonl", claude_record("user", "The osprey manual is lost."))
    stdin = payload("claude-code", "SessionEnd", session_id="s-9", transcript_path=str(stray), cwd="/proj/a")
    silent(hook("claude-code", "SessionEnd", stdin))
    log = (daemon.state / "hooks.log").read_text()
    assert "is not a transcript in agent 'main'" in log and str(stray) in log


@pytest.mark.parametrize(
    "stdin", [b"", b"not json", b"[1, 2]", b'{"hook_event_name": "Stop", "prompt": "orchard replication"}']
)
def test_bad_input_is_silent(daemon: Daemon, hook: HookRun, stdin: bytes) -> None:
    silent(hook("claude-code", "UserPromptSubmit", stdin))
    assert "UserPromptSubmit" in (daemon.state / "hooks.log").read_text()


def test_unknown_host_or_event_and_refusing_daemon_are_silent(daemon: Daemon, hook: HookRun) -> None:
    stdin = prompt(daemon, "orchard replication")
    silent(hook("vim", "UserPromptSubmit", stdin))
    silent(hook("claude-code", "Bogus", stdin))
    where = ("--config", str(daemon.config), "--state-dir", str(daemon.state))
    refused = subprocess.run(
        [*HOOK_CMD, "claude-code", "UserPromptSubmit", "--agent", "nobody", *where],
        input=stdin.decode(),
        capture_output=True,
        text=True,
        env=daemon.env,
        timeout=60,
        check=False,
    )
    silent(refused)
    assert "nobody" in (daemon.state / "hooks.log").read_text()


def test_a_stalled_daemon_leaves_the_prompt_alone(daemon: Daemon, hook: HookRun) -> None:
    os.kill(daemon.pid, signal.SIGSTOP)
    try:
        silent(
            hook("claude-code", "UserPromptSubmit", prompt(daemon, "orchard replication"), hooks="timeout_ms = 300\n")
        )
    finally:
        os.kill(daemon.pid, signal.SIGCONT)
    assert "timed out" in (daemon.state / "hooks.log").read_text()


def test_no_daemon_is_silent(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "rt")}
    stdin = payload("claude-code", "UserPromptSubmit", prompt="orchard replication")
    done = subprocess.run(
        [sys.executable, "-m", "memoryd", "hook", "claude-code", "UserPromptSubmit", "--state-dir", str(state)],
        input=stdin.decode(),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    silent(done)
    assert "no memoryd daemon is running" in (state / "hooks.log").read_text()
    assert not (tmp_path / "rt" / "memoryd").exists()  # and it started none


def test_the_hook_imports_nothing_heavy(daemon: Daemon) -> None:
    """It runs before every prompt: no daemon, index, embedding, MCP SDK, numpy or SQLite import."""
    stdin = prompt(daemon, "which replication for the orchard migration?")
    where = ("--config", str(daemon.config), "--state-dir", str(daemon.state))
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "memoryd", "hook", "claude-code", "UserPromptSubmit", *where],
        input=stdin.decode(),
        capture_output=True,
        text=True,
        env=daemon.env,
        timeout=60,
        check=False,
    )
    assert "Postgres logical replication" in orjson.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    modules = imported(done.stderr)
    assert "memoryd.cli.hook" in modules
    assert heavy(modules) == []


def test_status_shows_when_each_hook_last_ran(daemon: Daemon, hook: HookRun) -> None:
    context(hook("claude-code", "UserPromptSubmit", prompt(daemon, "which replication for the orchard migration?")))
    where = ("--config", str(daemon.config), "--state-dir", str(daemon.state))
    done = subprocess.run(
        [sys.executable, "-m", "memoryd", "status", "--json", *where],
        capture_output=True,
        text=True,
        env=daemon.env,
        timeout=60,
        check=False,
    )
    run = orjson.loads(done.stdout)["hooks"]["claude-code UserPromptSubmit"]
    assert run["outcome"] == "injected" and run["injected"] >= 1 and run["chars"] > 0
    assert run["at"].endswith("Z")


def test_concurrent_sessions_never_see_a_snippet_twice(daemon: Daemon, hook: HookRun) -> None:
    """Three sessions at once, the same prompts in each: within a session no citation comes back."""
    prompts = ["orchard replication", "kestrel staging host", "orchard migration Postgres", "staging database kestrel"]

    def session(n: int) -> list[str]:
        labels = []
        for text in prompts:
            done = hook("claude-code", "UserPromptSubmit", prompt(daemon, text, session=f"c-{n}"))
            if done.stdout:
                labels += [line.split(": ", 1)[0] for line in context(done).splitlines() if line.startswith("- ")]
            else:
                silent(done)
        return labels

    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(session, range(3)))
    for labels in results:
        assert labels and len(labels) == len(set(labels))


@pytest.mark.parametrize("argv", [["claude-code", "UserPromptSubmit", "--bogus"], [], ["claude-code"]])
def test_a_usage_error_exits_0(argv: list[str]) -> None:
    """Exit 2 from a UserPromptSubmit hook blocks the prompt in Claude Code: a bad hook entry must not."""
    done = subprocess.run([*HOOK_CMD, *argv], input="{}", capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (0, "")
    assert "error" in done.stderr
