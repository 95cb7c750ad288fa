"""How a query's words are found in a chunk's text, shared by the keyword leg's coverage and the snippet window.

Folding matches unicode61's `remove_diacritics` (so a word FTS5 matched is found here too), stems are a
light suffix strip for spaced scripts, and a match must start a word and end on a common ending, so
"item5" does not match "item50" and "meet" matches "meetings". CJK is matched anywhere.
"""

from __future__ import annotations

import re
import unicodedata

from memoryd.store.ngrams import has_cjk

_ENDINGS = frozenset({"", "s", "es", "ed", "d", "e", "er", "ers", "ing", "ings", "ies", "y", "ly"})
"""What may follow a stem inside a word."""
_SUFFIXES = ("ing", "ies", "es", "ed", "s")
_COMBINING_RE = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f\u064b-\u065f]")


def fold(text: str) -> str:
    """Lowercase without diacritics, as unicode61 remove_diacritics folds it."""
    lower = text.lower()
    if lower.isascii():
        return lower
    return _COMBINING_RE.sub("", unicodedata.normalize("NFKD", lower))


def stem(unit: str) -> str:
    """What a query unit is looked for as: folded, and for spaced scripts lightly stemmed
    ("meetings" finds "meeting", "hiking" finds "hik…")."""
    folded = fold(unit)
    if has_cjk(folded):
        return folded
    for suffix in _SUFFIXES:
        if len(folded) - len(suffix) >= 4 and folded.endswith(suffix):
            return folded[: -len(suffix)]
    return folded


def starts_word(text: str, index: int) -> bool:
    """Whether `index` starts a word: the previous character is not a letter or digit of a spaced
    script (CJK characters count as boundaries: "API" starts a word in "和API接口")."""
    if index == 0:
        return True
    before = text[index - 1]
    return not (before.isalnum() or before == "_") or has_cjk(before)


def first_occurrence(text: str, word_stem: str) -> int:
    """Where `word_stem` first occurs in the folded `text` as a word (or with a common ending), else -1.

    str.find, then boundary checks: a regex with a leading lookbehind cannot skip ahead and was 20x
    slower here."""
    cjk = has_cjk(word_stem)
    index = text.find(word_stem)
    while index >= 0:
        if cjk:
            return index
        end = index + len(word_stem)
        rest = end
        while rest < len(text) and (text[rest].isalnum() or text[rest] == "_") and not has_cjk(text[rest]):
            rest += 1
        if starts_word(text, index) and text[end:rest] in _ENDINGS:
            return index
        index = text.find(word_stem, index + 1)
    return -1


def contains(text: str, word_stem: str) -> bool:
    """`word_stem` as a word of the folded `text`, or as a word with a common ending; CJK: anywhere."""
    return first_occurrence(text, word_stem) >= 0
