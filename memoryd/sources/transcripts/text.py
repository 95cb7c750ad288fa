"""Message text as every adapter renders it: whitespace collapsed the way JavaScript's `\\s` sees it."""

from __future__ import annotations

import re
from collections.abc import Iterable

from memoryd.sources.redact import JS_WHITESPACE

# Whitespace runs other than a lone space (those need no rewriting, and are most of them).
_WHITESPACE_RUN = re.compile(f" [{JS_WHITESPACE}]+|[{JS_WHITESPACE.replace(' ', '')}][{JS_WHITESPACE}]*")
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def normalize(text: str) -> str:
    """Collapse every whitespace run (JavaScript's set) to one space and trim."""
    return _WHITESPACE_RUN.sub(" ", text).strip(JS_WHITESPACE)


def joined(parts: Iterable[str]) -> str:
    """Normalised non-empty parts joined by one space (how a message of several text blocks reads)."""
    return " ".join(n for p in parts if (n := normalize(p)))
