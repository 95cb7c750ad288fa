"""Reading what the `qmd` CLI prints: search hits, collection listings, versions, and its error messages.

QMD's output differs between versions (`collection list --json` prints a table in some; native
libraries may print warnings onto stdout before the JSON), so every parser here accepts the known
variants and says plainly when output is unreadable. All functions are pure.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

import orjson

from memoryd.qmd.errors import QmdOutputError

_SNIPPET_HEADER = re.compile(r"@@\s*-(\d+),(\d+)")
_SNIPPET_HEADER_LINE = re.compile(r"^\s*@@[^\n]*@@[^\n]*(?:\n|$)")
_NO_RESULTS = re.compile(r"^(?:\[[^\]]+\]\s*)?(?:(?:warn(?:ing)?|info|error|qmd)\s*:\s*)*no results found\.?$")
_LISTED_NAME = re.compile(r"^\s*([a-z0-9._-]+)\s+\(qmd://[^)]*\)\s*$", re.IGNORECASE)
_BARE_NAME = re.compile(r"^\s*([a-z0-9._-]+)\s*$", re.IGNORECASE)
_FIELD = re.compile(r"^\s*(path|pattern|mask|collection)\s*:\s*(.+?)\s*$", re.IGNORECASE)
_VERSION = re.compile(r"\b(\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?)\b")
_VECTORS = re.compile(r"^\s*Vectors(?:\s*[:=]\s*|\s+)(\d+)\b", re.IGNORECASE)
_STDERR_SUMMARY_CHARS = 300
_NOISE_LINE = re.compile(r"^(?:at\s|\^+$|Node\.js v|\}$|code:|[{}]$)")
_ERROR_WORDS = re.compile(r"error|fatal|exception|not found|denied|unknown|invalid|cannot|failed", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class QmdHit:
    """One search hit as QMD reports it; `path` is relative to the collection's folder."""

    docid: str
    score: float
    collection: str
    path: str
    snippet: str
    start_line: int | None = None
    end_line: int | None = None
    line: int | None = None


@dataclass(frozen=True, slots=True)
class ListedCollection:
    """What `qmd collection list/show` says about a collection (either field may be unknown)."""

    path: str | None = None
    pattern: str | None = None


def summarise(text: str, limit: int = _STDERR_SUMMARY_CHARS) -> str:
    """The last `limit` characters of a (stderr) text on one line: the end of a failure says why."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else "…" + flat[-(limit - 1) :]


def error_summary(text: str, limit: int = _STDERR_SUMMARY_CHARS) -> str:
    """The line of a failure's output that says what went wrong, not the stack trace after it."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    meaningful = [line for line in lines if not _NOISE_LINE.match(line)]
    chosen = next((line for line in meaningful if _ERROR_WORDS.search(line)), meaningful[-1] if meaningful else "")
    return summarise(chosen, limit)


def parse_file_uri(value: str) -> tuple[str, str] | None:
    """`qmd://<collection>/<path>` -> (collection, path); None for anything else."""
    if not value.lower().startswith("qmd://"):
        return None
    parts = urlsplit(value)
    collection = unquote(parts.netloc).strip()
    path = unquote(parts.path).lstrip("/").strip()
    if not collection or not path:
        return None
    return collection, path


def _line(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if value > 0 else None


def _hit(record: dict[str, object], default_collection: str) -> QmdHit | None:
    docid = record.get("docid")
    docid_text = docid.strip().lstrip("#") if isinstance(docid, str) else ""
    raw_score = record.get("score")
    score = float(raw_score) if isinstance(raw_score, int | float) and not isinstance(raw_score, bool) else 0.0
    if not math.isfinite(score):
        score = 0.0
    collection = record.get("collection") if isinstance(record.get("collection"), str) else None
    path = ""
    file = record.get("file")
    if isinstance(file, str):
        uri = parse_file_uri(file)
        if uri is not None:
            collection, path = collection or uri[0], uri[1]
        else:
            path = file.strip()
    snippet = record.get("snippet")
    collection_name = str(collection or default_collection)
    if not docid_text and not (collection_name and path):
        return None
    return QmdHit(
        docid=docid_text,
        score=score,
        collection=collection_name,
        path=path,
        snippet=snippet if isinstance(snippet, str) else "",
        start_line=_line(record.get("start_line", record.get("startLine"))),
        end_line=_line(record.get("end_line", record.get("endLine"))),
        line=_line(record.get("line")),
    )


def _as_hits(payload: object, default_collection: str) -> list[QmdHit] | None:
    if not isinstance(payload, list) or not all(isinstance(item, dict) for item in payload):
        return None
    hits = (_hit(item, default_collection) for item in payload)
    return [h for h in hits if h is not None]


def _first_result_array(text: str) -> object:
    """The first JSON array that starts a line and parses: QMD prints its results on their own lines."""
    for match in re.finditer(r"(?m)^[ \t]*\[", text):
        start = match.end() - 1
        depth, in_string, escaped = 0, False, False
        for i in range(start, len(text)):
            char = text[i]
            if in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char == "[":
                depth += 1
            elif char == "]":
                depth -= 1
                if depth == 0:
                    try:
                        candidate = orjson.loads(text[start : i + 1])
                    except orjson.JSONDecodeError:
                        break
                    if isinstance(candidate, list):
                        return candidate
                    break
    return None


def _says_no_results(text: str) -> bool:
    lines = (" ".join(line.lower().split()) for line in text.splitlines())
    return any(_NO_RESULTS.match(line) for line in lines if line)


def parse_search_output(
    stdout: str, stderr: str = "", *, collection: str = "", command: str = "search"
) -> list[QmdHit]:
    """Hits from `qmd search|vsearch|query --json`; noise around the array and "No results found" are fine.

    Errors name the command that printed the output (`qmd query returned invalid JSON`), so a log line
    says which search mode misbehaved.
    """
    out = stdout.strip()
    if not out:
        if stderr.strip() and _says_no_results(stderr):
            return []
        detail = f" (stderr: {summarise(stderr)})" if stderr.strip() else ""
        raise QmdOutputError(f"qmd {command} returned no JSON on stdout{detail}")
    try:
        payload: object = orjson.loads(out)
    except orjson.JSONDecodeError:
        payload = _first_result_array(out)
        if payload is None:
            if _says_no_results(out):
                return []
            raise QmdOutputError(f"qmd {command} returned invalid JSON: {summarise(out, 120)}") from None
    hits = _as_hits(payload, collection)
    if hits is None:
        raise QmdOutputError(f"qmd {command} JSON is not a list of results: {summarise(out, 120)}")
    return hits


def parse_collection_list(text: str) -> dict[str, ListedCollection]:
    """Collections from `qmd collection list [--json]`: a JSON list (of names or objects) or the table."""
    out = text.strip()
    if not out:
        return {}
    try:
        payload = orjson.loads(out)
    except orjson.JSONDecodeError:
        payload = None
    if isinstance(payload, list):
        listed: dict[str, ListedCollection] = {}
        for entry in payload:
            if isinstance(entry, str):
                listed[entry] = ListedCollection()
            elif isinstance(entry, dict) and isinstance(entry.get("name"), str):
                path = entry.get("path")
                pattern = entry.get("pattern", entry.get("mask"))
                listed[entry["name"]] = ListedCollection(
                    path if isinstance(path, str) else None, pattern if isinstance(pattern, str) else None
                )
        return listed
    return _parse_table(out)


def _parse_table(text: str) -> dict[str, ListedCollection]:
    listed: dict[str, ListedCollection] = {}
    current: str | None = None
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip():
            current = None
            continue
        named = _LISTED_NAME.match(line)
        if named is None and ":" not in line and not line.strip().lower().startswith("collections"):
            named = _BARE_NAME.match(line)
        if named is not None:
            current = named.group(1)
            listed.setdefault(current, ListedCollection())
            continue
        field_match = _FIELD.match(line)
        if field_match is None:
            continue
        key, value = field_match.group(1).lower(), field_match.group(2)
        if key == "collection":
            current = value
            listed.setdefault(current, ListedCollection())
        elif current is not None:
            known = listed[current]
            if key == "path":
                listed[current] = ListedCollection(value, known.pattern)
            else:
                listed[current] = ListedCollection(known.path, value)
    return listed


def parse_collection_show(text: str) -> ListedCollection:
    """`qmd collection show <name>`: `Path:` and `Pattern:` lines."""
    path = pattern = None
    for line in text.splitlines():
        match = _FIELD.match(line)
        if match is None:
            continue
        key = match.group(1).lower()
        if key == "path":
            path = match.group(2)
        elif key in ("pattern", "mask"):
            pattern = match.group(2)
    return ListedCollection(path, pattern)


def parse_version(text: str) -> str | None:
    """`qmd 2.8.3 (facd35e)` -> `2.8.3`."""
    match = _VERSION.search(text)
    return match.group(1) if match else None


def parse_vector_count(text: str) -> int | None:
    """The `Vectors: N embedded` line of `qmd status`."""
    for line in text.splitlines():
        match = _VECTORS.match(line)
        if match:
            return int(match.group(1))
    return None


def snippet_header_lines(snippet: str) -> tuple[int, int] | None:
    """Lines from a diff-style `@@ -start,count @@` header: (start, start + count - 1)."""
    match = _SNIPPET_HEADER.search(snippet)
    if match is None:
        return None
    start, count = int(match.group(1)), int(match.group(2))
    if start < 1:
        return None
    return start, start + max(1, count) - 1


def strip_snippet_header(snippet: str) -> str:
    """The snippet without its leading `@@ … @@ (n before, m after)` line: a model needs only the text."""
    return _SNIPPET_HEADER_LINE.sub("", snippet, count=1)


# ---------------------------------------------------------------- classifying error messages


def is_unsupported_option(message: str) -> bool:
    lower = message.lower()
    return any(
        marker in lower
        for marker in (
            "unknown flag",
            "unknown option",
            "unrecognized option",
            "flag provided but not defined",
            "unexpected argument",
        )
    )


def is_missing_collection(message: str) -> bool:
    lower = message.lower()
    return "collection" in lower and any(m in lower for m in ("not found", "does not exist", "missing"))


def is_already_exists(message: str) -> bool:
    return "already exists" in message.lower()


def is_busy(message: str) -> bool:
    lower = message.lower()
    return "sqlite_busy" in lower or "database is locked" in lower


def needs_collection_rebuild(message: str) -> bool:
    """The two update failures OpenClaw repairs by re-creating the collections once."""
    lower = message.lower()
    null_byte = re.search(r"\^@|\\0|\\x00|\\u0000|null\s*byte|nul\s*byte", message, re.IGNORECASE) is not None
    path_error = any(m in lower for m in ("enotdir", "not a directory", "enoent", "no such file"))
    duplicate = "unique constraint failed" in lower and "documents.collection" in lower and "documents.path" in lower
    return (null_byte and path_error) or duplicate
