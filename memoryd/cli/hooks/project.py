"""Which project a session belongs to: its git remote when it has one, else its working directory.

Two clones of one repository (`~/src/app`, `/tmp/app-review`) are one project: the key is the remote's
normalised URL (`github.com/me/app` for `git@github.com:me/App.git` and `https://me@github.com/me/app`).
Read from `.git/config` directly, never by running git: this runs before every prompt. Without a remote
the key is the working directory as Claude Code names its project folder (`/home/me/app` ->
`-home-me-app`), a session started in a subfolder belonging to the folder above. When both sides have
a remote, the remotes decide: a repository beside another (`-x-app` and `-x-app-tools`) is not its
subfolder. A transcript's project comes from its own records: the `cwd` of a Claude Code transcript's
records, a Codex rollout's `session_meta` (its `git.repository_url`, else its `cwd`).
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

import orjson

HEAD_BYTES = 64 * 1024
MAX_CONFIG_BYTES = 256 * 1024
MAX_DEPTH = 64
_NOT_WORD = re.compile(r"[^A-Za-z0-9]")
_SECTION = re.compile(r'^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]')
_SCP = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>.+)$")
_URL = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<rest>.*)$")


def project_key(cwd: str) -> str:
    """A working directory as Claude Code names its project folder (`/home/me/app` -> `-home-me-app`)."""
    return _NOT_WORD.sub("-", os.path.normpath(cwd)) if cwd else ""


@dataclass(frozen=True, slots=True)
class Project:
    """A session's project: its folder key and, when its repository has one, its remote's key."""

    folder: str = ""
    remote: str = ""

    @property
    def known(self) -> bool:
        return bool(self.folder or self.remote)

    def holds(self, other: Project) -> bool:
        """`other` is this project: the same remote when both have one, else the same folder or one below."""
        if self.remote and other.remote:
            return self.remote == other.remote
        here, there = self.folder, other.folder
        return bool(here) and (there == here or there.startswith(here + "-"))


def of_directory(cwd: str, folder: str = "") -> Project:
    """The project of a session working in `cwd` (`folder`: the host's own name for it, if it has one)."""
    return Project(folder or project_key(cwd), git_remote(cwd))


def current(host: str, cwd: str, transcript_path: str) -> Project:
    """This session's project: its folder is Claude Code's own folder name when the transcript lies in one,
    else the working directory's key; its remote is the working directory's repository's."""
    folder = ""
    if host == "claude-code" and transcript_path:
        parent = Path(transcript_path).parent
        if parent.parent.name == "projects":
            folder = parent.name
    return of_directory(cwd, folder)


def normalise_remote(url: str, repo: Path | None = None) -> str:
    """A remote URL as a key shared by its forms: no scheme, user, password or port, no `.git` or slash at
    the end, lower case (`ssh://git@GitHub.com:22/me/app.git` -> `github.com/me/app`). A local remote
    (a path, `file://`) is `file:` and its absolute path; "" for nothing usable."""
    text = url.strip()
    if not text:
        return ""
    scheme_match = _URL.match(text)
    if scheme_match:
        scheme, rest = scheme_match["scheme"].lower(), scheme_match["rest"]
        if scheme == "file":
            return _local(rest, repo)
        authority, _, path = rest.partition("/")
        host = authority.rpartition("@")[2]
        host = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    elif (scp := _SCP.match(text)) and not text.startswith(("/", ".", "~")) and "/" not in scp["host"]:
        host, path = scp["host"], scp["path"]
    else:
        return _local(text, repo)
    path = path.strip("/").removesuffix(".git").rstrip("/").removeprefix("~")
    return f"{host.lower()}/{path.lower().strip('/')}" if host and path else ""


def _local(path: str, repo: Path | None) -> str:
    where = Path(os.path.expanduser(path))
    if not where.is_absolute() and repo is not None:
        where = repo / where
    clean = os.path.normpath(str(where)).removesuffix(".git").rstrip("/")
    return f"file:{clean}" if where.is_absolute() else ""


def git_remote(cwd: str) -> str:
    """The normalised remote of the git repository holding `cwd` (`origin`, else its first remote); ""
    outside a repository, without a remote, or when anything cannot be read."""
    if not cwd:
        return ""
    with contextlib.suppress(OSError, ValueError):
        found = _git_dir(Path(cwd))
        if found is not None:
            work, git_dir = found
            return normalise_remote(_remote_url(_read(_config_of(git_dir))), work)
    return ""


def _git_dir(start: Path) -> tuple[Path, Path] | None:
    """The working tree and git directory of the repository holding `start`: `.git` as a folder, or as a
    file naming it (`gitdir: …`, a linked worktree or a submodule)."""
    folder = start.absolute()
    for _ in range(MAX_DEPTH):
        dot = folder / ".git"
        if dot.is_dir():
            return folder, dot
        if dot.is_file():
            line = _read(dot).strip()
            if line.startswith("gitdir:"):
                target = Path(line.removeprefix("gitdir:").strip())
                return folder, target if target.is_absolute() else folder / target
            return None
        if folder.parent == folder:
            return None
        folder = folder.parent
    return None


def _config_of(git_dir: Path) -> Path:
    """A linked worktree's git directory keeps its remotes in the common directory it names."""
    common = git_dir / "commondir"
    if common.is_file():
        shared = Path(_read(common).strip())
        return (shared if shared.is_absolute() else git_dir / shared) / "config"
    return git_dir / "config"


def _read(path: Path) -> str:
    with open(path, "rb") as fh:
        return fh.read(MAX_CONFIG_BYTES).decode("utf-8", "replace")


def _remote_url(config: str) -> str:
    """`remote.origin.url` of a git config file's text, else the first remote's url."""
    urls: dict[str, str] = {}
    section: tuple[str, str] | None = None
    for raw in config.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            m = _SECTION.match(line)
            if m is None:
                section = None
                continue
            name, sub = m[1].lower(), m[2]
            if sub is None and "." in name:  # the old `[remote.origin]` form
                name, _, sub = name.partition(".")
            section = (name, sub or "")
            line = line[m.end() :].strip()
            if not line:
                continue
        if section is None or section[0] != "remote" or not section[1]:
            continue
        key, sep, value = line.partition("=")
        if sep and key.strip().lower() == "url" and section[1] not in urls:
            urls[section[1]] = _value(value)
    return urls.get("origin") or next(iter(urls.values()), "")


def _value(text: str) -> str:
    """A config value: quotes dropped, a comment after it cut (outside quotes)."""
    out, quoted = [], False
    for ch in text.strip():
        if ch == '"':
            quoted = not quoted
        elif ch in "#;" and not quoted:
            break
        else:
            out.append(ch)
    return "".join(out).strip()


def _head(path: Path) -> list[bytes]:
    with open(path, "rb") as fh:
        return fh.read(HEAD_BYTES).splitlines()


def _first_line(path: Path) -> bytes:
    with open(path, "rb") as fh:
        return fh.readline(HEAD_BYTES)


def claude_transcript_project(path: Path) -> Project:
    """A Claude Code transcript's project: its folder's name and the remote of the `cwd` its records hold."""
    folder = path.parent.name
    with contextlib.suppress(OSError):
        for line in _head(path):
            if b'"cwd"' not in line:
                continue
            with contextlib.suppress(orjson.JSONDecodeError):
                record = orjson.loads(line)
                cwd = record.get("cwd") if isinstance(record, dict) else None
                if isinstance(cwd, str) and cwd:
                    return Project(folder, git_remote(cwd))
    return Project(folder)


def codex_rollout_project(path: Path) -> Project:
    """A Codex rollout's project, from its first record (`session_meta`): the repository it names, else its cwd's."""
    try:
        record = orjson.loads(_first_line(path))
    except (OSError, orjson.JSONDecodeError):
        return Project()
    payload = record.get("payload") if isinstance(record, dict) else None
    payload = payload if isinstance(payload, dict) else {}
    raw_cwd = payload.get("cwd")
    cwd = raw_cwd if isinstance(raw_cwd, str) else ""
    git = payload.get("git")
    url = git.get("repository_url") if isinstance(git, dict) else None
    remote = normalise_remote(url) if isinstance(url, str) else ""
    return Project(project_key(cwd), remote or git_remote(cwd))
