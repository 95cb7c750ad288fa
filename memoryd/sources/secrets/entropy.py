"""Long random tokens that no other rule names (detect-secrets:Base64HighEntropyString, trufflehog's
and gitleaks' entropy thresholds): a run of base64/base64url characters, 24 or more, that reads as
machine-made noise.

Ordinary long tokens are told apart from secrets by what they are, not only by their entropy:

* hexadecimal runs (git SHAs, sha256/md5 digests, UUIDs, hex ids) are never flagged: too much of
  ordinary text is made of them; hex keys are caught by their key name or provider format instead;
* identifiers and paths (`AbstractAsyncContextManager`, `test_the_mask_keeps_four`,
  `src/memoryd/sources`) are mostly made of words: pieces whose every letter pair is common in English
  (`WORD_BIGRAMS`), or short lower-case path segments (`tqdm`, `flake8`). Random letters rarely chain
  three common pairs, so a random key is not mistaken for a name (a looser "3+ lower-case letters"
  test let 0.6% of random base64 keys through; this one ~0.007%);
* base64 that decodes to text or to a known file type (PNG, JPEG, GIF, PDF, gzip, zip) is data;
  `data:` URIs are skipped whole.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import math
import re
from collections import Counter
from collections.abc import Iterator

from memoryd.sources.secrets.engine import Detector, Hit, Text

MIN_LENGTH = 24
MIN_ENTROPY = 3.7
"""Bits per character (Shannon); random base64 of 24 characters has ~4.3, English words ~3.5."""
MIN_SWITCH_RATE = 0.3
"""Share of neighbouring characters of different classes (upper, lower, digit, symbol)."""

MAX_WORD_SHARE = 0.5
"""A token at least this much made of words (see `is_name`) is a name."""
_WORDISH = re.compile(r"[A-Z]?[a-z]{3,}", re.ASCII)
_SEPARATOR = re.compile(r"[/_.+\-]", re.ASCII)
_PATH_SEGMENT = re.compile(r"[a-z0-9]{2,12}", re.ASCII)
# The letter pairs covering 99% of those inside English words (3+ letters) of CPython's docstrings;
# scripts/english_bigrams.py regenerates it.
_PAIRS = (
    "abacadafagaiakalamanaparasatauavawaxayazbabcbdbebibjblbobrbsbubycacccdcechcickclcocrcsctcucydadb"
    "dddedfdgdidldmdodpdrdsdtdudyeaebecedeeefegeheielemeneoepeqereseteuevewexeyfafefffiflfofrfsftfufy"
    "gageggghgiglgmgngogrgsgtguhahehihmhohrhshthuhyiaibicidieifigikiliminioipirisitivixizjajejojukake"
    "kikmknkskxlalcldlelflglilllolplsltlulvlymambmemimlmmmnmompmsmunancndnenfngninknlnmnnnonpnsntnunv"
    "nyoaobocodoeofogoiokolomonoooporosotouovowoxpapcpdpephpiplpoppprpsptpupyqrqurarbrcrdrerfrgrirkrl"
    "rmrnrorprrrsrtrurvrwrysasbscsesfshsiskslsmsnsospsqsrssstsusytatctdtetfthtitltmtotptrtstttutvtwty"
    "uaubucudueufuguiulumunuoupurusutvavevivowawewhwiwnwowrwsxaxcxexixpxtyaycyeygyiylymynyoypyrysytyw"
    "zazezo"
)
WORD_BIGRAMS = frozenset(_PAIRS[i : i + 2] for i in range(0, len(_PAIRS), 2))
_CANDIDATE = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{24,}={0,3}", re.ASCII)
_HEX = re.compile(r"[0-9a-fA-F\-]+", re.ASCII)
_DATA_URI = re.compile(r"base64,\s*$", re.ASCII)
_FILE_MAGIC = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"%PDF", b"\x1f\x8b", b"PK\x03\x04", b"RIFF", b"<svg", b"<?xml")


def _class(c: str) -> int:
    if c.isdigit():
        return 0
    if c.isupper():
        return 1
    if c.islower():
        return 2
    return 3


def shannon(token: str) -> float:
    n = len(token)
    return -sum(k / n * math.log2(k / n) for k in Counter(token).values())


def switch_rate(token: str) -> float:
    classes = [_class(c) for c in token]
    return sum(a != b for a, b in itertools.pairwise(classes)) / max(len(token) - 1, 1)


def _decodes_to_data(token: str) -> bool:
    """Base64 of printable text or of a known file format: encoded data, not a key."""
    body = token.replace("-", "+").replace("_", "/")
    body += "=" * (-len(body) % 4)
    try:
        raw = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        return False
    if raw.startswith(_FILE_MAGIC):
        return True
    if len(raw) < 12:
        return False
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    printable = sum(c.isprintable() or c in "\n\r\t" for c in decoded)
    return printable >= 0.95 * len(decoded)


def looks_random(token: str) -> bool:
    """Whether a long token reads as machine-made noise (see the module docstring)."""
    core = token.rstrip("=")
    if len(core) < MIN_LENGTH or _HEX.fullmatch(core):
        return False
    if "/" in core and not any(looks_random_part(part) for part in core.split("/")):
        return False
    has_digit = any(c.isdigit() for c in core)
    has_upper = any(c.isupper() for c in core)
    has_lower = any(c.islower() for c in core)
    if has_digit + has_upper + has_lower < 2:
        return False
    if shannon(core) < MIN_ENTROPY or switch_rate(core) < MIN_SWITCH_RATE:
        return False
    if is_name(core):
        return False  # CamelCase, snake_case, kebab-case or a path: words, not noise
    return not _decodes_to_data(token)


def is_word(piece: str) -> bool:
    low = piece.lower()
    return all(a + b in WORD_BIGRAMS for a, b in itertools.pairwise(low))


def is_name(core: str) -> bool:
    """At least MAX_WORD_SHARE of the token (separators aside) is words or short path segments."""
    segments = [s for s in _SEPARATOR.split(core) if s]
    wordy = 0
    for segment in segments:
        if _PATH_SEGMENT.fullmatch(segment):
            wordy += len(segment)
        else:
            wordy += sum(len(w) for w in _WORDISH.findall(segment) if is_word(w))
    return wordy >= MAX_WORD_SHARE * sum(len(s) for s in segments)


def looks_random_part(part: str) -> bool:
    """A `/`-separated piece that is itself noise (base64 secrets contain `/`; paths are words)."""
    return len(part) >= 6 and switch_rate(part) >= MIN_SWITCH_RATE


def find_random_tokens(scan: Text) -> Iterator[Hit]:
    text = scan.text
    for run_start, run_end in scan.runs:
        if run_end - run_start < MIN_LENGTH:
            continue
        for match in _CANDIDATE.finditer(text, run_start, run_end):
            start, end = match.span()
            if _DATA_URI.search(text, max(0, start - 12), start):
                continue
            if looks_random(match.group(0)):
                yield start, end, "high-entropy-token"


def entropy_detector(rank: int) -> Detector:
    return Detector((), find_random_tokens, rank)
