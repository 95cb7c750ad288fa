"""Sets as workspaces: deterministic subsamples."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memoryd.eval.dataset import EvalSet, Group, Qrel


def a_set(sizes: list[int]) -> EvalSet:
    groups = tuple(
        Group(
            f"g{g}",
            {},
            tuple(Qrel(f"g{g}:q{i}", f"question {i}", 1 + i % 3, frozenset({("a.md", i + 1)})) for i in range(n)),
        )
        for g, n in enumerate(sizes)
    )
    return EvalSet("s", "S", groups, {1: "a", 2: "b", 3: "c"}, "0" * 64, {"questions": sum(sizes)})


@given(st.lists(st.integers(0, 30), min_size=1, max_size=5), st.integers(0, 40))
def test_a_sample_keeps_the_same_questions_every_time_and_at_most_n_per_group(sizes: list[int], n: int) -> None:
    full = a_set(sizes)
    sampled = full.sample(n)
    again = a_set(sizes).sample(n)
    assert sampled == again
    for whole, part in zip(full.groups, sampled.groups, strict=True):
        assert set(part.questions) <= set(whole.questions)
        assert len(part.questions) == (len(whole.questions) if n == 0 else min(n, len(whole.questions)))


def test_a_larger_sample_contains_the_smaller_one() -> None:
    full = a_set([30])
    assert set(full.sample(5).groups[0].questions) <= set(full.sample(12).groups[0].questions)
