"""The viewer's HTML, rendered from the tools' own replies. Every piece of text goes through `esc`.

No template engine: a few functions that build strings, each escaping what it puts in (notes and
transcripts hold whatever the user and the model wrote: `<script>` in a note must show as text).
Highlighting splits the raw text on the query's words first and escapes every piece after, so a
match can never cut an entity in two.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

_WORD = re.compile(r"\w{2,}", re.UNICODE)


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def href(where: str, /, **query: object) -> str:
    """A same-site link with its query string encoded (and the whole escaped for an attribute)."""
    shown = {k: v for k, v in query.items() if v is not None and v != ""}
    return esc(where + ("?" + urlencode(shown) if shown else ""))


def terms(query: str) -> list[str]:
    """The query's words (two letters or more), longest first so the longer match wins."""
    return sorted({w.lower() for w in _WORD.findall(query)}, key=len, reverse=True)


def highlight(text: str, words: Sequence[str]) -> str:
    """`text` escaped, with every occurrence of `words` (case-insensitive) in <mark>."""
    if not words:
        return esc(text)
    pattern = re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE)
    out: list[str] = []
    last = 0
    for match in pattern.finditer(text):
        out.append(esc(text[last : match.start()]))
        out.append(f"<mark>{esc(match.group(0))}</mark>")
        last = match.end()
    out.append(esc(text[last:]))
    return "".join(out)


def layout(title: str, body: str, *, nav: str = "") -> str:
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · memoryd</title>"
        '<link rel=stylesheet href="/static/viewer.css"></head>'
        f'<body><header><a class=brand href="/">memoryd</a>{nav}</header><main>{body}</main></body></html>'
    )


def nav(agent: str | None, csrf: str) -> str:
    where = f'<a href="{href(f"/a/{agent}")}">{esc(agent)}</a>' if agent else ""
    logout = (
        f'<form method=post action="/logout" class=inline><input type=hidden name=csrf value="{esc(csrf)}">'
        "<button type=submit>Log out</button></form>"
    )
    return f"<nav>{where}{logout}</nav>"


def login(message: str = "") -> str:
    note = f"<p class=error role=alert>{esc(message)}</p>" if message else ""
    return layout(
        "Log in",
        "<h1>Log in</h1>"
        f"{note}<p>Paste a token from <code>memoryd token create --agent ID</code>.</p>"
        '<form method=post action="/login" class=login>'
        "<label>Token <input type=password name=token autocomplete=off required autofocus></label>"
        "<button type=submit>Log in</button></form>",
    )


def agents(names: Iterable[str], csrf: str) -> str:
    items = "".join(f'<li><a href="{href(f"/a/{n}")}">{esc(n)}</a></li>' for n in names)
    return layout("Agents", f"<h1>Agents</h1><ul class=agents>{items}</ul>", nav=nav(None, csrf))


def error(status: int, message: str, csrf: str | None = None) -> str:
    return layout(
        f"Error {status}",
        f"<h1>{status}</h1><p class=error role=alert>{esc(message)}</p>",
        nav=nav(None, csrf) if csrf else "",
    )


def _rows(pairs: Iterable[tuple[str, object]]) -> str:
    return "".join(f"<tr><th>{esc(k)}</th><td>{esc(_shown(v))}</td></tr>" for k, v in pairs)


def _shown(value: object) -> object:
    return ("yes" if value else "no") if isinstance(value, bool) else value


def search_form(agent: str, query: str = "", corpus: str = "all") -> str:
    options = "".join(
        f"<option value={c}{' selected' if c == corpus else ''}>{c}</option>" for c in ("all", "memory", "sessions")
    )
    return (
        f'<form method=get action="{href(f"/a/{agent}/search")}" class=search role=search>'
        f'<input type=search name=q value="{esc(query)}" placeholder="Search memory" required>'
        f"<select name=corpus>{options}</select><button type=submit>Search</button></form>"
    )


def agent_home(
    agent: str,
    status: Mapping[str, Any],
    files: Sequence[Mapping[str, Any]],
    writes: Sequence[Mapping[str, Any]],
    csrf: str,
    *,
    writable: bool,
    hooks: Mapping[str, Mapping[str, object]] | None = None,
) -> str:
    last = (status.get("daemon") or {}).get("lastSync") or {}
    embedding = status.get("embedding") or {}
    facts = [
        ("files indexed", status.get("files")),
        ("chunks", status.get("chunks")),
        *(
            (f"{c.get('source')} files / chunks", f"{c.get('files')} / {c.get('chunks')}")
            for c in status.get("sourceCounts") or []
        ),
        ("search mode", status.get("searchMode")),
        ("provider / model", f"{status.get('provider') or 'none'} / {status.get('model') or '-'}"),
        ("embedding", embedding.get("state")),
        ("files without vectors", embedding.get("filesWithoutVectors", 0)),
        ("syncing now", status.get("syncing", False)),
        ("pending changes", status.get("pending", 0)),
        ("queue depth", status.get("queueDepth", 0)),
        ("up to date", "no (changes waiting)" if status.get("dirty") else "yes"),
        ("last sync", f"{last.get('at') or 'never'} ({last.get('reason') or '-'}, {last.get('durationMs') or 0} ms)"),
        *_progress_rows(status.get("progress")),
    ]
    skipped = status.get("skippedFiles") or []
    skipped_html = (
        "<h2>Skipped</h2><table class=skipped><tr><th>file</th><th>why</th></tr>"
        + "".join(f"<tr><td>{esc(s.get('path'))}</td><td>{esc(s.get('message'))}</td></tr>" for s in skipped)
        + "</table>"
        if skipped
        else "<p class=muted>No file was skipped.</p>"
    )
    degraded = (status.get("degraded") or []) if isinstance(status.get("degraded"), list) else []
    degraded_html = "".join(f"<p class=error>{esc(d.get('path'))}: {esc(d.get('reason'))}</p>" for d in degraded)
    listing = "".join(
        f'<tr><td><a href="{href(f"/a/{agent}/file", path=f["path"])}">{esc(f["path"])}</a></td>'
        f"<td>{esc(f['source'])}</td><td class=num>{esc(f['size'])}</td></tr>"
        for f in files
    )
    saves = "".join(
        f'<tr><td>{esc(w.get("at"))}</td><td><a href="{href(f"/a/{agent}/file", path=w.get("path"))}">'
        f"{esc(w.get('citation') or w.get('path'))}</a></td></tr>"
        for w in writes
    )
    saves_html = (
        f"<h2>Recent saves</h2><table class=writes id=writes>{saves}</table>"
        if saves
        else "<p class=muted>No memory_write since the daemon started.</p>"
    )
    body = (
        f"<h1>{esc(agent)}</h1>{search_form(agent)}"
        f"<section><h2>Index</h2><table class=status id=status>{_rows(facts)}</table>{degraded_html}"
        f"{skipped_html}</section>"
        f"<section><h2>Notes and sessions</h2><table class=files><tr><th>path</th><th>source</th><th>bytes</th></tr>"
        f"{listing}</table></section><section>{saves_html}</section>{hooks_section(hooks or {})}"
        + (write_form(agent, csrf) if writable else "")
    )
    return layout(agent, body, nav=nav(agent, csrf))


def hooks_section(hooks: Mapping[str, Mapping[str, object]]) -> str:
    """What the host hooks of this machine last did (counts from memoryd.hookruns, never the text)."""
    if not hooks:
        return "<section><h2>Hooks</h2><p class=muted>No host hook has run on this machine.</p></section>"
    rows = "".join(
        f"<tr><td>{esc(key)}</td><td>{esc(run.get('at'))}</td><td>{esc(run.get('outcome'))}</td>"
        f"<td class=num>{esc(run.get('injected'))}</td><td class=num>{esc(run.get('chars'))}</td></tr>"
        for key, run in sorted(hooks.items())
    )
    return (
        "<section><h2>Hooks</h2><table class=hooks id=hooks><tr><th>host and event</th><th>last ran</th>"
        f"<th>outcome</th><th>snippets injected</th><th>characters</th></tr>{rows}</table></section>"
    )


def _progress_rows(progress: object) -> list[tuple[str, object]]:
    """Indexing progress from status (phase, files, chunks, rate, time left); one row when idle."""
    if not isinstance(progress, Mapping) or progress.get("phase") in (None, "idle"):
        return [("indexing", "idle")]
    files = progress.get("files") or {}
    chunks = progress.get("chunks") or {}
    rate, eta = progress.get("chunksPerSecond"), progress.get("etaSeconds")
    return [
        ("indexing", f"{progress.get('phase')} ({progress.get('job') or '-'})"),
        (
            "files indexed / seen / total",
            f"{files.get('indexed', 0)} / {files.get('seen', 0)} / {files.get('total', 0)}",
        ),
        ("chunks embedded / without vectors", f"{chunks.get('embedded', 0)} / {chunks.get('withoutVectors', 0)}"),
        ("rate", f"{rate:.1f} chunks/s" if isinstance(rate, int | float) else "-"),
        ("time left", f"~{round(eta)} s" if isinstance(eta, int | float) else "unknown"),
    ]


def write_form(agent: str, csrf: str) -> str:
    return (
        f'<section><h2>Remember</h2><form method=post action="{href(f"/a/{agent}/write")}" class=write>'
        f'<input type=hidden name=csrf value="{esc(csrf)}">'
        '<textarea name=text rows=4 required placeholder="A decision, a preference, a fact"></textarea>'
        "<select name=target><option value=daily>today's note</option><option value=long-term>MEMORY.md</option>"
        '</select><input name=heading placeholder="heading (optional)"><button type=submit>Save</button>'
        "</form></section>"
    )


def results(agent: str, query: str, corpus: str, reply: Mapping[str, Any], csrf: str) -> str:
    words = terms(query)
    hits = reply.get("results") or []
    items = []
    for hit in hits:
        link = href(f"/a/{agent}/file", path=hit["path"], q=query, at=hit.get("startLine") or None)
        lines = f"#L{hit.get('startLine')}-L{hit.get('endLine')}" if hit.get("startLine") else ""
        items.append(
            f'<li class=hit><div class=meta><a href="{link}">{esc(hit["path"])}{esc(lines)}</a>'
            f" <span class=source>{esc(hit.get('source'))}</span>"
            f" <span class=score>score {float(hit.get('score', 0)):.3f}</span></div>"
            f"<pre class=snippet>{highlight(str(hit.get('snippet', '')), words)}</pre></li>"
        )
    fresh = reply.get("freshness") or {}
    evidence = reply.get("evidence")
    summary = [
        ("mode", reply.get("mode")),
        ("results", len(hits)),
        ("evidence", "-" if evidence is None else f"{float(evidence):.3f} (needs {reply.get('minEvidence', '-')})"),
        ("indexed at", fresh.get("indexedAt") or "never"),
        ("pending", fresh.get("pending", 0)),
    ]
    listing = f"<ol class=hits>{''.join(items)}</ol>" if items else "<p class=muted>Nothing found.</p>"
    body = (
        f"<h1>Search {esc(agent)}</h1>{search_form(agent, query, corpus)}"
        f"<table class=summary>{_rows(summary)}</table>{listing}"
    )
    return layout(f"{query} — {agent}", body, nav=nav(agent, csrf))


def file_view(agent: str, reply: Mapping[str, Any], query: str, at: int | None, csrf: str) -> str:
    words = terms(query)
    first = int(reply.get("from") or 1)
    text = str(reply.get("text", ""))
    rows = []
    for offset, line in enumerate(text.split("\n")):
        number = first + offset
        mark = " class=at" if at is not None and number == at else ""
        rows.append(
            f'<tr id="L{number}"{mark}><td class=num>{number}</td><td><pre>{highlight(line, words)}</pre></td></tr>'
        )
    body = (
        f"<h1>{esc(reply.get('path'))}</h1>"
        f"<p class=muted>{esc(reply.get('totalLines'))} lines (redacted as memory_get serves them)</p>"
        f"<table class=file>{''.join(rows)}</table>"
    )
    return layout(str(reply.get("path")), body, nav=nav(agent, csrf))


def saved(agent: str, reply: Mapping[str, Any], csrf: str) -> str:
    link = href(f"/a/{agent}/file", path=reply.get("path"), at=reply.get("startLine"))
    body = (
        f'<h1>Saved</h1><p>Saved to <a href="{link}">{esc(reply.get("citation") or reply.get("path"))}</a>.</p>'
        f'<p><a href="{href(f"/a/{agent}")}">Back to {esc(agent)}</a></p>'
    )
    return layout("Saved", body, nav=nav(agent, csrf))
