"""Print the letter pairs of English that memoryd's entropy rule treats as word-like.

The table in memoryd/sources/secrets/entropy.py (`WORD_BIGRAMS`) is this script's output: the most
frequent letter pairs inside the words (3+ letters) of the standard library's docstrings, taken until
they cover 99% of all pairs. Run it with the interpreter memoryd supports to regenerate the table:

    python scripts/english_bigrams.py
"""

from __future__ import annotations

import collections
import itertools
import pathlib
import re
import sys
import sysconfig

COVERAGE = 0.99
_DOCSTRING = re.compile(r'"""(.*?)"""', re.S)
_WORD = re.compile(r"[A-Za-z]{3,}")


def bigram_counts(root: pathlib.Path) -> collections.Counter[str]:
    counts: collections.Counter[str] = collections.Counter()
    for path in sorted(root.rglob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for doc in _DOCSTRING.findall(text):
            for word in _WORD.findall(doc):
                low = word.lower()
                counts.update(a + b for a, b in itertools.pairwise(low))
    return counts


def main() -> int:
    counts = bigram_counts(pathlib.Path(sysconfig.get_paths()["stdlib"]))
    total = sum(counts.values())
    kept: list[str] = []
    covered = 0
    for pair, n in counts.most_common():
        if covered >= COVERAGE * total:
            break
        kept.append(pair)
        covered += n
    sys.stdout.write("".join(sorted(kept)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
