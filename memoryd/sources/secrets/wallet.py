"""Wallet secrets: raw hex private keys beside their name, and BIP-39 seed phrases.

* A 64-digit hex private key (secp256k1 / ed25519, as Ethereum and most wallets export it), with or
  without `0x`, right after a name for it: "private key: 4c08…", "eth private key 0x4c08…", "the
  signing key for the hot wallet is …". Bare 64-digit hex stays: digests and SHAs are written so.
* A BIP-39 mnemonic: at least 12 consecutive words of the BIP-39 English list (12, 15, 18, 21 or 24
  in a real one), one after another in any case, separated by spaces, commas, quotes or new lines,
  and optionally numbered ("1. garden 2. forest …"). The list (`bip39_english.txt`, 2048 words) is
  the one BIP-39 specifies (github.com/bitcoin/bips, bip-0039/english.txt, SHA-256
  2f5eed53a4727b4bf8880d8f3f199efc90e58503646d9ff8eff3a2ed3b24dbda), taken from the `mnemonic`
  package (python-mnemonic 0.21, MIT), which ships it unchanged. The words are common English ones,
  but not most of the little words prose is glued with (the, and, of, to, is, a, it, in, for, was,
  with, on, be, are, …; "that" and "you" are listed): twelve of them in a row does not happen in
  ordinary sentences (the redaction benchmark's corpus has none); a bare list of twelve such words
  (a shopping list of "apple, lemon, sugar, …") is masked like a phrase. The checksum a real mnemonic
  carries is not checked: one copied with a word swapped for another of the list is still masked. A
  seed phrase is masked whole: keeping its first letters would name its first word.
"""

from __future__ import annotations

import functools
import importlib.resources
import itertools
import re
from collections.abc import Iterator

from memoryd.sources.secrets.engine import Detector, Hit, Text

SEED_MIN_WORDS = 12
"""The shortest mnemonic BIP-39 defines (128 bits of entropy)."""

_KEY_NAME = r"(?<![A-Za-z0-9])(?:private|priv|secret|signing|wallet)[ \t_\-]?key"
_FOR = r"(?:[ \t]+(?:for|of|to|on)[ \t]+[^\s:=\"'`]{1,30}(?:[ \t]+[^\s:=\"'`]{1,30}){0,2}?)?"
_SAID = r"[ \t]*(?:(?:is|was|:|=|->|=>)[ \t]*)?(?:\(hex\)[ \t]*)?[\"'`]?[ \t]*"
_HEX_KEY = re.compile(
    rf"{_KEY_NAME}s?{_FOR}{_SAID}(?P<v>(?<![0-9a-fA-F])(?:0x)?[0-9a-fA-F]{{64}})(?![0-9a-fA-F])",
    re.ASCII | re.IGNORECASE,
)

_SEED_WORD = re.compile(r"[A-Za-z]{3,8}", re.ASCII)
_SEP = r"[ \t\r\n,;\"'`\[\]]"
_GAP = re.compile(rf"{_SEP}+(?:\d{{1,2}}[.):]?{_SEP}+)?", re.ASCII)
"""What may stand between two words of a phrase: separators, and the number of the next word."""


@functools.cache
def bip39_words() -> frozenset[str]:
    """The 2048 words of BIP-39's English list (read once, on first use)."""
    text = importlib.resources.files(__package__).joinpath("bip39_english.txt").read_text(encoding="ascii")
    return frozenset(text.split())


_LISTED, _NUMBER = 1, 2


@functools.cache
def _tokens() -> dict[bytes, int]:
    """Lower-case words of the list, and the numbers that may stand between them ("1.", "12)")."""
    numbers = {f"{n}{mark}".encode(): _NUMBER for n in range(1, 25) for mark in ("", ".", ")", ":")}
    return numbers | {word.encode(): _LISTED for word in bip39_words()}


_SEPARATORS = bytes.maketrans(b"\t\r\n,;\"'`[]", b" " * 10)
_TWELVE = re.compile(rb"\x01(?:\x02*\x01){%d}" % (SEED_MIN_WORDS - 1))
_SHORTEST = SEED_MIN_WORDS * 4 - 1  # twelve three-letter words and the spaces between them


def _may_hold_phrase(lowered: str) -> bool:
    """Whether 12 list words stand in a row, separators and numbers aside. Every step runs in C (split,
    a dictionary lookup per word through `map`, a regex over one byte per word), so ordinary text costs
    little; `_RUN` then finds where, in the rare text that passes."""
    if len(lowered) < _SHORTEST:
        return False
    words = lowered.encode("utf-8", "surrogatepass").translate(_SEPARATORS).split()
    marks = bytes(map(_tokens().get, words, itertools.repeat(0)))
    return _TWELVE.search(marks) is not None


_RUN = re.compile(
    rf"(?<![A-Za-z0-9])(?:[A-Za-z]{{3,8}}{_GAP.pattern}){{{SEED_MIN_WORDS - 1},}}[A-Za-z]{{3,8}}(?![A-Za-z0-9])",
    re.ASCII,
)
"""Twelve or more words of a list word's length in a row: the only places a phrase can be (found by the
regex engine, so ordinary text costs one pass in C; the words are looked up only there)."""


def _find_hex_keys(scan: Text) -> Iterator[Hit]:
    for match in _HEX_KEY.finditer(scan.text):
        yield match.start("v"), match.end("v"), "hex-private-key"


def _find_seed_phrases(scan: Text) -> Iterator[Hit]:
    if not _may_hold_phrase(scan.lowered):
        return
    text = scan.text
    for run in _RUN.finditer(text):
        yield from _phrases_in(text, run.start(), run.end())


def _phrases_in(text: str, begin: int, stop: int) -> Iterator[Hit]:
    words = bip39_words()
    first = last = -1
    count = 0
    for match in _SEED_WORD.finditer(text, begin, stop):
        start, end = match.span()
        listed = match.group(0).lower() in words
        if listed and count and _GAP.fullmatch(text, last, start):
            count += 1
            last = end
            continue
        if count >= SEED_MIN_WORDS:
            yield first, last, "seed-phrase"
        first, last, count = (start, end, 1) if listed else (-1, -1, 0)
    if count >= SEED_MIN_WORDS:
        yield first, last, "seed-phrase"


def wallet_detectors(rank: int) -> list[Detector]:
    return [
        Detector(("priv", "secret", "signing", "wallet"), _find_hex_keys, rank),
        Detector((), _find_seed_phrases, rank),
    ]
