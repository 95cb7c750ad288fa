"""Installing and removing the user service writes the right files and runs the right commands."""

from __future__ import annotations

import io
import os
import stat
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from memoryd import cli
from memoryd.service.install import InstallResult, entry_point, install_service, uninstall_service
from memoryd.service.render import ServiceInstallError, is_unedited

PROBE = ("systemctl", "--user", "show", "--property=Version", "--value")
RELOAD = ("systemctl", "--user", "daemon-reload")
ENABLE = ("systemctl", "--user", "enable", "--now", "memoryd.service")
NO_BUS = "Failed to connect to bus: No medium found"


@dataclass
class Recorder:
    """Stands in for `subprocess.run`: records each command, answers with a chosen status and stderr."""

    answers: dict[tuple[str, ...], tuple[int, str]] = field(default_factory=dict)
    missing: bool = False
    calls: list[tuple[str, ...]] = field(default_factory=list)

    def __call__(
        self, args: Sequence[str], *, check: bool, capture_output: bool, text: bool
    ) -> subprocess.CompletedProcess[str]:
        argv = tuple(args)
        self.calls.append(argv)
        if self.missing:
            raise FileNotFoundError(2, "No such file or directory", argv[0])
        status, stderr = next(
            (answer for prefix, answer in self.answers.items() if argv[: len(prefix)] == prefix), (0, "")
        )
        return subprocess.CompletedProcess(list(argv), status, stdout="", stderr=stderr)


@pytest.fixture
def home() -> Path:
    return Path(os.environ["HOME"])


@pytest.fixture
def unit_path() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "systemd" / "user" / "memoryd.service"


@pytest.fixture
def executable(tmp_path: Path) -> Path:
    path = tmp_path / "venv" / "bin" / "memoryd"
    path.parent.mkdir(parents=True)
    path.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def actions(result: InstallResult) -> list[tuple[Path, str]]:
    return [(change.path, change.action) for change in result.files]


# --- Linux -----------------------------------------------------------------------------------------


def test_install_writes_a_readable_unit_naming_the_executable_and_enables_it(unit_path: Path, executable: Path) -> None:
    run = Recorder()

    result = install_service(platform="linux", executable=executable, run=run)

    assert actions(result) == [(unit_path, "created")]
    assert f"ExecStart={executable} serve --log-format json" in unit_path.read_text(encoding="utf-8")
    assert mode(unit_path) == 0o644
    assert run.calls == [PROBE, RELOAD, ENABLE]
    assert [command.argv for command in result.commands] == [RELOAD, ENABLE]
    assert (result.ok, result.pending) == (True, ())


def test_the_unit_is_written_mode_0644_whatever_the_umask(unit_path: Path, executable: Path) -> None:
    previous = os.umask(0o077)
    try:
        install_service(platform="linux", executable=executable, run=Recorder())
    finally:
        os.umask(previous)

    assert mode(unit_path) == 0o644


def test_without_xdg_config_home_the_unit_goes_under_home_dot_config(
    home: Path, executable: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME")

    result = install_service(platform="linux", home=home, executable=executable, run=Recorder())

    assert actions(result) == [(home / ".config" / "systemd" / "user" / "memoryd.service", "created")]


def test_installing_again_changes_nothing_and_restarts_nothing(unit_path: Path, executable: Path) -> None:
    install_service(platform="linux", executable=executable, run=Recorder())
    before = unit_path.read_text(encoding="utf-8")
    run = Recorder()

    result = install_service(platform="linux", executable=executable, run=run)

    assert actions(result) == [(unit_path, "unchanged")]
    assert unit_path.read_text(encoding="utf-8") == before
    assert run.calls == [PROBE, RELOAD, ENABLE]


def test_a_new_executable_updates_the_unit_and_restarts_a_running_daemon(
    unit_path: Path, executable: Path, tmp_path: Path
) -> None:
    install_service(platform="linux", executable=executable, run=Recorder())
    moved = tmp_path / "other venv" / "bin" / "memoryd"
    run = Recorder()

    result = install_service(platform="linux", executable=moved, run=run)

    assert actions(result) == [(unit_path, "updated")]
    assert f'ExecStart="{moved}" serve' in unit_path.read_text(encoding="utf-8")
    assert run.calls == [PROBE, RELOAD, ENABLE, ("systemctl", "--user", "try-restart", "memoryd.service")]


def test_a_hand_edited_unit_is_neither_replaced_nor_acted_on(unit_path: Path, executable: Path, tmp_path: Path) -> None:
    install_service(platform="linux", executable=executable, run=Recorder())
    edited = unit_path.read_text(encoding="utf-8").replace("MemoryMax=1G", "MemoryMax=4G")
    unit_path.write_text(edited, encoding="utf-8")
    run = Recorder()

    with pytest.raises(ServiceInstallError, match="changed by hand"):
        install_service(platform="linux", executable=tmp_path / "new" / "memoryd", run=run)

    assert unit_path.read_text(encoding="utf-8") == edited
    assert run.calls == []


def test_a_unit_the_user_wrote_is_refused_too(unit_path: Path, executable: Path) -> None:
    unit_path.parent.mkdir(parents=True)
    unit_path.write_text("[Service]\nExecStart=/usr/bin/memoryd serve\n", encoding="utf-8")

    with pytest.raises(ServiceInstallError, match="changed by hand"):
        install_service(platform="linux", executable=executable, run=Recorder())


def test_force_replaces_a_hand_edited_unit_with_a_fresh_one(unit_path: Path, executable: Path) -> None:
    unit_path.parent.mkdir(parents=True)
    unit_path.write_text("[Service]\nExecStart=/usr/bin/memoryd serve\n", encoding="utf-8")

    result = install_service(platform="linux", executable=executable, force=True, run=Recorder())

    assert actions(result) == [(unit_path, "updated")]
    assert is_unedited(unit_path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("missing", [False, True], ids=["no user bus", "no systemctl"])
def test_without_a_user_manager_the_unit_is_written_and_the_commands_left_to_the_user(
    unit_path: Path, executable: Path, missing: bool
) -> None:
    run = Recorder(answers={PROBE: (1, NO_BUS)}, missing=missing)

    result = install_service(platform="linux", executable=executable, run=run)

    assert actions(result) == [(unit_path, "created")]
    assert run.calls == [PROBE]
    assert result.commands == ()
    assert result.pending == (RELOAD, ENABLE)
    assert "systemctl --user is unavailable" in result.notes[0]
    assert (NO_BUS if not missing else "not found") in result.notes[0]


def test_enable_false_writes_the_unit_and_runs_nothing(unit_path: Path, executable: Path) -> None:
    run = Recorder()

    result = install_service(platform="linux", executable=executable, enable=False, run=run)

    assert unit_path.is_file()
    assert run.calls == []
    assert result.pending == (RELOAD, ENABLE)


def test_a_failing_command_stops_the_rest_and_is_reported(executable: Path) -> None:
    run = Recorder(answers={ENABLE: (1, "Failed to enable unit")})

    result = install_service(platform="linux", executable=executable, run=run)

    assert not result.ok
    assert [(command.argv, command.returncode) for command in result.commands] == [(RELOAD, 0), (ENABLE, 1)]
    assert "Failed to enable unit" in result.notes[0]


def test_socket_activation_installs_and_enables_the_socket_with_the_service(unit_path: Path, executable: Path) -> None:
    run = Recorder()

    result = install_service(platform="linux", executable=executable, socket_activation=True, run=run)

    socket_path = unit_path.with_name("memoryd.socket")
    assert actions(result) == [(unit_path, "created"), (socket_path, "created")]
    assert "ListenStream=%t/memoryd/memoryd.sock" in socket_path.read_text(encoding="utf-8")
    assert run.calls[-1] == ("systemctl", "--user", "enable", "--now", "memoryd.socket", "memoryd.service")


def test_uninstall_stops_and_disables_the_service_then_removes_the_unit(unit_path: Path, executable: Path) -> None:
    install_service(platform="linux", executable=executable, run=Recorder())
    run = Recorder()

    result = uninstall_service(platform="linux", run=run)

    assert actions(result) == [(unit_path, "removed")]
    assert not unit_path.exists()
    assert run.calls == [PROBE, ("systemctl", "--user", "disable", "--now", "memoryd.service"), RELOAD]
    assert result.ok


def test_uninstall_removes_the_socket_unit_too(unit_path: Path, executable: Path) -> None:
    install_service(platform="linux", executable=executable, socket_activation=True, run=Recorder())
    run = Recorder()

    uninstall_service(platform="linux", run=run)

    assert list(unit_path.parent.iterdir()) == []
    assert ("systemctl", "--user", "disable", "--now", "memoryd.socket", "memoryd.service") in run.calls


def test_uninstalling_what_is_not_installed_runs_nothing(unit_path: Path) -> None:
    run = Recorder()

    result = uninstall_service(platform="linux", run=run)

    assert actions(result) == [(unit_path, "absent")]
    assert run.calls == []


def test_uninstall_refuses_a_hand_edited_unit_unless_forced(unit_path: Path, executable: Path) -> None:
    install_service(platform="linux", executable=executable, run=Recorder())
    unit_path.write_text(unit_path.read_text(encoding="utf-8") + "# mine\n", encoding="utf-8")
    run = Recorder()

    with pytest.raises(ServiceInstallError, match="changed by hand"):
        uninstall_service(platform="linux", run=run)
    assert unit_path.exists()
    assert run.calls == []

    uninstall_service(platform="linux", force=True, run=run)
    assert not unit_path.exists()


def test_a_failed_disable_removes_nothing(unit_path: Path, executable: Path) -> None:
    install_service(platform="linux", executable=executable, run=Recorder())
    run = Recorder(answers={("systemctl", "--user", "disable"): (1, "Access denied")})

    result = uninstall_service(platform="linux", run=run)

    assert not result.ok
    assert unit_path.exists()
    assert RELOAD not in run.calls


def test_uninstall_without_a_user_manager_removes_the_unit_and_its_enablement_link(
    unit_path: Path, executable: Path
) -> None:
    install_service(platform="linux", executable=executable, run=Recorder())
    link = unit_path.parent / "default.target.wants" / "memoryd.service"
    link.parent.mkdir()
    link.symlink_to(unit_path)  # what `systemctl --user enable` leaves behind

    result = uninstall_service(platform="linux", run=Recorder(answers={PROBE: (1, NO_BUS)}))

    assert actions(result) == [(unit_path, "removed"), (link, "removed")]
    assert not link.is_symlink()
    assert "unavailable" in result.notes[0]


# --- macOS -----------------------------------------------------------------------------------------


def launchd_target() -> str:
    return f"gui/{os.getuid()}/com.memoryd.agent"


def test_install_on_macos_writes_the_agent_and_bootstraps_it(home: Path, executable: Path) -> None:
    run = Recorder(answers={("launchctl", "print"): (113, "Could not find service")})

    result = install_service(platform="darwin", executable=executable, run=run)

    plist = home / "Library" / "LaunchAgents" / "com.memoryd.agent.plist"
    logs = home / "Library" / "Logs" / "memoryd"
    assert actions(result) == [(plist, "created")]
    assert mode(plist) == 0o644
    assert mode(logs) == 0o700
    assert str(executable) in plist.read_text(encoding="utf-8")
    assert run.calls == [
        ("launchctl", "print", launchd_target()),
        ("launchctl", "bootstrap", f"gui/{os.getuid()}", str(plist)),
    ]
    assert result.ok


def test_reinstalling_a_loaded_unchanged_agent_only_looks(executable: Path) -> None:
    install_service(platform="darwin", executable=executable, run=Recorder())
    run = Recorder()

    result = install_service(platform="darwin", executable=executable, run=run)

    assert run.calls == [("launchctl", "print", launchd_target())]
    assert [change.action for change in result.files] == ["unchanged"]


def test_a_changed_loaded_agent_is_booted_out_and_bootstrapped_again(executable: Path, tmp_path: Path) -> None:
    install_service(platform="darwin", executable=executable, run=Recorder())
    run = Recorder()

    install_service(platform="darwin", executable=tmp_path / "elsewhere" / "memoryd", run=run)

    assert [argv[:2] for argv in run.calls] == [
        ("launchctl", "print"),
        ("launchctl", "bootout"),
        ("launchctl", "bootstrap"),
    ]


def test_uninstall_on_macos_boots_out_and_removes_the_agent_but_keeps_logs(home: Path, executable: Path) -> None:
    install_service(platform="darwin", executable=executable, run=Recorder())
    run = Recorder()

    result = uninstall_service(platform="darwin", run=run)

    plist = home / "Library" / "LaunchAgents" / "com.memoryd.agent.plist"
    assert actions(result) == [(plist, "removed")]
    assert run.calls == [("launchctl", "print", launchd_target()), ("launchctl", "bootout", launchd_target())]
    assert (home / "Library" / "Logs" / "memoryd").is_dir()


def test_uninstall_on_macos_of_an_agent_launchd_does_not_know_just_removes_it(home: Path, executable: Path) -> None:
    install_service(platform="darwin", executable=executable, enable=False, run=Recorder())
    run = Recorder(answers={("launchctl", "print"): (113, "Could not find service")})

    result = uninstall_service(platform="darwin", run=run)

    assert [change.action for change in result.files] == ["removed"]
    assert run.calls == [("launchctl", "print", launchd_target())]


# --- both ------------------------------------------------------------------------------------------


def test_other_platforms_are_refused(executable: Path) -> None:
    with pytest.raises(ServiceInstallError, match="win32"):
        install_service(platform="win32", executable=executable, run=Recorder())


def test_socket_activation_is_refused_on_macos(executable: Path) -> None:
    with pytest.raises(ServiceInstallError, match="systemd"):
        install_service(platform="darwin", executable=executable, socket_activation=True, run=Recorder())


def test_the_default_executable_is_the_entry_point_beside_the_running_interpreter() -> None:
    assert entry_point() == Path(sys.executable).absolute().parent / "memoryd"


def test_the_cli_installs_the_socket_unit_when_asked(unit_path: Path) -> None:
    out = io.StringIO()
    code = cli.main(["install-service", "--no-enable", "--socket-activation"], out=out)
    assert code == 0
    socket_unit = unit_path.with_name("memoryd.socket")
    assert socket_unit.is_file() and "ListenStream=" in socket_unit.read_text(encoding="utf-8")
    assert unit_path.is_file()
    assert "memoryd.socket" in out.getvalue()
