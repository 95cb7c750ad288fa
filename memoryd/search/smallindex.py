"""Lower thresholds for an index of a few chunks: the best unrelated chunk of a few scores lower than
the best of thousands.

Abstention (`query.min_evidence`) and the served cut (`query.min_score`) were chosen on indexes of
46 chunks and more, where a question about something the memory does not hold still meets a loosely
related chunk among many: the best of many draws. A first MEMORY.md is one chunk, and there a plain
paraphrase ("what editor do I use" of "Uses Neovim with the lazy.nvim setup") fell under both: a third
of the one-note workspaces' questions got "No matches.". Measured on the one-note workspaces' notes
(`memoryd/eval/smallnotes.py`) put 1, 2, 4, 5 and 10 to an index, each index also asked the next one's
questions, both thresholds scaled by one share: questions answered (R@5) / the next index's answered
nothing, at shares 0.6, 0.7, 0.8, 1.0 of the thresholds: one note 0.85/0.83, 0.85/0.90, 0.81/0.94,
0.67/0.98; four notes 0.87/0.65, 0.87/0.79, 0.83/0.83, 0.69/0.94; ten notes 0.87/0.35, 0.87/0.38,
0.85/0.56, 0.69/0.73. So the share falls along log(chunks) from 1 at SMALL_INDEX_CHUNKS to
FLOOR_SHARE at one chunk; every index of SMALL_INDEX_CHUNKS chunks or more (each dev set's, the
smallest of which holds 46) is judged exactly as before.
"""

from __future__ import annotations

import math
from dataclasses import replace

from memoryd.search.pipeline import RankOptions

SMALL_INDEX_CHUNKS = 8
"""From this many chunks on, the configured thresholds apply unchanged."""
FLOOR_SHARE = 0.7
"""The share of each threshold that applies to an index of one chunk (min_evidence 0.12 -> 0.084)."""


def size_share(chunks: int) -> float:
    """The share of the configured thresholds that applies to an index of `chunks` chunks, in
    [FLOOR_SHARE, 1]: 1 from SMALL_INDEX_CHUNKS on (and for an empty index, which answers nothing)."""
    if chunks <= 0 or chunks >= SMALL_INDEX_CHUNKS:
        return 1.0
    return FLOOR_SHARE + (1 - FLOOR_SHARE) * math.log(chunks) / math.log(SMALL_INDEX_CHUNKS)


def for_index_size(opts: RankOptions, chunks: int) -> RankOptions:
    """`opts` with min_evidence, and min_score when it is the configured one (a request's own minScore
    is applied as given), scaled to an index of `chunks` chunks."""
    share = size_share(chunks)
    if share >= 1.0:
        return opts
    min_score = opts.min_score * share if opts.min_score_configured else opts.min_score
    return replace(opts, min_evidence=opts.min_evidence * share, min_score=min_score)
