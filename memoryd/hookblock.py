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
block held the evidence of 0.611 of the FAQ's questions (served R@5 0.924), against 0.565 with equal shares and
0.588 filling it greedily (the first two windows took it all); aider's 0.901 / 0.901 / 0.795 then counted a
repeated snippet twice (0.848 at these shares since, README "prompt hook's block")."""
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
    match_at: int = 0
    """Where the matching window opens in `text` (characters): earlier lines are context the search took back
    (the reply's `snippetMatchOffset`), the first a cut drops."""

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
        raw = str(r.get("snippet") or "")
        offset = r.get("snippetMatchOffset")
        match_at = _chars(raw, offset) if isinstance(offset, int) and offset > 0 else 0
        text = raw.strip()
        match_at = max(0, match_at - (len(raw) - len(raw.lstrip())))
        text = text.removesuffix(f"Source: {label}").rstrip() if text.endswith(f"Source: {label}") else text
        text = _FOOTER_LINE.sub("", text).strip()
        start, end = _lines(r)
        lines = (start, end) if isinstance(start, int) and isinstance(end, int) else None
        exact = lines is not None and isinstance(r.get("snippetStartLine"), int)
        exact = exact and lines is not None and text.count("\n") == lines[1] - lines[0]
        if text:
            match_at = match_at if text[match_at:].strip() else 0
            hits.append(Hit(r["path"], label, text, str(r.get("source") or ""), lines, exact, match_at))
    return hits


def _chars(text: str, utf16_units: int) -> int:
    """The number of characters of `text` its first `utf16_units` UTF-16 units hold (the protocol counts so)."""
    return len(text.encode("utf-16-le", errors="surrogatepass")[: 2 * utf16_units].decode("utf-16-le", errors="ignore"))


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
    first snippet cannot crowd out the next results; a cut snippet keeps its matching window's head (the
    context lines the search took back before it go first, see `_cut`). When the parts would be too small to
    say anything, the lowest-ranked hits go."""
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
        allowed, room = len(hit.label) + space, space
        cut, narrowed = _cut(hit, room)  # its label names only the lines still shown
        while len(narrowed.label) + len(cut) > allowed and room > 0:  # L9 -> L10: a longer label, a shorter cut
            room -= len(narrowed.label) + len(cut) - allowed
            cut, narrowed = _cut(hit, room)
        lines.append(f"- {narrowed.label}: {cut}")
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


def _cut(hit: Hit, space: int) -> tuple[str, Hit]:
    """The text a hit shows in `space` characters, and the hit naming what it still shows.

    The snippet's pieces (its lines, spacing collapsed as the block shows them; the line its match opens in
    split there) from the match on come first: when they fit, the context before them is taken back piece by
    piece while it fits; when they do not, their head is kept, cut with "…". A note's window (`exact`) then
    cites only its lines still shown."""
    pieces = _pieces(hit)
    match = next((i for i, piece in enumerate(pieces) if piece.opens), 0)
    first, size = match, len(_joined(pieces[match:]))
    if size <= space:
        while first > 0 and size + len(pieces[first - 1].text) + (0 if pieces[first].glued else 1) <= space:
            size += len(pieces[first - 1].text) + (0 if pieces[first].glued else 1)
            first -= 1
        return _joined(pieces[first:]), _narrowed(hit, pieces[first].line, pieces[-1].line)
    body = _joined(pieces[match:])[: space - 1].rstrip()
    last, used = pieces[match].line, 0
    for i, piece in enumerate(pieces[match:]):
        used += 0 if i == 0 or piece.glued else 1
        if used >= len(body):
            break
        last, used = piece.line, used + len(piece.text)
    return body + "…", _narrowed(hit, pieces[match].line, last)


@dataclass(frozen=True, slots=True)
class _Piece:
    line: int
    """Its line's index in the hit's text."""
    text: str
    """Its words, spacing collapsed as the block shows them."""
    opens: bool = False
    """The matching window opens here."""
    glued: bool = False
    """It follows the piece before it with no space between (a line split inside a word)."""


def _pieces(hit: Hit) -> list[_Piece]:
    """The hit's text as the block shows it: its non-blank lines, the one its match opens in split there."""
    out: list[_Piece] = []
    at, opened = 0, False
    for number, line in enumerate(hit.text.split("\n")):
        inside = hit.match_at - at
        split = 0 < inside < len(line)
        for begin, part in [(0, line[:inside]), (inside, line[inside:])] if split else [(0, line)]:
            text = " ".join(part.split())
            if text:
                opens = not opened and at + begin >= hit.match_at
                glued = begin > 0 and bool(out) and out[-1].line == number
                glued = glued and not line[begin - 1].isspace() and not line[begin].isspace()
                out.append(_Piece(number, text, opens, glued))
                opened = opened or opens
        at += len(line) + 1
    return out


def _joined(pieces: Sequence[_Piece]) -> str:
    return "".join(("" if i == 0 or p.glued else " ") + p.text for i, p in enumerate(pieces))


def _narrowed(hit: Hit, first: int, last: int) -> Hit:
    """The hit citing only lines `first`..`last` of its text, where its lines map onto its text line for line
    (a note's window; a transcript's records do not)."""
    if hit.lines is None or not hit.exact:
        return hit
    start, end = hit.lines
    first, last = start + first, start + last
    if (first, last) == (start, end):
        return hit
    label = f"{hit.path}#L{first}" if last == first else f"{hit.path}#L{first}-L{last}"
    return dataclasses.replace(hit, label=label, lines=(first, last))
