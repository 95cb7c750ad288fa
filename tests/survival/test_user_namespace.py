"""The full-disk tests for an ordinary user: each mounts a tiny tmpfs, which only root may — or a user in a
user and mount namespace of their own. As root they run where they are; as a user they run here, in a child
pytest inside such a namespace (where the kernel allows one), and pass or fail as they do there."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.privileges import CAN_MOUNT, run_in_user_namespace, user_namespace_mounts

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(CAN_MOUNT, reason="may mount: the full-disk tests run directly (tests/survival/test_faults.py)"),
]

MOUNTING = [
    "tests/survival/test_faults.py::test_a_full_disk_fails_writes_cleanly_and_search_keeps_answering",
    "tests/survival/test_fresh_under_load.py::test_a_workspace_on_a_full_file_system_fails_its_sync_clearly_and_serves_on",
]


def test_the_full_disk_tests_pass_in_a_user_namespace() -> None:
    if not user_namespace_mounts():
        pytest.skip("needs root or unprivileged user namespaces (unshare --user --map-root-user): mount a tmpfs")
    # A short base folder of its own: the inner tests' socket paths must fit AF_UNIX's 108 bytes.
    with tempfile.TemporaryDirectory(prefix="md-ns-") as base:
        run = run_in_user_namespace(MOUNTING, Path(base) / "t")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert f"{len(MOUNTING)} passed" in run.stdout, run.stdout[-2000:]
