"""Private key blocks: PEM (RSA, EC, DSA, OpenSSH, PKCS#8, encrypted), PGP and PuTTY keys.

Covers gitleaks:private-key and detect-secrets:PrivateKeyDetector, and goes further: the body is masked
when the END line is missing (a key pasted half), when the block is split over lines, quoted string
pieces or `\\n` escapes (a key inside JSON or code), and when it was collapsed onto one line by the
transcript whitespace normalisation. The BEGIN and END lines stay: they say what was there.

The scan is linear: each BEGIN line is found once, and the body is a run of base64 material (with the
separators above and the header lines of encrypted PEM) that stops at the END line or at the first
piece of ordinary text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memoryd.sources.secrets.engine import Detector, Hit, Text

_BEGIN = re.compile(r"-{3,}\s*BEGIN[ A-Z0-9_\-]{0,60}?PRIVATE KEY(?: BLOCK)?\s*-{3,}", re.ASCII | re.IGNORECASE)
# One piece of a key body: a base64 run, a separator between runs (whitespace, `\n` escapes, quote
# and concatenation marks of code), or an RFC 1421 header line (`Proc-Type: 4,ENCRYPTED`).
_BODY_PIECE = re.compile(
    r"""(?:[A-Za-z0-9+/=]+|\s+|\\[nr]|["'`,+|>#;]|(?:Proc-Type|DEK-Info|Comment|Version|Hash|Charset)
    :[^\n\\]*)""",
    re.ASCII | re.VERBOSE,
)
_END = re.compile(r"-{3,}\s*END[ A-Z0-9_\-]{0,60}?(?:PRIVATE )?KEY(?: BLOCK)?\s*-{3,}", re.ASCII | re.IGNORECASE)
_WORD = re.compile(r"[A-Z]?[a-z]{1,11}", re.ASCII)
_TRIM = " \t\r\n\"'`,+|>#;\\"
# PuTTY private key files: the lines after `Private-Lines: N` (PuTTY's own .ppk format).
_PUTTY = re.compile(r"Private-Lines:\s*\d+\s*((?:[A-Za-z0-9+/=]+\s*)+)", re.ASCII)


def _unterminated_end(text: str, position: int) -> int:
    """Where a key body without an END line ends: the last base64 piece before anything that is
    not part of a key (punctuation of prose, or a word: key lines are long and mixed case)."""
    last = position
    while position < len(text):
        piece = _BODY_PIECE.match(text, position)
        if piece is None:
            break
        token = piece.group(0)
        if _WORD.fullmatch(token) and position > last:
            break
        position = piece.end()
        if token.strip(_TRIM):
            last = position
    return last


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    """The body without the separators around it, so the BEGIN and END lines keep their layout."""
    while start < end and (text[start] in _TRIM or text.startswith(("\\n", "\\r"), start)):
        start += 2 if text[start] == "\\" and start + 1 < end and text[start + 1] in "nr" else 1
    while start < end and (text[end - 1] in _TRIM or (end - start >= 2 and text[end - 2 : end] in ("\\n", "\\r"))):
        end -= 2 if text[end - 2 : end] in ("\\n", "\\r") else 1
    return start, end


def find_private_keys(scan: Text) -> Iterator[Hit]:
    text = scan.text
    position = 0
    end_missing = False  # once no END line follows a BEGIN, none follows a later one either
    while (begin := _BEGIN.search(text, position)) is not None:
        end = None if end_missing else _END.search(text, begin.end())
        if end is None:
            end_missing = True
            stop = after = _unterminated_end(text, begin.end())
        else:
            stop, after = end.start(), end.end()
        start, stop = _trim(text, begin.end(), stop)
        if start < stop:
            yield start, stop, "private-key"
        position = max(after, begin.end())
    for match in _PUTTY.finditer(text):
        yield match.start(1), match.end(1), "private-key"


def private_key_detector(rank: int) -> Detector:
    return Detector(("private key", "private-lines"), find_private_keys, rank)
