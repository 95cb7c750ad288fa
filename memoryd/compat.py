"""`compat = "openclaw"`: one switch for search that answers as OpenClaw's builtin manager does.

A settings profile, applied when the config is loaded (so `config show` and status show what runs),
never an edit of memoryd's own defaults. It pins the knobs memoryd added or tuned on top of OpenClaw:

* `query.keyword_strategy = "openclaw"`: the keyword leg is OpenClaw's AND query with its bm25 mapping
  `r/(1+r)` and `maxResults × candidateMultiplier` candidates, in hybrid mode too; and every keyword-only
  answer (no provider, a provider not ready, a failed query embedding, an index without vectors yet)
  is OpenClaw's FTS-only path (AND, else one query per keyword; lexical boost; relaxed floor);
* `query.hybrid.text_score = "bm25"`, `query.hybrid.fusion = "weighted"`, `query.date_boost = 0`;
* OpenClaw's defaults where memoryd's differ, unless the file sets another value: fusion weights
  0.7/0.3, `query.min_score` 0.35, `store.fts.tokenizer = "unicode61"`;
* `query.min_evidence = 0`: OpenClaw has no abstention rule (and its keyword leg measures no coverage);
* snippets are each chunk's head, not the window that matched (the searcher reads `compat` itself).

The reranker, MMR, temporal decay and sources stay as configured: they are OpenClaw options too, or
(sessions) decide what is indexed rather than how it is searched.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from memoryd.config import MemorySearchSettings

Compat = Literal["none", "openclaw"]

OPENCLAW_VECTOR_WEIGHT = 0.7
OPENCLAW_TEXT_WEIGHT = 0.3
OPENCLAW_MIN_SCORE = 0.35
OPENCLAW_TOKENIZER: Literal["unicode61"] = "unicode61"


def apply_compat(settings: MemorySearchSettings, memoryd_defaults: MemorySearchSettings) -> MemorySearchSettings:
    """The settings with the profile of `settings.compat` applied (before clamping and normalising).

    A value equal to memoryd's own default counts as unset and gets OpenClaw's; any other was chosen.
    """
    if settings.compat != "openclaw":
        return settings
    q, d = settings.query, memoryd_defaults.query
    h = q.hybrid
    weights_unset = (h.vector_weight, h.text_weight) == (d.hybrid.vector_weight, d.hybrid.text_weight)
    hybrid = dataclasses.replace(
        h,
        fusion="weighted",
        text_score="bm25",
        vector_weight=OPENCLAW_VECTOR_WEIGHT if weights_unset else h.vector_weight,
        text_weight=OPENCLAW_TEXT_WEIGHT if weights_unset else h.text_weight,
    )
    query = dataclasses.replace(
        q,
        keyword_strategy="openclaw",
        date_boost=0.0,
        min_score=OPENCLAW_MIN_SCORE if q.min_score == d.min_score else q.min_score,
        min_evidence=0.0,
        hybrid=hybrid,
    )
    fts = settings.store.fts
    if fts.tokenizer == memoryd_defaults.store.fts.tokenizer:
        fts = dataclasses.replace(fts, tokenizer=OPENCLAW_TOKENIZER)
    store = dataclasses.replace(settings.store, fts=fts)
    return dataclasses.replace(settings, query=query, store=store)
