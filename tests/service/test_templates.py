"""The rendered systemd unit, socket and LaunchAgent are valid for their service managers."""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.service.render import (
    ServiceInstallError,
    is_unedited,
    read_template,
    render_launchd_plist,
    render_systemd_socket,
    render_systemd_unit,
    stamp,
)

TRICKY_DIRECTORIES = ["venv", "my venv", "100%", "%h", "$HOME", "${HOME}", "Müller", "a;b", "~x"]


def make_executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def systemd_verify(tmp_path: Path, *units: Path) -> subprocess.CompletedProcess[str]:
    """`systemd-analyze --user verify` as it works for root in a container: a private runtime dir."""
    analyze = shutil.which("systemd-analyze")
    assert analyze is not None, "systemd-analyze is missing: apt-get install -y systemd"
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "SYSTEMD_LOG_COLOR": "0"}
    return subprocess.run(
        [analyze, "--user", "verify", "--man=no", *map(str, units)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
    )


def unit_settings(text: str) -> dict[str, list[str]]:
    """`Section.Key` -> every value it is given, in order (systemd allows a key more than once)."""
    settings: dict[str, list[str]] = {}
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        settings.setdefault(f"{section}.{key}", []).append(value)
    return settings


@pytest.mark.parametrize("directory", TRICKY_DIRECTORIES)
def test_the_rendered_unit_passes_systemd_verification_wherever_memoryd_is_installed(
    tmp_path: Path, directory: str
) -> None:
    executable = make_executable(tmp_path / directory / "bin" / "memoryd")
    unit = tmp_path / "units" / "memoryd.service"
    unit.parent.mkdir()
    unit.write_text(render_systemd_unit(read_template("systemd/memoryd.service"), executable), encoding="utf-8")

    verified = systemd_verify(tmp_path, unit)

    assert (verified.returncode, verified.stderr) == (0, "")


def test_verification_fails_when_the_unit_points_at_no_executable(tmp_path: Path) -> None:
    unit = tmp_path / "memoryd.service"
    missing = tmp_path / "gone" / "memoryd"
    unit.write_text(render_systemd_unit(read_template("systemd/memoryd.service"), missing), encoding="utf-8")

    verified = systemd_verify(tmp_path, unit)

    assert verified.returncode != 0
    assert str(missing) in verified.stderr


def test_the_socket_unit_passes_verification_beside_its_service(tmp_path: Path) -> None:
    executable = make_executable(tmp_path / "venv" / "bin" / "memoryd")
    units = tmp_path / "units"
    units.mkdir()
    service = units / "memoryd.service"
    socket = units / "memoryd.socket"
    service.write_text(render_systemd_unit(read_template("systemd/memoryd.service"), executable), encoding="utf-8")
    socket.write_text(render_systemd_socket(read_template("systemd/memoryd.socket")), encoding="utf-8")

    verified = systemd_verify(tmp_path, socket, service)

    assert (verified.returncode, verified.stderr) == (0, "")


def test_the_unit_runs_memoryd_serve_with_json_logs_from_the_given_executable() -> None:
    text = render_systemd_unit(read_template("systemd/memoryd.service"), Path("/opt/venv/bin/memoryd"))

    assert unit_settings(text)["Service.ExecStart"] == ["/opt/venv/bin/memoryd serve --log-format json"]
    assert "@" not in text


def test_the_unit_restarts_on_failure_reloads_on_hup_and_stops_on_term() -> None:
    settings = unit_settings(render_systemd_unit(read_template("systemd/memoryd.service"), Path("/x/memoryd")))

    expected = {
        "Service.Type": ["simple"],
        "Service.Restart": ["on-failure"],
        "Service.ExecReload": ["/bin/kill -HUP $MAINPID"],
        "Service.KillSignal": ["SIGTERM"],
        "Install.WantedBy": ["default.target"],
    }
    assert {key: settings.get(key) for key in expected} == expected
    assert "Service.RestartSec" in settings
    assert "Service.TimeoutStopSec" in settings


def test_the_unit_is_sandboxed_but_can_write_its_own_directories_and_read_workspaces() -> None:
    settings = unit_settings(render_systemd_unit(read_template("systemd/memoryd.service"), Path("/x/memoryd")))

    expected = {
        "Service.NoNewPrivileges": ["yes"],
        "Service.ProtectSystem": ["strict"],
        "Service.ProtectHome": ["read-only"],
        "Service.PrivateTmp": ["yes"],
        "Service.ProtectKernelTunables": ["yes"],
        "Service.ProtectKernelModules": ["yes"],
        "Service.ProtectControlGroups": ["yes"],
        "Service.RestrictSUIDSGID": ["yes"],
        "Service.LockPersonality": ["yes"],
        "Service.RestrictRealtime": ["yes"],
        "Service.SystemCallArchitectures": ["native"],
        "Service.MemoryMax": ["1G"],
        "Service.StateDirectory": ["memoryd"],
        "Service.CacheDirectory": ["memoryd"],
        "Service.RuntimeDirectory": ["memoryd"],
    }
    assert {key: settings.get(key) for key in expected} == expected
    assert settings["Service.ReadWritePaths"] == ["%S/memoryd %C/memoryd %t/memoryd"]
    assert "Service.MemoryHigh" in settings


def test_the_unit_points_memoryd_at_the_directories_it_may_write() -> None:
    settings = unit_settings(render_systemd_unit(read_template("systemd/memoryd.service"), Path("/x/memoryd")))

    environment = dict(item.split("=", 1) for value in settings["Service.Environment"] for item in value.split())

    assert environment["XDG_STATE_HOME"] == "%S"
    assert environment["XDG_CACHE_HOME"] == "%C"
    assert environment["XDG_RUNTIME_DIR"] == "%t"


def test_the_socket_listens_where_the_daemon_serves() -> None:
    settings = unit_settings(render_systemd_socket(read_template("systemd/memoryd.socket")))

    assert settings["Socket.ListenStream"] == ["%t/memoryd/memoryd.sock"]
    assert settings["Socket.SocketMode"] == ["0600"]


def test_the_plist_is_a_background_agent_kept_alive_after_a_crash() -> None:
    log_dir = Path("/Users/ann/Library/Logs/memoryd")
    text = render_launchd_plist(
        read_template("launchd/com.memoryd.agent.plist"), Path("/Users/ann/venv/bin/memoryd"), log_dir
    )

    agent = plistlib.loads(text.encode("utf-8"))

    assert agent["Label"] == "com.memoryd.agent"
    assert agent["ProgramArguments"] == ["/Users/ann/venv/bin/memoryd", "serve", "--log-format", "json"]
    assert agent["RunAtLoad"] is True
    assert agent["KeepAlive"] == {"SuccessfulExit": False}
    assert agent["ProcessType"] == "Background"
    assert Path(agent["StandardOutPath"]).parent == log_dir
    assert Path(agent["StandardErrorPath"]).parent == log_dir
    assert agent["StandardOutPath"] != agent["StandardErrorPath"]
    assert isinstance(agent["EnvironmentVariables"], dict)


path_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters="\ufffe\uffff"), min_size=1
)


@given(directory=path_text)
def test_any_install_path_survives_the_plist_exactly(directory: str) -> None:
    executable = Path("/") / directory / "memoryd"

    text = render_launchd_plist(read_template("launchd/com.memoryd.agent.plist"), executable, Path("/logs"))

    assert plistlib.loads(text.encode("utf-8"))["ProgramArguments"][0] == str(executable)


@given(body=st.text(), index=st.integers(min_value=0), replacement=st.characters(codec="utf-8"))
def test_changing_any_character_of_a_stamped_file_marks_it_edited(body: str, index: int, replacement: str) -> None:
    stamped = stamp(f"# @MANAGED@\n{body}")
    position = index % len(stamped)
    edited = stamped[:position] + replacement + stamped[position + 1 :]

    assert is_unedited(stamped)
    assert is_unedited(edited) == (edited == stamped)


@given(body=st.text(), extra=st.text(min_size=1))
def test_adding_text_to_a_stamped_file_marks_it_edited(body: str, extra: str) -> None:
    stamped = stamp(f"# @MANAGED@\n{body}")

    assert not is_unedited(stamped + extra)
    assert not is_unedited(extra + stamped)


@pytest.mark.parametrize("directory", ["new\nline", "tab\there", "bad\udcffbyte"])
def test_a_path_no_service_file_can_hold_is_refused(directory: str) -> None:
    with pytest.raises(ServiceInstallError, match="cannot hold"):
        render_systemd_unit(read_template("systemd/memoryd.service"), Path("/") / directory / "memoryd")
    with pytest.raises(ServiceInstallError, match="cannot hold"):
        render_launchd_plist(read_template("launchd/com.memoryd.agent.plist"), Path("/") / directory, Path("/l"))


@pytest.mark.parametrize("directory", ["it's", 'say "hi"', "back\\slash"])
def test_a_path_systemd_refuses_to_run_is_refused_before_writing(directory: str) -> None:
    with pytest.raises(ServiceInstallError, match="quotes or backslashes"):
        render_systemd_unit(read_template("systemd/memoryd.service"), Path("/") / directory / "memoryd")


def test_a_file_without_a_marker_is_not_ours() -> None:
    assert not is_unedited("[Service]\nExecStart=/usr/bin/memoryd serve\n")
