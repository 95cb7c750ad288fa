"""The survival suites' daemon fixture cleans up after a daemon that never got ready."""

from __future__ import annotations

import pytest

from tests.survival.conftest import DaemonFactory


def test_a_failed_start_leaves_no_log_pipe_open(make_daemon: DaemonFactory) -> None:
    """A start that raises must not leave its stderr pipe for a later test's garbage collection to report
    (a ResourceWarning there, under -W error, failed a test that had nothing to do with it)."""
    daemon = make_daemon("[defaults]\nprovider = 7\n")  # a config error: serve exits 2 at once
    with pytest.raises(AssertionError, match="without logging"):
        daemon.start()
    daemon.close()
    assert daemon.runs and all(pump.closed for pump in daemon.runs)
