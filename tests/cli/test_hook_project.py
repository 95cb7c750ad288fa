"""A session's project by its git remote: two clones of one repository share memory, a repository beside
another does not take its transcripts, read from real repositories' `.git/config` (made with git itself)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from memoryd.cli.hooks import recall
from memoryd.cli.hooks.project import Project, current, git_remote, normalise_remote, project_key

KEY = "github.com/me/app"


def git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def repo(path: Path, remote: str | None, name: str = "origin") -> Path:
    path.mkdir(parents=True)
    git("init", "-q", cwd=path)
    if remote is not None:
        git("remote", "add", name, remote, cwd=path)
    return path


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:me/app.git",
        "git@GitHub.com:Me/App.git",
        "https://github.com/me/app",
        "https://github.com/me/app.git/",
        "https://me:s3cret@github.com/me/app.git",
        "ssh://git@github.com:22/me/app.git",
        "ssh://github.com/me/app",
        "git://github.com/me/app.git",
    ],
)
def test_every_form_of_one_remote_is_one_key(url: str) -> None:
    assert normalise_remote(url) == KEY


def test_local_and_unusable_remotes(tmp_path: Path) -> None:
    assert normalise_remote("/srv/git/app.git") == "file:/srv/git/app"
    assert normalise_remote("file:///srv/git/app.git") == "file:/srv/git/app"
    assert normalise_remote("../app.git", tmp_path / "clone") == f"file:{tmp_path}/app"
    assert normalise_remote("") == normalise_remote("https://") == ""
    assert "s3cret" not in normalise_remote("https://me:s3cret@host.example/x")


def test_the_remote_is_read_from_the_repository_config(tmp_path: Path) -> None:
    one = repo(tmp_path / "src" / "app", "git@github.com:me/app.git")
    (one / "pkg" / "deep").mkdir(parents=True)
    two = repo(tmp_path / "review" / "app-copy", "https://github.com/me/app.git")
    assert git_remote(str(one / "pkg" / "deep")) == git_remote(str(two)) == KEY
    assert git_remote(str(repo(tmp_path / "plain", None))) == ""
    assert git_remote(str(repo(tmp_path / "fork", "https://example.org/x/y.git", "upstream"))) == "example.org/x/y"
    assert git_remote(str(tmp_path / "nowhere")) == git_remote("") == ""
    # A linked worktree's `.git` is a file naming its git directory; the remotes are in the common one.
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=one)
    git("worktree", "add", "-q", str(tmp_path / "wt"), cwd=one)
    assert (tmp_path / "wt" / ".git").is_file()
    assert git_remote(str(tmp_path / "wt")) == KEY


def test_clones_share_memory_and_a_neighbour_repository_does_not(tmp_path: Path) -> None:
    here = repo(tmp_path / "a" / "app", "git@github.com:me/app.git")
    clone = repo(tmp_path / "b" / "app", "https://github.com/me/app")
    neighbour = repo(tmp_path / "a" / "app-tools", "git@github.com:me/tools.git")  # its folder key extends here's
    plain = tmp_path / "a" / "app-notes"  # no repository: only the folder key can say
    plain.mkdir()
    projects = tmp_path / "claude" / "projects"

    def transcript(cwd: Path, name: str) -> recall.Hit:
        folder = project_key(str(cwd))
        record = {"type": "user", "cwd": str(cwd), "message": {"role": "user", "content": name}}
        (projects / folder).mkdir(parents=True, exist_ok=True)
        (projects / folder / f"{name}.jsonl").write_text(json.dumps(record) + "\n")
        path = f"claude-code/{folder}/{name}.jsonl"
        return recall.Hit(path, f"{path}#L1", f"words of {name}", "sessions")

    hits = [transcript(clone, "clone"), transcript(neighbour, "neighbour"), transcript(plain, "plain")]
    session = current("claude-code", str(here), str(projects / project_key(str(here)) / "s.jsonl"))
    assert session == Project(project_key(str(here)), KEY)
    args = {"seen": frozenset(), "session_id": "sid-9f1c", "transcript_path": "", "project": session, "limit": 10}
    chosen = recall.choose(hits, scope="project", roots=recall.Roots(claude=projects), **args)  # type: ignore[arg-type]
    # The clone's session is this project (same remote, another folder); the neighbour repository's is not,
    # though its folder key starts with this one's; the folder without a repository is judged by its key.
    assert [h.text for h in chosen] == ["words of clone", "words of plain"]
    wide = recall.choose(hits, scope="all", roots=recall.Roots(claude=projects), **args)  # type: ignore[arg-type]
    assert [h.text for h in wide] == ["words of clone", "words of plain", "words of neighbour"]


def test_a_codex_rollout_names_its_repository(tmp_path: Path) -> None:
    rollout = tmp_path / "2026" / "12" / "03" / "rollout-x.jsonl"
    rollout.parent.mkdir(parents=True)
    meta = {"cwd": "/gone/app", "git": {"repository_url": "git@github.com:me/app.git", "branch": "main"}}
    rollout.write_text(json.dumps({"type": "session_meta", "payload": meta}) + "\n")
    hit = recall.Hit("codex/2026/12/03/rollout-x.jsonl", "x", "codex words", "sessions")
    assert recall.hit_project(hit, recall.Roots(codex=tmp_path)) == Project("-gone-app", KEY)
