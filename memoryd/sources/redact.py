"""Mask secrets in transcript text before it is indexed (spec §3.6 "Redaction", mask rule §1).

The patterns are OpenClaw's default list, all case-insensitive, in its order except that PEM blocks
come first: ENV-style assignments, JSON fields, CLI flags, `Authorization: Bearer`, bare `Bearer`
tokens, (PEM private keys,) well-known token prefixes and Telegram bot tokens. A match's secret is its
last non-empty capture group (or the whole match); it becomes `***` when shorter than 18 characters,
else its first 6 and last 4 characters around `…`. A PEM block keeps only its first and last lines
(so a block collapsed onto one line becomes `***`).

Where this differs from OpenClaw, it is on purpose and only ever masks more:

* The whole text is scanned. OpenClaw cuts texts over 32768 UTF-16 units into 16384-unit slices
  and misses any secret that straddles a slice edge.
* A quoted ENV or CLI value whose closing quote is missing or different is still masked (OpenClaw
  requires the same closing quote and otherwise leaves the value alone).
* PEM blocks are masked first. In OpenClaw's order the ENV pattern runs earlier and, given
  `private_key: -----BEGIN RSA PRIVATE KEY----- MIIE…`, masks only `-----BEGIN`, after which the
  PEM pattern no longer matches and the key's body is indexed in the clear.
* The secret is replaced where it was matched; OpenClaw replaces its first occurrence in the match,
  which is the wrong place when the key name contains the value.

`\\b`, `\\d` and case folding are ASCII-only and `\\s` is JavaScript's whitespace set, as in OpenClaw's
regexes. No pattern backtracks more than linearly, and PEM blocks are found by a two-step scan
rather than a lazy `[\\s\\S]+?` (which is quadratic on text full of unterminated BEGIN lines).
"""

from __future__ import annotations

import re
from typing import TypeAlias

MASK = "***"
MASK_MIN_LENGTH = 18
MASK_KEEP_START = 6
MASK_KEEP_END = 4

# The characters of JavaScript's `\s` (ECMAScript WhiteSpace and LineTerminator).
JS_WHITESPACE = "".join(
    ["\t\n\v\f\r \u00a0\u1680", *map(chr, range(0x2000, 0x200B)), "\u2028\u2029\u202f\u205f\u3000\ufeff"]
)
_S = f"[{JS_WHITESPACE}]"
_FLAGS = re.IGNORECASE | re.ASCII

_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----", _FLAGS)
_PEM_END = re.compile(r"-----END [A-Z ]*PRIVATE KEY-----", _FLAGS)
_PEM_MARKER = "PRIVATE KEY-----"
_LINE_BREAK = re.compile(r"\r?\n")


def _compile(source: str) -> re.Pattern[str]:
    return re.compile(source, _FLAGS)


# (needles, pattern): a pattern runs only when its lower-cased text contains one of the needles,
# which every match must contain; that keeps ordinary messages to a handful of substring tests.
_KEY_WORDS = ("key", "token", "secret", "passw")
_PatternList: TypeAlias = tuple[tuple[tuple[str, ...], re.Pattern[str]], ...]
_ASSIGNMENT_PATTERNS: _PatternList = (
    # 1. ENV-style `SOME_API_KEY = value` / `password: "value"`. OpenClaw's pattern starts with
    #    `\b[A-Z0-9_]*`, which any word ending in the keyword satisfies; leaving it out finds the
    #    same values without trying every word start.
    (
        _KEY_WORDS,
        _compile(
            rf"(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD)\b{_S}*[=:]{_S}*"
            rf"([\"']?)([^{JS_WHITESPACE}\"'\\]+)(?:\1)?"
        ),
    ),
    # 2. JSON fields.
    (
        _KEY_WORDS,
        _compile(rf"\"(?:apiKey|token|secret|password|passwd|accessToken|refreshToken)\"{_S}*:{_S}*\"([^\"]+)\""),
    ),
    # 3. CLI flags followed by their value.
    (
        ("--",),
        _compile(
            rf"--(?:api[-_]?key|hook[-_]?token|token|secret|password|passwd){_S}+"
            rf"([\"']?)([^{JS_WHITESPACE}\"']+)(?:\1)?"
        ),
    ),
    # 4. Authorization headers.
    (("authorization",), _compile(rf"Authorization{_S}*[:=]{_S}*Bearer{_S}+([A-Za-z0-9._\-+=]+)")),
    # 5. Bare bearer tokens.
    (("bearer",), _compile(rf"\bBearer{_S}+([A-Za-z0-9._\-+=]{{18,}})\b")),
)
_TOKEN_PATTERNS: _PatternList = (
    # 7. Well-known token prefixes.
    (("sk-",), _compile(r"\b(sk-[A-Za-z0-9_-]{8,})\b")),
    (("ghp_",), _compile(r"\b(ghp_[A-Za-z0-9]{20,})\b")),
    (("github_pat_",), _compile(r"\b(github_pat_[A-Za-z0-9_]{20,})\b")),
    (("xox",), _compile(r"\b(xox[baprs]-[A-Za-z0-9-]{10,})\b")),
    (("xapp-",), _compile(r"\b(xapp-[A-Za-z0-9-]{10,})\b")),
    (("gsk_",), _compile(r"\b(gsk_[A-Za-z0-9_-]{10,})\b")),
    (("aiza",), _compile(r"\b(AIza[0-9A-Za-z_-]{20,})\b")),
    (("pplx-",), _compile(r"\b(pplx-[A-Za-z0-9_-]{10,})\b")),
    (("npm_",), _compile(r"\b(npm_[A-Za-z0-9]{10,})\b")),
    # 8. Telegram bot tokens, in a Bot API URL (`/bot<digits>:<secret>/`) and bare.
    (("bot",), _compile(r"\bbot(\d{6,}:[A-Za-z0-9_-]{20,})\b")),
    ((":",), _compile(r"\b(\d{6,}:[A-Za-z0-9_-]{20,})\b")),
)
_PEM_NEEDLE = _PEM_MARKER.lower()
_ALL_NEEDLES = tuple(
    dict.fromkeys(
        [*(n for needles, _ in _ASSIGNMENT_PATTERNS for n in needles), _PEM_NEEDLE]
        + [n for needles, _ in _TOKEN_PATTERNS for n in needles]
    )
)


def mask_token(token: str) -> str:
    """The §1 mask: `***` for short tokens, else the first 6 and last 4 characters around `…`."""
    if token == MASK or len(token) < MASK_MIN_LENGTH:
        return MASK
    return f"{token[:MASK_KEEP_START]}…{token[-MASK_KEEP_END:]}"


def _redact_pem(block: str) -> str:
    lines = [line for line in _LINE_BREAK.split(block) if line]
    if len(lines) < 2:
        return MASK
    return f"{lines[0]}\n…redacted…\n{lines[-1]}"


def _redact_match(match: re.Match[str]) -> str:
    whole = match.group(0)
    if _PEM_MARKER in whole:
        return _redact_pem(whole)
    for index in range(match.re.groups, 0, -1):
        secret = match.group(index)
        if secret:
            base = match.start()
            start, end = match.span(index)
            return f"{whole[: start - base]}{mask_token(secret)}{whole[end - base :]}"
    return mask_token(whole)


def _redact_pem_blocks(text: str) -> str:
    """Replace every BEGIN…END PRIVATE KEY block, in one left-to-right pass."""
    parts: list[str] = []
    position = 0
    while (begin := _PEM_BEGIN.search(text, position)) is not None:
        # The block's body holds at least one character; if no END follows this BEGIN, none
        # follows any later BEGIN either, so the scan can stop.
        end = _PEM_END.search(text, begin.end() + 1)
        if end is None:
            break
        parts.append(text[position : begin.start()])
        parts.append(_redact_pem(text[begin.start() : end.end()]))
        position = end.end()
    if not parts:
        return text
    parts.append(text[position:])
    return "".join(parts)


def _apply(text: str, patterns: _PatternList, present: set[str]) -> str:
    for needles, pattern in patterns:
        if not present.isdisjoint(needles):
            text = pattern.sub(_redact_match, text)
    return text


def redact(text: str) -> str:
    """`text` with every secret of the default pattern list masked (the rest left as it was)."""
    # Needles are looked up once: a mask only keeps characters that were next to each other
    # already and adds none of a needle's characters, so masking never creates a needle.
    lowered = text.lower()
    present = {needle for needle in _ALL_NEEDLES if needle in lowered}
    if not present:
        return text
    if _PEM_NEEDLE in present:
        text = _redact_pem_blocks(text)
    text = _apply(text, _ASSIGNMENT_PATTERNS, present)
    return _apply(text, _TOKEN_PATTERNS, present)
