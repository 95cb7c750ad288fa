"""Issue 13: a local user who creates memoryd's socket directory first must not get the victim's queries.

Before: without XDG_RUNTIME_DIR the victim's CLI and `memoryd mcp` connected to whatever listened in
/tmp/memoryd-<uid>/ and relayed its answers as memory. Now the directory must be the user's and 0700
(lstat: no symlinks), the socket the user's, and the listening process the user's (peer credentials),
or the client refuses and says why — before it sends a byte.

Root squats, uid 65534 is the victim (permission bits mean something only to a non-root user), all
inside a private mount namespace (squat_scenarios.py), so no other test run sees these folders.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.privileges import needs_root

pytestmark = [
    pytest.mark.integration,
    needs_root("root squats as uid 0 while the victim runs as uid 65534 (setpriv), in a private mount namespace"),
]

VICTIM = 65534
SCENARIOS = Path(__file__).with_name("squat_scenarios.py")


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder under the temporary directory (/tmp here) that must stay visible inside the scenarios,
    as a checkout cloned under /tmp must."""
    folder = tmp_path_factory.mktemp("kept-checkout")
    (folder / "marker").write_text("here\n")
    return folder


@pytest.fixture(scope="module")
def outcomes(kept: Path) -> dict[str, Any]:
    out = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", sys.executable, str(SCENARIOS)],
        env={**os.environ, "MEMORYD_SQUAT_KEEP": str(kept)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def refused(run: dict[str, Any], *reasons: str) -> None:
    """The run failed with exit 1 and one `memoryd <cmd>: ...` line that gives every reason."""
    assert run["rc"] == 1, run
    line = run["stderr"].strip()
    assert "Traceback" not in line, line
    for reason in reasons:
        assert reason in line, (reason, line)


def test_a_squatted_tmp_directory_is_refused_and_gets_nothing(outcomes: dict[str, Any]) -> None:
    result = outcomes["squatted_tmp"]
    because = f"the socket directory /tmp/memoryd-{VICTIM} belongs to uid 0, not to this user (uid {VICTIM})"
    refused(result["runs"]["status"], because)
    refused(result["runs"]["mcp"], because)  # the shim neither talks to it nor starts a daemon there
    refused(result["runs"]["serve"], because)
    assert result["received"] == 0


def test_a_socket_of_another_user_in_the_users_own_directory_is_refused(outcomes: dict[str, Any]) -> None:
    result = outcomes["foreign_socket_in_own_dir"]
    refused(result["runs"]["status"], f"the socket /tmp/memoryd-{VICTIM}/memoryd.sock belongs to uid 0")
    assert result["received"] == 0


def test_a_listener_of_another_user_is_refused_by_its_peer_credentials(outcomes: dict[str, Any]) -> None:
    result = outcomes["foreign_listener_behind_own_socket"]
    refused(
        result["runs"]["status"],
        f"the process listening on /tmp/memoryd-{VICTIM}/memoryd.sock runs as uid 0, not as this user",
    )
    assert result["connections"] == 1  # it connected to ask the kernel who listens...
    assert result["received"] == 0  # ...and sent nothing


def test_a_symlinked_runtime_directory_is_refused(outcomes: dict[str, Any]) -> None:
    refused(outcomes["symlinked_runtime_dir"]["runs"]["status"], "/tmp/xdg/memoryd is a symbolic link")


def test_run_user_is_used_only_when_it_is_the_users_and_private(outcomes: dict[str, Any]) -> None:
    result = outcomes["run_user_choice"]
    sockets = {}
    for case, run in result["runs"].items():
        assert run["rc"] == 0, run
        sockets[case] = run["stdout"]
    state_socket = f"{result['home']}/.local/state/memoryd/memoryd.sock"
    assert sockets == {
        "no /run/user/<uid>": state_socket,
        "root's /run/user/<uid>": state_socket,
        "the user's /run/user/<uid>": f"/run/user/{VICTIM}/memoryd/memoryd.sock",
        "the user's /run/user/<uid>, open to others": state_socket,
    }


def test_the_users_own_tmp_fallback_still_works(outcomes: dict[str, Any]) -> None:
    result = outcomes["legitimate_tmp_fallback"]
    status = result["runs"]["status"]
    assert status["rc"] == 0, status
    assert json.loads(status["stdout"])["daemon"]["agents"] == ["main"]  # answered by the daemon, not in-process
    assert result["daemon_rc"] == 0


def test_the_checkout_stays_visible_over_the_private_tmp(outcomes: dict[str, Any], kept: Path) -> None:
    """A checkout (and its virtualenv) under /tmp is bound back over the scenarios' fresh tmpfs: the
    victim's memoryd runs from it, and a kept folder under /tmp keeps its files."""
    result = outcomes["kept_paths_visible"]
    assert result["visible"][str(kept.resolve())] is True
    assert all(result["visible"].values()), result["visible"]
    run = result["runs"]["import"]
    assert run["rc"] == 0, run
    assert run["stdout"].endswith("memoryd/__init__.py"), run
