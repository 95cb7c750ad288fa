"""The ablation table: each ranking feature off, one at a time, on every set.

Issue 14's rule for a default: it stays on only if it does not hurt any set by more than
`TOLERANCE` R@5 and helps the mean, i.e. switching it off must not gain more than `TOLERANCE` on
any set, and must lose on the mean. Defaults are chosen by the worst set, not the best.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from memoryd.eval.harness import DEFAULT, EvalReport, Variant
from memoryd.search.features import KeywordFeatures, RankingFeatures

TOLERANCE = 0.005

VARIANTS: tuple[Variant, ...] = (
    DEFAULT,
    Variant("tokenizer unicode61", {"store": {"fts": {"tokenizer": "unicode61"}}}),
    Variant("tokenizer porter", {"store": {"fts": {"tokenizer": "porter"}}}),
    Variant("no date boost", {"query": {"date_boost": 0.0}}),
    Variant("weights 0.7/0.3", {"query": {"hybrid": {"vector_weight": 0.7, "text_weight": 0.3}}}),
    Variant("weights 0.3/0.7", {"query": {"hybrid": {"vector_weight": 0.3, "text_weight": 0.7}}}),
    Variant("text_score bm25", {"query": {"hybrid": {"text_score": "bm25"}}}),
    Variant("no coverage", features=RankingFeatures(KeywordFeatures(coverage=False))),
    Variant("no proximity", features=RankingFeatures(KeywordFeatures(proximity=False))),
    Variant("no df caps", features=RankingFeatures(KeywordFeatures(df_caps=False))),
    Variant("keep stop words", features=RankingFeatures(KeywordFeatures(stop_words=False))),
    Variant("no vector completion", features=RankingFeatures(vector_completion=False)),
    Variant("coverage-led keyword order", features=RankingFeatures(KeywordFeatures(bm25_order=False))),
    Variant("no stop-word fallback", features=RankingFeatures(KeywordFeatures(stop_word_fallback=False))),
    Variant(
        "plain bm25 OR leg",
        features=RankingFeatures(
            KeywordFeatures(stop_words=False, coverage=False, proximity=False, df_caps=False, bm25_order=False)
        ),
    ),
)


@dataclass(frozen=True, slots=True)
class Verdict:
    variant: str
    deltas: Mapping[str, float]  # set -> R@5 of the variant minus the default's
    mean: float

    @property
    def feature_helps(self) -> bool:
        """The default (feature on) beats this variant on the mean and loses to it nowhere by more than
        TOLERANCE."""
        return self.mean < 0 and all(d <= TOLERANCE for d in self.deltas.values())


def verdicts(reports: Mapping[str, Mapping[str, EvalReport]]) -> list[Verdict]:
    """Per variant, its R@5 change against the default on every set (reports: set -> variant -> report)."""
    out: list[Verdict] = []
    names: Sequence[str] = [v.name for v in VARIANTS if v.name != DEFAULT.name]
    for name in names:
        deltas = {
            s: by_variant[name].overall.recall_5 - by_variant[DEFAULT.name].overall.recall_5
            for s, by_variant in reports.items()
            if name in by_variant and DEFAULT.name in by_variant
        }
        if deltas:
            out.append(Verdict(name, deltas, sum(deltas.values()) / len(deltas)))
    return out
