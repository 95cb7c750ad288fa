"""CJK n-grams for the side index that lets unicode61 find Chinese, Japanese and Korean text.

unicode61 treats a run of ideographs, kana or Hangul as one token, so "方案" never matches inside
"之前讨论的方案", nor "회의" inside "회의에서", nor "API" inside "API接口". The side index stores, for
every word that contains such characters, the characters themselves, their adjacent pairs, and the
Latin or digit parts glued to them; queries are cut the same way (`query_ngrams`), so both sides
always agree.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# Kana (incl. the prolonged sound mark), CJK Extension A, CJK Unified, compatibility ideographs,
# Hangul Jamo, compatibility Jamo and syllables: scripts written without spaces between words.
CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u1100-\u11ff\u3131-\u318e\uac00-\ud7af"
_CJK_RE = re.compile(f"[{CJK_CHARS}]")
_MIXED_WORD_RE = re.compile(r"\w+")
_PART_RE = re.compile(f"[{CJK_CHARS}]+|[^{CJK_CHARS}_]+")


def has_cjk(text: str) -> bool:
    return _CJK_RE.search(text) is not None


def run_ngrams(run: str) -> Iterator[str]:
    """A CJK run's adjacent pairs, or the run itself when it is one character."""
    if len(run) == 1:
        yield run
        return
    for index in range(len(run) - 1):
        yield run[index : index + 2]


def _word_parts(word: str) -> Iterator[tuple[str, bool]]:
    for part in _PART_RE.findall(word):
        yield part, _CJK_RE.match(part) is not None


def side_document(text: str) -> str:
    """The side-index text of a chunk: unigrams and bigrams of its CJK runs and the Latin/digit parts
    of words that mix scripts, space-separated; empty when the chunk has no CJK at all."""
    if not has_cjk(text):
        return ""
    out: list[str] = []
    for match in _MIXED_WORD_RE.finditer(text):
        word = match.group()
        if not has_cjk(word):
            continue
        for part, is_cjk in _word_parts(word):
            if is_cjk:
                out.extend(part)
                if len(part) > 1:
                    out.extend(run_ngrams(part))
            else:
                out.append(part)
    return " ".join(out)


def query_ngrams(word: str) -> list[str]:
    """The side-index terms of one query word: its CJK runs cut into pairs (a lone character stays
    whole) and its Latin/digit parts."""
    terms: list[str] = []
    for part, is_cjk in _word_parts(word):
        if is_cjk:
            terms.extend(run_ngrams(part))
        else:
            terms.append(part.lower())
    return list(dict.fromkeys(terms))
