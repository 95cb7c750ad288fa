"""Recall before a prompt: the query, which hits may be shown, and the cited block the host injects.

The daemon searches with the agent's served settings and its evidence rule (an empty answer is an
abstention: nothing is injected). The hook then drops what this session must not see again: hits of
its own transcript (already in the model's context), snippets it was shown earlier in the session,
and, with `hooks.scope = "project"`, transcripts of other projects (notes and MEMORY.md are shared
memory and always pass). The rest is cut to `hooks.max_chars`, each snippet named by its citation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from memoryd.cli.hooks.transcript import codex_session_cwd, project_key, same_project
from memoryd.hookblock import FOOTER, HEADER, Hit, hits_of, label_of, render

__all__ = [
    "FOOTER",
    "HEADER",
    "Hit",
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
    `<id>.jsonl`, Codex: `rollout-…-<id>.jsonl`), or the transcript path ends with the hit's path."""
    if hit.source != "sessions":
        return False
    name = hit.path.rsplit("/", 1)[-1]
    if session_id and name.endswith(".jsonl") and session_id in name:
        return True
    below = hit.path.split("/", 1)[-1]
    return bool(transcript_path) and transcript_path.replace("\\", "/").endswith("/" + below)


def hit_project(hit: Hit, codex_root: Path | None, cwd_of: Callable[[Path], str] = codex_session_cwd) -> str | None:
    """The project of a transcript hit (None: a note, shared memory; "": a transcript of no known project)."""
    if hit.source != "sessions":
        return None
    prefix, _, rest = hit.path.partition("/")
    if prefix == "claude-code" and "/" in rest:
        return rest.split("/", 1)[0]
    if prefix == "codex" and codex_root is not None:
        return project_key(cwd_of(codex_root / rest))
    return ""


def choose(
    hits: Sequence[Hit],
    *,
    seen: frozenset[str],
    session_id: str,
    transcript_path: str,
    project: str,
    scope: str,
    codex_root: Path | None,
    limit: int,
) -> list[Hit]:
    """The hits to show, this project's and shared memory first, then transcripts of no known project,
    then (scope "all" only) other projects' transcripts; never one seen before or twice."""
    groups: tuple[list[Hit], list[Hit], list[Hit]] = ([], [], [])
    keys = set(seen)
    for hit in hits:
        if hit.key in keys or own_transcript(hit, session_id, transcript_path):
            continue
        where = hit_project(hit, codex_root)
        if where is None or (where and same_project(project, where)):
            groups[0].append(hit)
        elif not where:
            groups[1].append(hit)
        elif scope == "all":
            groups[2].append(hit)
        else:
            continue
        keys.add(hit.key)
    return [*groups[0], *groups[1], *groups[2]][:limit]
