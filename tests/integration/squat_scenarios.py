"""Another local user squats memoryd's socket locations: run as root inside a private mount namespace.

`unshare --mount` gives this script its own /tmp and /run/user (tmpfs), so `/tmp/memoryd-65534`
is nobody else's business (a checkout or virtualenv under /tmp is bound back into the fresh tmpfs);
root plays the squatter, uid 65534 (`setpriv`) the victim, with its own HOME. Each scenario
reports what the victim's memoryd did and how many bytes the squatter received, as one JSON object
on stdout. Run by tests/integration/test_squatting.py.
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

VICTIM = 65534
PYTHON = sys.executable


class Squatter:
    """A listening socket of root's that counts every byte a client sends it."""

    def __init__(self, path: Path, mode: int) -> None:
        self.path = path
        self.received = 0
        self.connections = 0
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        os.chmod(path, mode)
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.connections += 1
            conn.settimeout(2.0)
            try:
                while data := conn.recv(65536):
                    self.received += len(data)
            except OSError:
                pass
            conn.close()

    def close(self) -> dict[str, int]:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()
        return {"received": self.received, "connections": self.connections}


def victim_home(name: str, *, long: bool) -> Path:
    """The victim's HOME; `long` makes its state directory too long to hold the socket (so the
    default falls through to /tmp/memoryd-<uid>)."""
    home = Path("/tmp/homes") / (name + ("-" + "h" * 80 if long else ""))
    home.mkdir(parents=True)
    os.chown(home, VICTIM, VICTIM)
    return home


def as_victim(home: Path, *argv: str, extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run `memoryd ARGV` (or `python -c CODE` when ARGV starts with -c) as the victim."""
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", **(extra_env or {})}
    program = list(argv) if argv[0] == "-c" else ["-m", "memoryd", *argv]
    out = subprocess.run(
        ["setpriv", f"--reuid={VICTIM}", f"--regid={VICTIM}", "--clear-groups", PYTHON, *program],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
        check=False,
    )
    return {"rc": out.returncode, "stdout": out.stdout, "stderr": out.stderr}


def private_dir(path: Path, uid: int, mode: int = 0o700) -> Path:
    path.mkdir(parents=True)
    os.chown(path, uid, uid)
    os.chmod(path, mode)
    return path


def squatted_tmp() -> dict[str, Any]:
    """Root made /tmp/memoryd-65534 first (0755) and listens in it on a socket anyone may use."""
    home = victim_home("tmp", long=True)
    folder = private_dir(Path(f"/tmp/memoryd-{VICTIM}"), 0, 0o755)
    squatter = Squatter(folder / "memoryd.sock", 0o666)
    runs = {cmd: as_victim(home, cmd, *rest) for cmd, *rest in (["status"], ["mcp", "--agent", "main"])}
    runs["serve"] = as_victim(home, "serve")
    return {"runs": runs, **squatter.close()}


def foreign_socket_in_own_dir() -> dict[str, Any]:
    """The victim's own private /tmp/memoryd-65534, but root's socket listening inside it."""
    home = victim_home("own", long=True)
    folder = private_dir(Path(f"/tmp/memoryd-{VICTIM}"), VICTIM)
    squatter = Squatter(folder / "memoryd.sock", 0o666)
    runs = {"status": as_victim(home, "status")}
    return {"runs": runs, **squatter.close()}


def foreign_listener_behind_own_socket() -> dict[str, Any]:
    """Directory and socket file are the victim's, but the process listening is root's: only the
    kernel's peer credentials can tell."""
    home = victim_home("peer", long=True)
    folder = private_dir(Path(f"/tmp/memoryd-{VICTIM}"), VICTIM)
    squatter = Squatter(folder / "memoryd.sock", 0o600)
    os.chown(folder / "memoryd.sock", VICTIM, VICTIM)
    runs = {"status": as_victim(home, "status")}
    return {"runs": runs, **squatter.close()}


def symlinked_runtime_dir() -> dict[str, Any]:
    """$XDG_RUNTIME_DIR/memoryd is a symlink (to a folder of the victim's own, even)."""
    home = victim_home("link", long=False)
    xdg = private_dir(Path("/tmp/xdg"), VICTIM)
    target = private_dir(Path("/tmp/elsewhere"), VICTIM)
    (xdg / "memoryd").symlink_to(target)
    os.lchown(xdg / "memoryd", VICTIM, VICTIM)
    return {"runs": {"status": as_victim(home, "status", extra_env={"XDG_RUNTIME_DIR": str(xdg)})}}


WHERE = "import sys; from memoryd import paths; sys.stdout.write(str(paths.socket_path()))"


def run_user_choice() -> dict[str, Any]:
    """Which socket the victim's memoryd picks without $XDG_RUNTIME_DIR, as /run/user/<uid> changes."""
    home = victim_home("choice", long=False)
    seen: dict[str, Any] = {}
    seen["no /run/user/<uid>"] = as_victim(home, "-c", WHERE)
    private_dir(Path(f"/run/user/{VICTIM}"), 0)
    seen["root's /run/user/<uid>"] = as_victim(home, "-c", WHERE)
    os.chown(f"/run/user/{VICTIM}", VICTIM, VICTIM)
    seen["the user's /run/user/<uid>"] = as_victim(home, "-c", WHERE)
    os.chmod(f"/run/user/{VICTIM}", 0o755)
    seen["the user's /run/user/<uid>, open to others"] = as_victim(home, "-c", WHERE)
    return {"runs": seen, "home": str(home)}


def legitimate_tmp_fallback() -> dict[str, Any]:
    """No squatter: the victim's own daemon in /tmp/memoryd-65534 serves its CLI."""
    home = victim_home("legit", long=True)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    config = home / ".config" / "memoryd"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('[defaults]\nprovider = "none"\n')
    for p in (home / ".config", config, config / "config.toml"):
        os.chown(p, VICTIM, VICTIM)
    daemon = subprocess.Popen(
        ["setpriv", f"--reuid={VICTIM}", f"--regid={VICTIM}", "--clear-groups", PYTHON, "-m", "memoryd", "serve"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd="/",
    )
    assert daemon.stderr is not None
    for line in daemon.stderr:
        if "memoryd ready" in line:
            break
    try:
        status = as_victim(home, "status", "--json")
    finally:
        daemon.terminate()
        daemon.communicate(timeout=60)
    return {"runs": {"status": status}, "daemon_rc": daemon.returncode}


def kept_paths_visible() -> dict[str, Any]:
    """The checkout, its virtualenv and any extra kept path are where they were, over the fresh tmpfs."""
    home = victim_home("kept", long=False)
    return {
        "visible": {str(p): p.exists() for p in needed_paths()},
        "runs": {"import": as_victim(home, "-c", "import memoryd, sys; sys.stdout.write(memoryd.__file__)")},
    }


SCENARIOS = {
    f.__name__: f
    for f in (
        kept_paths_visible,
        squatted_tmp,
        foreign_socket_in_own_dir,
        foreign_listener_behind_own_socket,
        symlinked_runtime_dir,
        run_user_choice,
        legitimate_tmp_fallback,
    )
}


PRIVATE = (Path("/tmp"), Path("/run/user"))
"""Each scenario gets fresh, empty copies of these: the folders memoryd's socket discovery looks in."""

MS_BIND, MS_REC = 4096, 16384
KEEP_ENV = "MEMORYD_SQUAT_KEEP"
"""More paths (os.pathsep-separated) to keep visible: the test proves a folder under /tmp survives."""


def needed_paths() -> list[Path]:
    """What the victim's memoryd runs from: the checkout (memoryd is installed editable from it), the
    virtualenv and the interpreter behind it. A checkout under /tmp must stay visible over the fresh tmpfs."""
    checkout = Path(__file__).resolve().parents[2]
    extra = [Path(p).resolve() for p in os.environ.get(KEEP_ENV, "").split(os.pathsep) if p]
    return sorted({checkout, Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), *extra})


def bind_back(folder: Path, old_folder_fd: int, paths: list[Path]) -> None:
    """Bind each of `paths` below `folder` from the folder's old contents (reached through a descriptor
    opened before the tmpfs hid them) onto the same path in the fresh tmpfs: the checkout keeps its place."""
    libc = ctypes.CDLL(None, use_errno=True)
    inside = [p for p in paths if p.is_relative_to(folder)]
    for path in inside:
        if any(path != other and path.is_relative_to(other) for other in inside):
            continue  # bound already with the folder holding it
        os.makedirs(path, mode=0o755, exist_ok=True)
        source = f"/proc/self/fd/{old_folder_fd}/{path.relative_to(folder)}"
        if libc.mount(source.encode(), str(path).encode(), None, MS_BIND | MS_REC, None) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"bind {path} back over the private {folder}: {os.strerror(errno)}")


def main() -> None:
    results: dict[str, Any] = {}
    Path("/run/user").mkdir(exist_ok=True)
    keep = needed_paths()
    old_fds = {folder: os.open(folder, os.O_PATH | os.O_DIRECTORY) for folder in PRIVATE}
    for name, scenario in SCENARIOS.items():
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=1777", "none", "/tmp"], check=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=755", "none", "/run/user"], check=True)
        for folder, fd in old_fds.items():
            bind_back(folder, fd, keep)
        try:
            results[name] = scenario()
        finally:
            subprocess.run(["umount", "-l", "/run/user"], check=True)
            subprocess.run(["umount", "-l", "/tmp"], check=True)
    sys.stdout.write(json.dumps(results) + "\n")


if __name__ == "__main__":
    main()
