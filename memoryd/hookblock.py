"""The block a hook injects: search results as cited lines within a character budget.

Pure functions on a memory_search reply (its dict form): `memoryd hook` renders its recall with them,
and `memoryd eval` measures what such a block would hold for each dev-set question (the same code,
so the figure is the hook's). Kept light and low in the layers for both.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

HEADER = "<memoryd-recall>\nFrom long-term memory, maybe relevant; each line names its source:\n"
FOOTER = "</memoryd-recall>"
MIN_SNIPPET_CHARS = 60
"""A snippet cut shorter than this says nothing: the block ends instead."""
_FOOTER_LINE = re.compile(r"\n\s*Source: \S+\s*$")


def snippet_key(text: str) -> str:
    """The identity of a snippet: its words, case and spacing aside (the same lines cited twice, or
    copied into two notes, are one snippet)."""
    return hashlib.blake2b(" ".join(text.lower().split()).encode(), digest_size=10).hexdigest()


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result as the hook uses it."""

    path: str
    label: str
    """Where it comes from: the citation (`memory/2026-11-03.md#L12`), else `path#Lstart-Lend`."""
    text: str
    source: str
    lines: tuple[int, int] | None = None
    """The lines the snippet shows (the matching window when the reply says, else the chunk's)."""

    @property
    def key(self) -> str:
        return snippet_key(self.text)


def _lines(result: Mapping[str, object]) -> tuple[object, object]:
    """The lines the snippet shows: the best-matching window's when the reply says, else the chunk's."""
    start, end = result.get("snippetStartLine"), result.get("snippetEndLine")
    if isinstance(start, int) and isinstance(end, int):
        return start, end
    return result.get("startLine"), result.get("endLine")


def label_of(result: Mapping[str, object]) -> str:
    citation, path = result.get("citation"), str(result.get("path", ""))
    if isinstance(citation, str) and citation:
        return citation
    start, end = _lines(result)
    if not isinstance(start, int) or result.get("kind"):
        return path
    return f"{path}#L{start}" if not isinstance(end, int) or end <= start else f"{path}#L{start}-L{end}"


def hits_of(reply: Mapping[str, object]) -> list[Hit]:
    """The results of a memory_search reply, snippets without their `Source:` footer."""
    results = reply.get("results")
    hits = []
    for r in results if isinstance(results, list) else []:
        if not isinstance(r, dict) or not isinstance(r.get("path"), str):
            continue
        label = label_of(r)
        text = str(r.get("snippet") or "").strip()
        text = text.removesuffix(f"Source: {label}").rstrip() if text.endswith(f"Source: {label}") else text
        text = _FOOTER_LINE.sub("", text).strip()
        start, end = _lines(r)
        lines = (start, end) if isinstance(start, int) and isinstance(end, int) else None
        if text:
            hits.append(Hit(r["path"], label, text, str(r.get("source") or ""), lines))
    return hits


def render(hits: Sequence[Hit], max_chars: int) -> tuple[str, list[Hit]]:
    """The block within `max_chars` (frame included) and the hits it holds; ("", []) when none fits."""
    room = max_chars - len(HEADER) - len(FOOTER)
    lines: list[str] = []
    shown: list[Hit] = []
    for hit in hits:
        lead = f"- {hit.label}: "
        text = " ".join(hit.text.split())
        space = room - len(lead) - 1  # the newline
        if space < min(len(text), MIN_SNIPPET_CHARS):
            break
        if len(text) > space:
            text = text[: space - 1].rstrip() + "…"
        line = lead + text
        lines.append(line)
        shown.append(hit)
        room -= len(line) + 1
    if not lines:
        return "", []
    return HEADER + "\n".join(lines) + "\n" + FOOTER, shown
