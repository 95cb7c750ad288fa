"""Citations on search results: the `Source: path#Lx-Ly` footer and the `citation` field (spec §4.1).

`citations = "on"` always adds them, `"off"` never does (the field is null), and `"auto"` (the default)
adds them in a direct conversation only: a caller that passes OpenClaw's session key
(`agent:<id>:<rest>`) whose rest names a `channel` or a `group` gets plain snippets, because a
footer per snippet is noise in a shared room; no key, or a key that does not parse, counts as direct.
Decoration is the last step of a search, after MMR (which compares the plain snippets) and after
QMD's snippet budget, so neither ever sees a footer.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from memoryd.media import NO_LINES
from memoryd.search.pipeline import SearchResult
from memoryd.search.request import SearchResponse
from memoryd.search.scoring import utf16_len

CitationsMode = Literal["auto", "on", "off"]
ChatType = Literal["direct", "group", "channel"]


def chat_type(session_key: str | None) -> ChatType:
    """What kind of conversation an OpenClaw session key names: `agent:<id>:<rest>`, rest split on ':'."""
    parts = (session_key or "").strip().lower().split(":")
    if len(parts) < 3 or parts[0] != "agent" or not parts[1]:
        return "direct"
    tokens = {t for t in parts[2:] if t}
    if "channel" in tokens:
        return "channel"
    if "group" in tokens:
        return "group"
    return "direct"


def include_citations(mode: CitationsMode, session_key: str | None) -> bool:
    if mode == "on":
        return True
    if mode == "off":
        return False
    return chat_type(session_key) == "direct"


def location(result: SearchResult) -> str:
    """`path#L<s>` or `path#L<s>-L<e>` of the lines the snippet shows (the chunk's when they are not known);
    the path alone for an image or audio file (it has no lines)."""
    if result.start_line == NO_LINES:
        return result.path
    start, end = result.snippet_lines or (result.start_line, result.end_line)
    if start == end:
        return f"{result.path}#L{start}"
    return f"{result.path}#L{start}-L{end}"


def decorate(results: list[SearchResult], include: bool) -> list[SearchResult]:
    """Results with their citation and footer, or with `citation` None (and the snippet untouched)."""
    if not include:
        return [dataclasses.replace(r, citation=None) for r in results]
    out = []
    for r in results:
        where = location(r)
        text = r.snippet.strip()
        match_at = max(0, r.snippet_match_at - (utf16_len(r.snippet) - utf16_len(r.snippet.lstrip())))
        out.append(
            dataclasses.replace(r, citation=where, snippet=f"{text}\n\nSource: {where}", snippet_match_at=match_at)
        )
    return out


def cite(response: SearchResponse, mode: CitationsMode, session_key: str | None) -> SearchResponse:
    """The response as a client receives it: results decorated per `mode`, and the mode reported."""
    include = include_citations(mode, session_key)
    return dataclasses.replace(response, results=decorate(response.results, include), citations=mode)
