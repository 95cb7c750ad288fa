"""A stand-in `qmd` executable for failure-mode tests: a small Python script written into tmp_path.

It keeps collections in a JSON file inside the agent's `QMD_CONFIG_DIR` (so per-agent isolation is
observable), logs every call (argv, cwd, QMD environment) to `calls.jsonl`, and answers searches
with the hits the test configured for the collections it was asked about. `behaviour.json` beside
it overrides any command: a fixed exit code, stdout, stderr, a delay, a hang, a grandchild process.
Tests change the behaviour between calls with `StandIn.set(...)`.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

SCRIPT = r"""
import json, os, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "behaviour.json"), encoding="utf-8") as fh:
    SPEC = json.load(fh)
ARGS = sys.argv[1:]
ENV_KEYS = ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "QMD_CONFIG_DIR", "NO_COLOR")
with open(os.path.join(HERE, "calls.jsonl"), "a", encoding="utf-8") as log:
    record = {"args": ARGS, "cwd": os.getcwd(), "pid": os.getpid(),
              "env": {k: os.environ.get(k) for k in ENV_KEYS}}
    log.write(json.dumps(record) + "\n")

command = ARGS[0] if ARGS else ""
if command == "collection" and len(ARGS) > 1:
    command = "collection " + ARGS[1]
rule = SPEC.get("commands", {}).get(command) or {}

if rule.get("child"):
    child = subprocess.Popen([sys.executable, "-S", "-c", "import time; time.sleep(600)"])
    with open(os.path.join(HERE, "child.pid"), "w", encoding="utf-8") as fh:
        fh.write(str(child.pid))
if rule.get("notify"):
    with open(rule["notify"], "w", encoding="utf-8") as fh:  # a FIFO the test is reading
        fh.write("running\n")
if rule.get("hang"):
    sys.stderr.write("loading model...\n")
    sys.stderr.flush()
    time.sleep(600)
if rule.get("sleep"):
    time.sleep(rule["sleep"])
if "exit" in rule or "stdout" in rule or "stderr" in rule:
    sys.stdout.write(rule.get("stdout", ""))
    sys.stderr.write(rule.get("stderr", ""))
    if rule.get("stdout_bytes"):
        sys.stdout.write("x" * rule["stdout_bytes"])
    sys.exit(rule.get("exit", 0))

state_dir = os.environ.get("QMD_CONFIG_DIR") or os.path.join(HERE, "state")
os.makedirs(state_dir, exist_ok=True)
state_file = os.path.join(state_dir, "standin.json")
try:
    with open(state_file, encoding="utf-8") as fh:
        cols = json.load(fh)
except FileNotFoundError:
    cols = {}

def save():
    with open(state_file, "w", encoding="utf-8") as fh:
        json.dump(cols, fh)

def flag(name):
    return ARGS[ARGS.index(name) + 1] if name in ARGS else None

if command == "--version":
    print("qmd 9.9.9 (standin)")
elif command == "--help":
    print("  -c, --collection <name>    - Filter by one or more collections")
elif command == "collection list":
    if SPEC.get("list_format") == "table":
        print("Collections (%d):\n" % len(cols))
        for name, c in cols.items():
            print("%s (qmd://%s/)\n  Pattern:  %s\n  Files:    0\n" % (name, name, c["pattern"]))
    else:
        print(json.dumps([{"name": n, "path": c["path"], "pattern": c["pattern"]} for n, c in cols.items()]))
elif command == "collection show":
    name = ARGS[2]
    if name not in cols:
        sys.stderr.write("Collection not found: %s\n" % name); sys.exit(1)
    print("Collection: %s\n  Path:     %s\n  Pattern:  %s" % (name, cols[name]["path"], cols[name]["pattern"]))
elif command == "collection add":
    if SPEC.get("reject_glob") and "--glob" in ARGS:
        sys.stderr.write("error: unknown option '--glob'\n"); sys.exit(2)
    name = flag("--name")
    pattern = flag("--glob") or flag("--mask")
    if name in cols:
        sys.stderr.write("Collection '%s' already exists.\n" % name); sys.exit(1)
    cols[name] = {"path": ARGS[2], "pattern": pattern}
    save()
elif command == "collection remove":
    name = ARGS[2]
    if name not in cols:
        sys.stderr.write("Collection not found: %s\n" % name); sys.exit(1)
    del cols[name]
    save()
elif command in ("update", "embed"):
    print("%s done" % command)
elif command == "status":
    print("Documents\n  Total:    3 files indexed\n  Vectors:  %d embedded" % SPEC.get("vectors", 0))
elif command in ("search", "vsearch", "query"):
    wanted = [ARGS[i + 1] for i, a in enumerate(ARGS) if a == "-c"]
    missing = [w for w in wanted if w not in cols]
    if missing:
        sys.stderr.write("Collection not found: %s\n" % missing[0]); sys.exit(1)
    limit = int(flag("-n") or 5)
    hits = [h for h in SPEC.get("hits", []) if h.get("collection") in wanted]
    out = []
    for h in hits[:limit]:
        entry = {k: v for k, v in h.items() if k != "collection"}
        entry.setdefault("file", "qmd://%s/%s" % (h["collection"], h.get("path", "x.md")))
        entry.pop("path", None)
        out.append(entry)
    print(json.dumps(out, indent=2))
else:
    sys.stderr.write("Unknown command: %s\n" % command); sys.exit(1)
"""


HANG_TIMEOUT_MS = 2000
"""A timeout for a hanging call whose traces the test reads afterwards (its call record, its stderr, its
child): the stand-in is a Python interpreter that must start first, 250-580 ms measured on 2 cores at a
load of 7.7 (200-300 ms timeouts then killed it before it had written anything)."""


@dataclass
class StandIn:
    """Handle on one stand-in executable: its path, its behaviour file and its call log."""

    folder: Path

    @property
    def path(self) -> Path:
        return self.folder / "qmd"

    def set(self, **spec: Any) -> None:
        """Replace the behaviour: commands={"search": {"exit": 1, "stderr": "boom"}}, hits=[...], …"""
        (self.folder / "behaviour.json").write_text(json.dumps(spec), encoding="utf-8")

    def fail(self, command: str, **rule: Any) -> None:
        """Keep everything else, override one command."""
        spec = json.loads((self.folder / "behaviour.json").read_text(encoding="utf-8"))
        spec.setdefault("commands", {})[command] = rule
        self.set(**spec)

    def heal(self, command: str) -> None:
        spec = json.loads((self.folder / "behaviour.json").read_text(encoding="utf-8"))
        spec.get("commands", {}).pop(command, None)
        self.set(**spec)

    def calls(self, command: str | None = None) -> list[dict[str, Any]]:
        log = self.folder / "calls.jsonl"
        if not log.exists():
            return []
        entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]
        if command is None:
            return entries
        return [e for e in entries if " ".join(e["args"][: len(command.split())]) == command]

    def child_pid(self) -> int:
        return int((self.folder / "child.pid").read_text(encoding="utf-8"))


def make_standin(folder: Path, **spec: Any) -> StandIn:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "qmd"
    script.write_text(f"#!{sys.executable} -S\n{SCRIPT}", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    standin = StandIn(folder)
    standin.set(**spec)
    return standin


async def wait_gone(pid: int, timeout_s: float = 5.0) -> None:
    """Return once `pid` has exited (a pidfd turns readable then); fail the test after `timeout_s`."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        with anyio.fail_after(timeout_s):
            await anyio.wait_readable(fd)
    finally:
        os.close(fd)


async def wait_running(fifo: Path, timeout_s: float = 10.0) -> None:
    """Block until a stand-in call with `notify=<fifo>` says it is running."""
    with anyio.fail_after(timeout_s):
        await anyio.to_thread.run_sync(fifo.read_text, abandon_on_cancel=True)


def environment_without_qmd() -> dict[str, str]:
    """The test process environment, with PATH limited to system folders (no real `qmd` found by name)."""
    env = dict(os.environ)
    env["PATH"] = "/usr/bin:/bin"
    return env
