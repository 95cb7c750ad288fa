"""JSON printed the same way by every command."""

from __future__ import annotations

import orjson


def dump(obj: object) -> str:
    """`obj` as indented JSON (no trailing newline)."""
    return orjson.dumps(obj, option=orjson.OPT_INDENT_2).decode()
