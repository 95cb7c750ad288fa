"""What a test may do beyond what any user may: the one place that probes privileges and says why a test skips.

CI runs as root; a user runs `make test` as themselves. A test that needs a privilege gets it another way
where the kernel allows it — a user namespace of the user's own (`unshare --user --map-root-user --mount`)
gives an ordinary user a private mount table, so a tmpfs can be mounted there (tests/survival/
test_user_namespace.py runs the full-disk tests that way) — or skips with a one-line reason naming the
privilege; pytest's `-ra` summary lists every skip and its reason at the end of the run.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

IN_USER_NAMESPACE_ENV = "MEMORYD_TEST_IN_USERNS"
"""Set for a child pytest inside a user namespace of the user's own: `geteuid()` is 0 there, but only the
mounts are really its own (no other uid is mapped, no capability reaches the host's files)."""

CAN_MOUNT = os.geteuid() == 0
"""Root, or root of a user namespace of its own: may mount a tmpfs."""

REAL_ROOT = CAN_MOUNT and not os.environ.get(IN_USER_NAMESPACE_ENV)
"""Root of the machine: may chown to another uid, become another uid, set `chattr +i`."""

NO_DAC: tuple[str, ...] = (
    ("setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--inh-caps", "-all") if CAN_MOUNT else ()
)
"""A wrapper for daemons that must meet permission bits: as root, run without the capabilities that bypass
them (chmod 000 then means "unreadable", as it does for the ordinary user memoryd runs as); a user needs none."""


def needs_root(what: str) -> pytest.MarkDecorator:
    """Skip unless this is the machine's root, naming what the test does that only root may."""
    return pytest.mark.skipif(not REAL_ROOT, reason=f"needs root: {what}")


def needs_mount(what: str) -> pytest.MarkDecorator:
    """Skip unless this process may mount; as an ordinary user these run in a user namespace instead."""
    return pytest.mark.skipif(
        not CAN_MOUNT, reason=f"needs root to {what} (run in a user namespace by tests/survival/test_user_namespace.py)"
    )


@functools.cache
def user_namespace_mounts() -> bool:
    """Can this user mount a tmpfs in a user and mount namespace of its own? Kernels may forbid it
    (`kernel.unprivileged_userns_clone = 0`, AppArmor's `restrict_unprivileged_userns`, some containers)."""
    if not shutil.which("unshare"):
        return False
    with tempfile.TemporaryDirectory() as target:
        probe = subprocess.run(
            ["unshare", "--user", "--map-root-user", "--mount", "mount", "-t", "tmpfs", "none", target],
            capture_output=True,
            timeout=30,
            check=False,
        )
    return probe.returncode == 0


def run_in_user_namespace(node_ids: list[str], basetemp: Path) -> subprocess.CompletedProcess[str]:
    """Run these tests in a child pytest inside a user + mount namespace of this user's, where they may
    mount a tmpfs. `basetemp` is this user's own folder (pytest's default one, /tmp/pytest-of-root, would
    belong to an unmapped uid in there)."""
    namespace = ("unshare", "--user", "--map-root-user", "--mount", "--propagation", "private")
    pytest_argv = ("-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", str(basetemp))
    return subprocess.run(
        [*namespace, sys.executable, *pytest_argv, *node_ids],
        env={**os.environ, IN_USER_NAMESPACE_ENV: "1"},
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
