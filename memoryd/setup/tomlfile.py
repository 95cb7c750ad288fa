"""Small, checked edits of TOML files: Codex's `[mcp_servers.<name>]`, memoryd's `[agents.<id>] sessions`.

No TOML writer is needed for two small tables (and none ships with Python), so the edit is made on
the text: the table's lines are replaced (from its header to the next table header, keeping comments
and blank lines that close the region), or the table is appended. Comments and layout elsewhere stay
exactly as they were. Every edit is checked by parsing before and after with `tomllib`: the result must
hold exactly the old data with only the edited key changed. A file laid out in a way the text edit
does not cover (the table written inline, with dotted keys, or an array over several lines) fails that
check, and is refused with what to add by hand, never half-edited.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memoryd.errors import ConfigError

_HEADER = re.compile(r"^\s*\[")


def _key(part: str) -> str:
    return part if re.fullmatch(r"[A-Za-z0-9_-]+", part) else json.dumps(part)


def _header_re(parts: Sequence[str]) -> re.Pattern[str]:
    pieces = [f"(?:{re.escape(p)}|{re.escape(json.dumps(p))}|{re.escape(repr(p))})" for p in parts]
    return re.compile(r"^\s*\[\s*" + r"\s*\.\s*".join(pieces) + r"\s*\]\s*(?:#.*)?$")


def _parse(text: str, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), f"not valid TOML ({exc}); left untouched") from None


def _table_span(lines: list[str], parts: Sequence[str]) -> tuple[int, int] | None:
    """[start, end) of the table's own lines (header included), or None when it has no header."""
    header = _header_re(parts)
    for start, line in enumerate(lines):
        if header.match(line):
            end = start + 1
            while end < len(lines) and not _HEADER.match(lines[end]):
                end += 1
            while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
                end -= 1  # blank lines and comments before the next table belong to it
            return start, end
    return None


def _checked(old: str, new: str, path: Path, expect: Callable[[dict[str, Any]], dict[str, Any]], by_hand: str) -> str:
    before = _parse(old, path)
    try:
        after = tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        after = None
    if after != expect(copy.deepcopy(before)):
        raise ConfigError(
            str(path), f"its layout is not one memoryd edits safely; left untouched. Add this by hand:\n{by_hand}"
        )
    return new


def set_table(text: str, path: Path, parts: Sequence[str], body: str) -> str:
    """`text` with the table `parts` (e.g. mcp_servers, memory) holding exactly the keys of `body`."""
    header = "[" + ".".join(_key(p) for p in parts) + "]"
    table = f"{header}\n{body}"
    lines = text.split("\n")
    span = _table_span(lines, parts)
    if span is None:
        new = (text.rstrip("\n") + "\n\n" if text.strip() else "") + table
    else:
        start, end = span
        new = "\n".join([*lines[:start], *table.rstrip("\n").split("\n"), *lines[end:]])
        if not new.endswith("\n"):
            new += "\n"
    wanted = tomllib.loads(table)

    def expect(data: dict[str, Any]) -> dict[str, Any]:
        node = data
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        old = node.get(parts[-1], {})
        subtables = {k: v for k, v in old.items() if isinstance(v, dict)} if isinstance(old, dict) else {}
        leaf: Any = wanted
        for part in parts:
            leaf = leaf[part]
        node[parts[-1]] = {**leaf, **subtables}  # its own [a.b.c] subtables stay
        return data

    return _checked(text, new, path, expect, table)


def add_to_list(text: str, path: Path, parts: Sequence[str], key: str, value: str) -> str:
    """`text` with `value` in the string list `key` of table `parts` (created, or appended to)."""
    data = _parse(text, path)
    node: Any = data
    for part in parts:
        node = node.get(part, {}) if isinstance(node, dict) else {}
    current = node.get(key, []) if isinstance(node, dict) else []
    if not isinstance(current, list) or not all(isinstance(v, str) for v in current):
        raise ConfigError(str(path), f"{'.'.join([*parts, key])} is not a list of strings; left untouched")
    if value in current:
        return text
    merged = [*current, value]
    line = f"{key} = [{', '.join(json.dumps(v) for v in merged)}]"
    header = "[" + ".".join(_key(p) for p in parts) + "]"
    lines = text.split("\n")
    span = _table_span(lines, parts)
    if span is None:
        new = (text.rstrip("\n") + "\n\n" if text.strip() else "") + f"{header}\n{line}\n"
    else:
        start, end = span
        own = re.compile(rf"^\s*{re.escape(_key(key))}\s*=")
        at = next((i for i in range(start + 1, end) if own.match(lines[i])), None)
        if at is None:
            lines.insert(start + 1, line)
        else:
            lines[at] = line
        new = "\n".join(lines)

    def expect(before: dict[str, Any]) -> dict[str, Any]:
        node = before
        for part in parts:
            node = node.setdefault(part, {})
        node[key] = merged
        return before

    return _checked(text, new, path, expect, f"{header}\n{line}")
