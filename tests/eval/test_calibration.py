"""The calibration sweeps: what a (min_score, min_evidence) pair would serve, read off one ranking."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from memoryd.eval.calibration import MIN_EVIDENCES, MIN_SCORES, Asked, rows, sweeps

A = frozenset({("a.md", 1)})
B = frozenset({("a.md", 2)})


def test_min_evidence_empties_the_whole_answer_min_score_trims_it() -> None:
    asked = Asked([(0.5, A), (0.12, B)], evidence=0.2)
    assert asked.served(0.10, 0.12) == [(0.5, A), (0.12, B)]
    assert asked.served(0.15, 0.12) == [(0.5, A)]
    assert asked.served(0.10, 0.25) == []
    assert Asked([(0.5, A)], evidence=None).served(0.1, 0.99) == [(0.5, A)]  # no evidence: no such rule


def test_rows_count_recall_empty_answers_and_abstention() -> None:
    answerable = [(Asked([(0.5, A), (0.12, B)], 0.2), 2), (Asked([(0.3, A)], 0.1), 1)]
    probes = [Asked([(0.4, frozenset())], 0.05), Asked([], 0.0)]
    (row,) = rows(answerable, probes, [(0.10, 0.12)])
    assert row == {"min_score": 0.10, "min_evidence": 0.12, "recall@10": 0.5, "empty_share": 0.5, "abstain": 1.0}
    (open_row,) = rows(answerable, probes, [(0.10, 0.0)])
    assert (open_row["recall@10"], open_row["empty_share"], open_row["abstain"]) == (1.0, 0.0, 0.5)


def test_a_mode_without_evidence_has_no_evidence_sweep() -> None:
    by_score, by_evidence = sweeps([(Asked([(0.5, A)], None), 1)], [], min_score=0.1, min_evidence=0.12)
    assert [r["min_score"] for r in by_score] == list(MIN_SCORES)
    assert {r["min_evidence"] for r in by_score} == {0.12}
    assert by_evidence == []


scored = st.lists(st.floats(min_value=0, max_value=1, allow_nan=False), max_size=5)
asked = st.builds(
    lambda scores, ev: Asked([(s, A) for s in sorted(scores, reverse=True)], ev),
    scored,
    st.one_of(st.none(), st.floats(min_value=0, max_value=1, allow_nan=False)),
)


@given(st.lists(asked, min_size=1, max_size=6), st.lists(asked, max_size=6))
def test_raising_either_threshold_never_serves_more(answerable: list[Asked], probes: list[Asked]) -> None:
    by_score, by_evidence = sweeps([(a, 1) for a in answerable], probes, min_score=0.1, min_evidence=0.12)
    for sweep in (by_score, by_evidence):
        for low, high in itertools.pairwise(sweep):
            assert high["recall@10"] <= low["recall@10"]
            assert high["empty_share"] >= low["empty_share"]
            assert high["abstain"] >= low["abstain"]
    if any(a.evidence is not None for a in answerable):
        assert [r["min_evidence"] for r in by_evidence] == list(MIN_EVIDENCES)
