"""The block a hook injects: search results as cited lines within a character budget.

Pure functions on a memory_search reply (its dict form): `memoryd hook` renders its recall with them,
and `memoryd eval` measures what such a block would hold for each dev-set question (the same code,
so the figure is the hook's). Kept light and low in the layers for both.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

HEADER = "<memoryd-recall>\nFrom long-term memory, maybe relevant; each line names its source:\n"
FOOTER = "</memoryd-recall>"
RANK_WEIGHTS = (3, 2, 1)
"""Shares of the budget by rank (then 1 each): measured with `memoryd eval` on the FAQ and aider sets, the
block held the evidence of 0.611 / 0.901 of the questions (served R@5 0.924 / 0.901), against 0.565 / 0.901
with equal shares and 0.588 / 0.795 filling it greedily (the first two windows took it all)."""
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
    exact: bool = False
    """`lines` map onto the text line for line (a note's snippet window), so a cut can narrow them."""

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
        exact = lines is not None and isinstance(r.get("snippetStartLine"), int)
        exact = exact and lines is not None and text.count("\n") == lines[1] - lines[0]
        if text:
            hits.append(Hit(r["path"], label, text, str(r.get("source") or ""), lines, exact))
    return hits


def distinct(hits: Sequence[Hit], seen: Collection[str] = ()) -> list[Hit]:
    """The hits whose snippet is not in `seen` nor earlier in `hits`, in order: the hook never shows one
    snippet twice, so a copy (a line copied into two notes, aider's architect answer echoed to its editor)
    leaves its place to the next result, and a block measured without this would not be the hook's."""
    keys = set(seen)
    out: list[Hit] = []
    for hit in hits:
        if hit.key not in keys:
            keys.add(hit.key)
            out.append(hit)
    return out


def render(hits: Sequence[Hit], max_chars: int) -> tuple[str, list[Hit]]:
    """The block within `max_chars` (frame included) and the hits it holds; ("", []) when none fits.

    The budget is shared by rank (RANK_WEIGHTS; a shorter snippet leaves the rest to the others), so a long
    first snippet cannot crowd out the next results; a cut snippet keeps its head, which is where its
    matching window opens. When the parts would be too small to say anything, the lowest-ranked hits go."""
    room = max_chars - len(HEADER) - len(FOOTER)
    items = [(f"- {hit.label}: ", " ".join(hit.text.split())) for hit in hits]
    for count in range(len(items), 0, -1):
        parts = _shares([len(lead) + len(text) + 1 for lead, text in items[:count]], room)
        spaces = [part - len(lead) - 1 for part, (lead, _text) in zip(parts, items, strict=False)]
        if all(space >= min(len(text), MIN_SNIPPET_CHARS) for space, (_lead, text) in zip(spaces, items, strict=False)):
            break
    else:
        return "", []
    lines: list[str] = []
    shown: list[Hit] = []
    for hit, (lead, text), space in zip(hits, items, spaces, strict=False):
        if len(text) <= space:
            lines.append(lead + text)
            shown.append(hit)
            continue
        narrowed = _narrowed(hit, space - 1)  # its label names only the lines still shown (never longer)
        lines.append(f"- {narrowed.label}: " + text[: space - 1].rstrip() + "…")
        shown.append(narrowed)
    return HEADER + "\n".join(lines) + "\n" + FOOTER, shown


def _shares(needs: Sequence[int], room: int) -> list[int]:
    """Split `room` among items needing `needs` in proportion to RANK_WEIGHTS (the best hits a larger part),
    what an item needs less of going to the rest."""
    weights = [RANK_WEIGHTS[min(i, len(RANK_WEIGHTS) - 1)] for i in range(len(needs))]
    parts = [0] * len(needs)
    left, total = room, sum(weights)
    for i in sorted(range(len(needs)), key=lambda k: needs[k] / weights[k]):
        parts[i] = min(needs[i], left * weights[i] // total) if total else 0
        left -= parts[i]
        total -= weights[i]
    return parts


def _narrowed(hit: Hit, shown_chars: int) -> Hit:
    """A hit cut to its first `shown_chars` characters names only the lines still shown, where its lines
    map onto its text line for line (a note's window; a transcript's records do not)."""
    if hit.lines is None or not hit.exact:
        return hit
    start, end = hit.lines
    used, last = 0, start
    for number, line in enumerate(hit.text.split("\n"), start=start):
        if used >= shown_chars or number > end:
            break
        last = number
        used += len(" ".join(line.split())) + 1
    if last == end:
        return hit
    path = hit.path
    label = f"{path}#L{start}" if last == start else f"{path}#L{start}-L{last}"
    return dataclasses.replace(hit, label=label, lines=(start, last))
