"""Hybrid abstention on evidence: a keyword match counts as far as it covers the question."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd import config as config_mod
from memoryd.search.fuse import Candidate
from memoryd.search.pipeline import RankOptions, best_evidence, evidence, rank_hybrid
from tests.search.candidates import hit, no_mtime


def cand(cid: str, *, cos: float = 0.0, kw: float = 0.0, coverage: float = 0.0) -> Candidate:
    """A leg's hit; a keyword hit's `score` is the keyword leg's own score, as search_relaxed gives it."""
    return hit(cid, vector=cos, text=kw, coverage=coverage)


def opts(**kw: object) -> RankOptions:
    base: dict[str, object] = {
        "max_results": 6,
        "min_score": 0.10,
        "min_evidence": 0.12,
        "vector_weight": 0.5,
        "text_weight": 0.5,
    }
    base.update(kw)
    return RankOptions(**base)  # type: ignore[arg-type]


def test_evidence_is_the_cosine_and_the_keyword_score_scaled_by_coverage() -> None:
    c = cand("a", cos=0.3, kw=0.6, coverage=0.25)
    assert evidence(c, opts()) == pytest.approx(0.5 * 0.3 + 0.5 * 0.6 * 0.25)
    assert evidence(c, opts(vector_weight=0.7, text_weight=0.3)) == pytest.approx(0.7 * 0.3 + 0.3 * 0.6 * 0.25)
    assert evidence(cand("b", cos=-0.2), opts()) == 0.0  # a negative cosine is no evidence, and takes none away
    assert best_evidence([], opts()) == 0.0


def test_one_common_word_with_an_unrelated_chunk_is_no_answer() -> None:
    """Its fused score passes min_score (0.21), but it covers a fifth of the question: No matches."""
    vector = [cand("design", cos=0.08)]
    keyword = [cand("design", kw=0.35, coverage=0.2)]
    assert rank_hybrid(vector, keyword, opts(min_evidence=0.0), no_mtime)[0].score == pytest.approx(0.215)
    assert rank_hybrid(vector, keyword, opts(), no_mtime) == []


def test_a_meaning_match_sharing_no_word_is_answered() -> None:
    ranked = rank_hybrid([cand("rex", cos=0.35)], [], opts(), no_mtime)
    assert [c.id for c in ranked] == ["rex"]


def test_a_keyword_match_covering_the_question_is_answered() -> None:
    ranked = rank_hybrid([cand("fix", cos=0.05)], [cand("fix", kw=0.5, coverage=0.9)], opts(), no_mtime)
    assert [c.id for c in ranked] == ["fix"]


def test_the_best_candidate_decides_for_the_whole_answer() -> None:
    """Abstention says whether the memory holds anything about the question; min_score then trims the tail."""
    vector = [cand("strong", cos=0.4), cand("weak", cos=0.22)]
    ranked = rank_hybrid(vector, [], opts(), no_mtime)
    assert [c.id for c in ranked] == ["strong", "weak"]  # 0.11 is under min_evidence, above min_score


def test_min_score_zero_asks_for_the_ranking_with_no_abstention() -> None:
    settings = config_mod.build({}).agent(None).settings
    assert RankOptions.from_settings(settings, max_results=6, min_score=0.0, now_ms=0).min_evidence == 0.0
    served = RankOptions.from_settings(settings, max_results=6, min_score=settings.query.min_score, now_ms=0)
    assert served.min_evidence == settings.query.min_evidence == 0.12


def test_openclaws_keyword_strategy_never_abstains_on_evidence() -> None:
    """Its keyword leg measures no coverage, so every keyword match would count as none."""
    settings = config_mod.build({}).agent(None).settings
    openclaw = dataclasses.replace(settings, query=dataclasses.replace(settings.query, keyword_strategy="openclaw"))
    assert RankOptions.from_settings(openclaw, max_results=6, min_score=0.35, now_ms=0).min_evidence == 0.0
    compat = config_mod.build({"defaults": {"compat": "openclaw"}}).agent(None).settings
    assert compat.query.min_evidence == 0.0


unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
legs = st.lists(st.tuples(unit, unit, unit), min_size=0, max_size=8)


@given(legs, unit)
def test_abstention_is_all_or_nothing(hits: list[tuple[float, float, float]], gate: float) -> None:
    """With the gate the answer is the ungated answer, or nothing; and nothing exactly when no
    candidate's evidence reaches the gate."""
    vector = [cand(f"c{i}", cos=cos) for i, (cos, _kw, _cov) in enumerate(hits)]
    keyword = [cand(f"c{i}", kw=kw, coverage=cov) for i, (_cos, kw, cov) in enumerate(hits) if kw > 0]
    ungated = rank_hybrid(vector, keyword, opts(min_evidence=0.0), no_mtime)
    gated = rank_hybrid(vector, keyword, opts(min_evidence=gate), no_mtime)
    best = max((0.5 * cos + 0.5 * kw * cov for cos, kw, cov in hits), default=0.0)
    assert gated in (ungated, [])
    if gate > 0 and best < gate:
        assert gated == []
    elif best >= gate:
        assert gated == ungated
