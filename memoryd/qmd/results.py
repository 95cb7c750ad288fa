"""QMD hits as memoryd search results (spec §4.5 "Results").

Paths: a hit inside the workspace is cited by its workspace-relative path (as the builtin index
cites it); anything else as `qmd/<collection>/<path>`. A hit in the exported-sessions collection
is cited as the transcript itself (`sessions/<name>.jsonl`, JSONL lines) when the export's line
map is known. Lines come from explicit fields, else the snippet's `@@ -start,count` header, else the
matched line, else the snippet's own length. Then: the best score per document, `min_score`,
memory and sessions interleaved, the result limit, and the total snippet budget.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from memoryd.qmd.collections import ManagedCollection
from memoryd.qmd.exporter import ExportedSession
from memoryd.qmd.parse import QmdHit, snippet_header_lines, strip_snippet_header
from memoryd.search.pipeline import SearchResult
from memoryd.search.scoring import truncate_snippet, utf16_len

DocLookup = Callable[[str], Sequence[tuple[str, str]]]
"""docid -> [(collection, collection-relative path)] from QMD's own index, for hits without a file hint."""


@dataclass(frozen=True, slots=True)
class ResultLimits:
    max_results: int
    max_snippet_chars: int
    max_injected_chars: int
    min_score: float = 0.0


def best_per_document(hits: Sequence[QmdHit]) -> list[QmdHit]:
    """One hit per document (QMD's docid, else collection + path), the best-scored, best first."""
    best: dict[str, QmdHit] = {}
    for hit in hits:
        key = f"doc:{hit.docid}" if hit.docid else f"file:{hit.collection}/{hit.path}"
        prev = best.get(key)
        if prev is None or hit.score > prev.score:
            best[key] = hit
    return sorted(best.values(), key=lambda h: -h.score)


def snippet_body(snippet: str) -> str:
    """The snippet's text: no `@@` header, no trailing newlines (leading blank lines are real lines)."""
    return strip_snippet_header(snippet).rstrip("\n")


def hit_lines(hit: QmdHit, snippet: str) -> tuple[int, int]:
    """(start, end) lines of a hit; a header's range is cut to the lines the snippet really shows."""
    if hit.start_line is not None and hit.end_line is not None:
        return (min(hit.start_line, hit.end_line), max(hit.start_line, hit.end_line))
    header = snippet_header_lines(snippet)
    if header is not None:
        shown = len(snippet_body(snippet).split("\n"))
        header = (header[0], max(header[0], min(header[1], header[0] + shown - 1)))
    width = header[1] - header[0] if header else 0
    if hit.start_line is not None:
        return hit.start_line, hit.start_line + width
    if hit.end_line is not None:
        return max(1, hit.end_line - width), hit.end_line
    if header is not None:
        return header
    if hit.line is not None:
        return hit.line, hit.line
    return 1, max(1, len(snippet.split("\n")))


class ResultMapper:
    """Turns hits into results for one agent; `map` does file-system checks, so run it in a thread."""

    def __init__(
        self,
        workspace: Path,
        collections: Sequence[ManagedCollection],
        *,
        exports: Callable[[], Mapping[str, ExportedSession]] | None = None,
        lookup: DocLookup | None = None,
    ) -> None:
        self.workspace = Path(os.path.normpath(workspace))
        self.collections = {c.name: c for c in collections}
        self._exports = exports
        self._lookup = lookup

    def _locate(self, hit: QmdHit) -> tuple[ManagedCollection, str] | None:
        collection = self.collections.get(hit.collection)
        if collection is not None and hit.path:
            rel = hit.path.replace("\\", "/").lstrip("/")
            if self._lookup is None or (collection.path / rel).exists():
                return collection, rel
        if self._lookup is None or not hit.docid:
            return None
        rows = list(self._lookup(hit.docid))
        rows.sort(key=lambda row: row[0] != hit.collection)  # the hinted collection first
        for name, rel in rows:
            if name in self.collections:
                return self.collections[name], rel
        return None

    def _cited(self, collection: ManagedCollection, rel: str, start: int, end: int) -> tuple[str, int, int]:
        if collection.kind == "sessions" and self._exports is not None:
            origin = self._exports().get(rel)
            if origin is not None:
                lines = origin.transcript_lines(start, end)
                if lines is not None:
                    return origin.transcript_path, lines[0], lines[1]
        absolute = Path(os.path.normpath(collection.path / rel))
        inside = absolute == self.workspace or self.workspace in absolute.parents
        if inside:
            ws_rel = absolute.relative_to(self.workspace).as_posix()
            if ws_rel and ws_rel != "qmd" and not ws_rel.startswith("qmd/"):
                return ws_rel, start, end
        return f"qmd/{collection.name}/{rel}", start, end

    def map(self, hits: Sequence[QmdHit], limits: ResultLimits) -> list[SearchResult]:
        results: list[SearchResult] = []
        for hit in best_per_document(hits):
            if hit.score < limits.min_score:
                continue
            located = self._locate(hit)
            if located is None:
                continue
            collection, rel = located
            start, end = hit_lines(hit, hit.snippet)
            body = snippet_body(hit.snippet)
            text = body.lstrip("\n")
            start = min(end, start + len(body) - len(text))  # blank lines opening the snippet are not shown
            path, start, end = self._cited(collection, rel, start, end)
            snippet = truncate_snippet(text, limits.max_snippet_chars)
            results.append(SearchResult(path, start, end, hit.score, snippet, collection.source))
        return clamp_injected(interleave_sources(results, limits.max_results), limits.max_injected_chars)


def interleave_sources(results: Sequence[SearchResult], limit: int) -> list[SearchResult]:
    """Round-robin memory and sessions (the source with the best hit first) so neither crowds out the other."""
    if limit <= 0:
        return []
    by_source: dict[str, list[SearchResult]] = {}
    for r in results:
        by_source.setdefault(r.source, []).append(r)
    if len(by_source) < 2:
        return list(results[:limit])
    order = sorted(by_source, key=lambda s: -by_source[s][0].score)
    out: list[SearchResult] = []
    while len(out) < limit and any(by_source[s] for s in order):
        for source in order:
            if by_source[source] and len(out) < limit:
                out.append(by_source[source].pop(0))
    return out


def clamp_injected(results: Sequence[SearchResult], budget: int) -> list[SearchResult]:
    """At most `budget` snippet characters (UTF-16 units) in all: the overflowing snippet is cut, later ones dropped."""
    if budget <= 0:
        return list(results)
    remaining = budget
    out: list[SearchResult] = []
    for r in results:
        if remaining <= 0:
            break
        size = utf16_len(r.snippet)
        if size <= remaining:
            out.append(r)
            remaining -= size
        else:
            out.append(
                SearchResult(
                    r.path, r.start_line, r.end_line, r.score, truncate_snippet(r.snippet, remaining), r.source
                )
            )
            break
    return out
