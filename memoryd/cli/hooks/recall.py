"""Recall before a prompt: the query, which hits may be shown, and the cited block the host injects.

The daemon searches with the agent's served settings and its evidence rule (an empty answer is an
abstention: nothing is injected). The hook then drops what this session must not see again: hits of
its own transcript (already in the model's context), snippets it was shown earlier in the session,
and, with `hooks.scope = "project"`, transcripts of other projects (notes and MEMORY.md are shared
memory and always pass). The rest is cut to `hooks.max_chars`, each snippet named by its citation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memoryd.cli.hooks.project import Project, claude_transcript_project, codex_rollout_project
from memoryd.hookblock import FOOTER, HEADER, Hit, hits_of, label_of, render

__all__ = [
    "FOOTER",
    "HEADER",
    "Hit",
    "Roots",
    "choose",
    "hit_project",
    "hits_of",
    "label_of",
    "own_transcript",
    "query_for",
    "render",
]

MAX_QUERY_CHARS = 1000
PREVIOUS_TURN_CHARS = 300


def query_for(prompt: str, previous: str, follow_up_words: int) -> str:
    """What to search for `prompt`: itself, led by the previous user turn when it is a short follow-up."""
    text = prompt.strip()
    if previous and len(text.split()) < follow_up_words:
        text = f"{previous.strip()[:PREVIOUS_TURN_CHARS]}\n{text}"
    return text[:MAX_QUERY_CHARS]


def own_transcript(hit: Hit, session_id: str, transcript_path: str) -> bool:
    """The hit is in this session's own transcript: its file is named by the session id (Claude Code:
    `<id>.jsonl`, Codex: `rollout-<time>-<id>.jsonl`; the whole id, never a part of another), or the
    transcript path ends with the hit's path."""
    if hit.source != "sessions":
        return False
    name = hit.path.rsplit("/", 1)[-1]
    if session_id and (name == f"{session_id}.jsonl" or name.endswith(f"-{session_id}.jsonl")):
        return True
    below = hit.path.split("/", 1)[-1]
    return bool(transcript_path) and transcript_path.replace("\\", "/").endswith("/" + below)


@dataclass(frozen=True, slots=True)
class Roots:
    """Where the hosts' transcripts lie, to read a hit's project from its own file (None: not looked at)."""

    claude: Path | None = None
    codex: Path | None = None


def hit_project(hit: Hit, roots: Roots, cache: dict[str, Project] | None = None) -> Project | None:
    """The project of a transcript hit (None: a note, shared memory; an unknown Project: a transcript of no
    known project). A Claude Code hit has its folder's name, and its records' cwd's remote when the file
    can be read; a Codex hit, its rollout's repository or cwd."""
    if hit.source != "sessions":
        return None
    cache = {} if cache is None else cache
    prefix, _, rest = hit.path.partition("/")
    if prefix == "claude-code" and "/" in rest:
        if roots.claude is None:
            return Project(rest.split("/", 1)[0])
        if hit.path not in cache:
            cache[hit.path] = claude_transcript_project(roots.claude / rest)
        return cache[hit.path]
    if prefix == "codex" and roots.codex is not None:
        if hit.path not in cache:
            cache[hit.path] = codex_rollout_project(roots.codex / rest)
        return cache[hit.path]
    return Project()


def choose(
    hits: Sequence[Hit],
    *,
    seen: frozenset[str],
    session_id: str,
    transcript_path: str,
    project: Project,
    scope: str,
    roots: Roots,
    limit: int,
) -> list[Hit]:
    """The hits to show, this project's and shared memory first, then transcripts of no known project,
    then (scope "all" only) other projects' transcripts; never one seen before or twice."""
    groups: tuple[list[Hit], list[Hit], list[Hit]] = ([], [], [])
    keys = set(seen)
    cache: dict[str, Project] = {}
    for hit in hits:
        if hit.key in keys or own_transcript(hit, session_id, transcript_path):
            continue
        where = hit_project(hit, roots, cache)
        if where is None or (where.known and project.holds(where)):
            groups[0].append(hit)
        elif not where.known:
            groups[1].append(hit)
        elif scope == "all":
            groups[2].append(hit)
        else:
            continue
        keys.add(hit.key)
    return [*groups[0], *groups[1], *groups[2]][:limit]
