"""Install memoryd as a per-user service: a systemd user unit on Linux, a LaunchAgent on macOS.

The files are rendered (`memoryd.service.render`) with the absolute path of this environment's
`memoryd` entry point, since a venv's memoryd is not on the service manager's PATH, and placed by
`memoryd.service.files`, which never replaces or removes a file the user edited without `force`.
The service-manager commands go through an injectable `run`, so tests record them instead of running them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from memoryd.service.files import FileChange, check_removable, make_private_dir, place_all, remove
from memoryd.service.render import (
    ServiceInstallError,
    read_template,
    render_launchd_plist,
    render_systemd_socket,
    render_systemd_unit,
)

SERVICE_UNIT = "memoryd.service"
SOCKET_UNIT = "memoryd.socket"
LAUNCHD_LABEL = "com.memoryd.agent"
PLIST_NAME = f"{LAUNCHD_LABEL}.plist"

_SYSTEMCTL = ("systemctl", "--user")
_SYSTEMCTL_PROBE = (*_SYSTEMCTL, "show", "--property=Version", "--value")
_NOT_RUNNABLE = 127  # the shell's status for a command that is not found
_WANTS = {SERVICE_UNIT: "default.target.wants", SOCKET_UNIT: "sockets.target.wants"}

Platform = Literal["linux", "darwin"]


class Runner(Protocol):
    """The slice of `subprocess.run` the installer uses."""

    def __call__(
        self, args: Sequence[str], *, check: bool, capture_output: bool, text: Literal[True]
    ) -> subprocess.CompletedProcess[str]: ...


@dataclass(frozen=True, slots=True)
class CommandRun:
    argv: tuple[str, ...]
    returncode: int
    output: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


@dataclass(frozen=True, slots=True)
class InstallResult:
    """What an install or uninstall wrote and ran, and what is left for the user to run."""

    platform: Platform
    files: tuple[FileChange, ...]
    commands: tuple[CommandRun, ...]
    pending: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return all(command.ok for command in self.commands)


# --- locations --------------------------------------------------------------------------------------


def entry_point() -> Path:
    """This environment's `memoryd` script: beside the running interpreter (venv), else on PATH."""
    beside = Path(sys.executable).absolute().parent / "memoryd"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("memoryd")
    if found is not None:
        return Path(found).absolute()
    raise ServiceInstallError(f"no memoryd entry point beside {sys.executable} nor on PATH; pass its path explicitly")


def systemd_user_dir(home: Path) -> Path:
    """Where the user manager looks for units: `$XDG_CONFIG_HOME/systemd/user`, else under `home`."""
    config = os.environ.get("XDG_CONFIG_HOME", "").strip()
    base = Path(config) if config and Path(config).is_absolute() else home / ".config"
    return base / "systemd" / "user"


def launch_agents_dir(home: Path) -> Path:
    return home / "Library" / "LaunchAgents"


def launchd_log_dir(home: Path) -> Path:
    return home / "Library" / "Logs" / "memoryd"


def _home(home: Path | None) -> Path:
    return home if home is not None else Path(os.environ.get("HOME") or Path.home())


def _platform(platform: str | None) -> Platform:
    name = platform if platform is not None else sys.platform
    if name.startswith("linux"):
        return "linux"
    if name == "darwin":
        return "darwin"
    raise ServiceInstallError(f"no service manager support on {name}: run `memoryd serve` yourself")


# --- install / uninstall ----------------------------------------------------------------------------


def install_service(
    *,
    platform: str | None = None,
    home: Path | None = None,
    executable: Path | None = None,
    enable: bool = True,
    force: bool = False,
    socket_activation: bool = False,
    run: Runner = subprocess.run,
) -> InstallResult:
    """Write the unit (Linux) or LaunchAgent (macOS) and start it; safe to run again.

    Refuses (ServiceInstallError, nothing changed) to replace a file the user edited unless `force`.
    With `enable=False` nothing is run; the commands come back as `pending`. `socket_activation`
    (systemd only) also installs memoryd.socket: only for a daemon that takes the inherited listener.
    """
    system = _platform(platform)
    base = _home(home)
    program = Path(os.path.abspath(executable if executable is not None else entry_point()))
    if system == "linux":
        return _install_systemd(base, program, enable=enable, force=force, socket_activation=socket_activation, run=run)
    if socket_activation:
        raise ServiceInstallError("socket activation is only implemented for systemd")
    return _install_launchd(base, program, enable=enable, force=force, run=run)


def uninstall_service(
    *, platform: str | None = None, home: Path | None = None, force: bool = False, run: Runner = subprocess.run
) -> InstallResult:
    """Stop and disable the service and remove its files; safe to run when nothing is installed.

    Refuses (ServiceInstallError, nothing changed) to remove a file the user edited unless `force`.
    """
    system = _platform(platform)
    base = _home(home)
    if system == "linux":
        return _uninstall_systemd(base, force=force, run=run)
    return _uninstall_launchd(base, force=force, run=run)


def _install_systemd(
    home: Path, executable: Path, *, enable: bool, force: bool, socket_activation: bool, run: Runner
) -> InstallResult:
    unit_dir = systemd_user_dir(home)
    wanted = {unit_dir / SERVICE_UNIT: render_systemd_unit(read_template("systemd/memoryd.service"), executable)}
    if socket_activation:
        wanted[unit_dir / SOCKET_UNIT] = render_systemd_socket(read_template("systemd/memoryd.socket"))
    files = place_all(wanted, force=force)
    units = (SOCKET_UNIT, SERVICE_UNIT) if socket_activation else (SERVICE_UNIT,)
    plan: list[tuple[str, ...]] = [(*_SYSTEMCTL, "daemon-reload"), (*_SYSTEMCTL, "enable", "--now", *units)]
    if any(change.action == "updated" for change in files):
        plan.append((*_SYSTEMCTL, "try-restart", SERVICE_UNIT))
    if not enable:
        return InstallResult("linux", files, (), tuple(plan), ("not enabled: run the pending commands to start it",))
    reason = _systemctl_unavailable(run)
    if reason is not None:
        note = f"systemctl --user is unavailable ({reason}); run the pending commands in your login session"
        return InstallResult("linux", files, (), tuple(plan), (note,))
    commands, pending, notes = _run_plan(run, plan)
    return InstallResult("linux", files, commands, pending, notes)


def _uninstall_systemd(home: Path, *, force: bool, run: Runner) -> InstallResult:
    unit_dir = systemd_user_dir(home)
    present = [name for name in (SOCKET_UNIT, SERVICE_UNIT) if (unit_dir / name).exists()]
    for name in present:
        check_removable(unit_dir / name, force=force)
    if not present:
        absent = tuple(FileChange(unit_dir / name, "absent") for name in (SERVICE_UNIT,))
        return InstallResult("linux", absent, (), (), ("memoryd was not installed as a systemd user service",))
    reason = _systemctl_unavailable(run)
    if reason is not None:
        links = tuple(_remove_wants_link(unit_dir, name) for name in present)
        files = tuple(remove(unit_dir / name) for name in present)
        note = f"systemctl --user is unavailable ({reason}); removed the files, a running memoryd is not stopped"
        return InstallResult("linux", files + tuple(link for link in links if link is not None), (), (), (note,))
    commands, pending, notes = _run_plan(run, [(*_SYSTEMCTL, "disable", "--now", *present)])
    if not all(command.ok for command in commands):
        return InstallResult("linux", (), commands, pending, (*notes, "nothing was removed"))
    files = tuple(remove(unit_dir / name) for name in present)
    more, pending, more_notes = _run_plan(run, [(*_SYSTEMCTL, "daemon-reload")])
    return InstallResult("linux", files, commands + more, pending, notes + more_notes)


def _install_launchd(home: Path, executable: Path, *, enable: bool, force: bool, run: Runner) -> InstallResult:
    plist = launch_agents_dir(home) / PLIST_NAME
    log_dir = launchd_log_dir(home)
    rendered = render_launchd_plist(read_template(f"launchd/{PLIST_NAME}"), executable, log_dir)
    files = place_all({plist: rendered}, force=force)
    make_private_dir(log_dir)
    domain, target = _launchd_domain()
    bootstrap = ("launchctl", "bootstrap", domain, str(plist))
    if not enable:
        return InstallResult("darwin", files, (), (bootstrap,), ("not loaded: run the pending command to start it",))
    loaded = _launchd_loaded(run, target)
    if loaded is None:
        return InstallResult("darwin", files, (), (bootstrap,), ("launchctl is unavailable: load the agent yourself",))
    if loaded and files[0].action == "unchanged":
        return InstallResult("darwin", files, (), (), (f"{LAUNCHD_LABEL} is already loaded and up to date",))
    plan = [("launchctl", "bootout", target), bootstrap] if loaded else [bootstrap]
    commands, pending, notes = _run_plan(run, plan)
    return InstallResult("darwin", files, commands, pending, notes)


def _uninstall_launchd(home: Path, *, force: bool, run: Runner) -> InstallResult:
    plist = launch_agents_dir(home) / PLIST_NAME
    if not plist.exists():
        return InstallResult("darwin", (FileChange(plist, "absent"),), (), (), ("memoryd was not installed",))
    check_removable(plist, force=force)
    _domain, target = _launchd_domain()
    commands: tuple[CommandRun, ...] = ()
    notes: tuple[str, ...] = (f"logs are kept in {launchd_log_dir(home)}",)
    if _launchd_loaded(run, target):
        commands, pending, more = _run_plan(run, [("launchctl", "bootout", target)])
        if not all(command.ok for command in commands):
            return InstallResult("darwin", (), commands, pending, (*more, "nothing was removed"))
    return InstallResult("darwin", (remove(plist),), commands, (), notes)


def _launchd_domain() -> tuple[str, str]:
    domain = f"gui/{os.getuid()}"
    return domain, f"{domain}/{LAUNCHD_LABEL}"


def _launchd_loaded(run: Runner, target: str) -> bool | None:
    """Whether launchd knows the agent; None when launchctl cannot be run at all."""
    probe = _spawn(run, ("launchctl", "print", target))
    return None if probe is None else probe.ok


# --- commands ---------------------------------------------------------------------------------------


def _spawn(run: Runner, argv: tuple[str, ...]) -> CommandRun | None:
    """Run `argv`; None when its program cannot be started at all (not installed)."""
    try:
        completed = run(list(argv), check=False, capture_output=True, text=True)
    except OSError:
        return None
    output = "\n".join(part.strip() for part in (completed.stdout, completed.stderr) if part and part.strip())
    return CommandRun(argv, completed.returncode, output)


def _call(run: Runner, argv: tuple[str, ...]) -> CommandRun:
    result = _spawn(run, argv)
    return result if result is not None else CommandRun(argv, _NOT_RUNNABLE, f"{argv[0]}: command not found")


def _systemctl_unavailable(run: Runner) -> str | None:
    """Why `systemctl --user` cannot reach a user manager (no systemctl, no user bus), or None."""
    probe = _spawn(run, _SYSTEMCTL_PROBE)
    if probe is None:
        return "systemctl: command not found"
    if probe.ok:
        return None
    return probe.output or f"exit status {probe.returncode}"


def _run_plan(
    run: Runner, plan: Sequence[tuple[str, ...]]
) -> tuple[tuple[CommandRun, ...], tuple[tuple[str, ...], ...], tuple[str, ...]]:
    """Run `plan` in order, stopping at the first failure; the rest comes back as pending."""
    done: list[CommandRun] = []
    for index, argv in enumerate(plan):
        result = _call(run, argv)
        done.append(result)
        if not result.ok:
            note = f"`{' '.join(argv)}` failed with exit status {result.returncode}: {result.output}"
            return tuple(done), tuple(plan[index + 1 :]), (note,)
    return tuple(done), (), ()


def _remove_wants_link(unit_dir: Path, name: str) -> FileChange | None:
    """Undo `systemctl enable` by hand when systemctl cannot: the link that points at our unit."""
    link = unit_dir / _WANTS[name] / name
    if link.is_symlink() and Path(os.readlink(link)) in (unit_dir / name, Path(name)):
        return remove(link)
    return None
