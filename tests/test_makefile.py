"""`make run` installs only what running needs; `make test` (and `install`) install the dev tools on top.

Checked with `make -n` (a dry run) against a virtualenv folder that does not exist, so every install
step shows; the installs themselves are measured, not tested (README, "Two commands").
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def dry_run(target: str, venv: Path) -> list[str]:
    if shutil.which("make") is None:
        pytest.fail("make is not installed")
    # Run as a top-level make even under `make test`: an inherited MAKELEVEL/MAKEFLAGS makes the child print
    # "make[1]: Entering directory" lines and pass on the parent's flags.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    out = subprocess.run(
        ["make", "--no-print-directory", "-n", f"VENV={venv}", target],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env=env,
    )
    return out.stdout.splitlines()


def test_run_installs_the_runtime_only(tmp_path: Path) -> None:
    lines = dry_run("run", tmp_path / "v")
    assert f"bash scripts/install-venv.sh runtime {tmp_path / 'v'} python3" in lines
    assert not any("install-venv.sh dev" in line for line in lines)
    assert lines[-1] == f"{tmp_path / 'v'}/bin/memoryd serve"


@pytest.mark.parametrize("target", ["test", "install", "bench"])
def test_test_install_and_bench_install_everything_from_scratch(tmp_path: Path, target: str) -> None:
    lines = dry_run(target, tmp_path / "v")
    steps = [line for line in lines if "install-venv.sh" in line]
    assert steps == [
        f"bash scripts/install-venv.sh runtime {tmp_path / 'v'} python3",
        f"bash scripts/install-venv.sh dev {tmp_path / 'v'} python3",
    ]
