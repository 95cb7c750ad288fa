"""The other sets' questions asked of each set's indexes: a fixed sample, answered as served."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from memoryd.eval import abstain, calibration, harness
from memoryd.eval.dataset import EvalSet, Group, Qrel, stable_key

pytestmark = pytest.mark.anyio


def _group(agent_id: str, lines: list[str], questions: list[tuple[str, int]]) -> Group:
    rel = f"memory/{agent_id}.md"
    return Group(
        agent_id,
        {rel: "\n".join(lines) + "\n"},
        tuple(Qrel(f"{agent_id}:q{i}", q, 1, frozenset({(rel, line)})) for i, (q, line) in enumerate(questions)),
    )


def notes() -> EvalSet:
    """Two notes on a dog and on a build tool, each asked one question."""
    pets = _group(
        "pets",
        ["# pets", "", "Rex is a golden retriever who loves the beach."],
        [("Which golden retriever loves the beach?", 3)],
    )
    build = _group("build", ["# build", "", "Cargo compiles crates with rustc."], [("What does Cargo compile?", 3)])
    return EvalSet("notes", "Notes", (pets, build), {1: "fact"}, "0" * 64)


def chat() -> EvalSet:
    """One chat: a question about baking (no note mentions it) and one about a golden retriever (one does)."""
    lines = [
        "# chat",
        "",
        "Alice baked sourdough bread on Sunday.",
        "Alice's golden retriever loves the beach at dawn.",
    ]
    group = _group(
        "alice", lines, [("What did Alice bake on Sunday?", 3), ("Whose golden retriever loves the beach at dawn?", 4)]
    )
    return EvalSet("chat", "Chat", (group,), {1: "fact"}, "1" * 64)


def test_the_sample_is_an_equal_share_of_each_other_set_lowest_id_hash_first() -> None:
    many = [
        EvalSet(
            name,
            name,
            (_group(name, ["x"], [(f"{name} question {i}?", 1) for i in range(5)]),),
            {1: "fact"},
            "0" * 64,
        )
        for name in ("a", "b", "c")
    ]
    probes = abstain.other_questions(many, "a", limit=4)
    assert [p.source for p in probes] == ["b", "b", "c", "c"]
    for name in ("b", "c"):
        questions = many[("a", "b", "c").index(name)].groups[0].questions
        lowest = sorted(questions, key=stable_key)[:2]
        assert [p.question for p in probes if p.source == name] == [q.question for q in lowest]
    assert abstain.other_questions(many, "a", limit=4) == probes  # the same on every run
    assert abstain.other_questions(many[:1], "a") == ()  # one set: nothing to ask


async def test_every_index_is_asked_the_other_sets_questions_as_served(tmp_path: Path) -> None:
    sets = [notes(), chat()]
    results = {s.name: await harness.evaluate_set(s, modes=["keyword", "bm25"], work_dir=tmp_path) for s in sets}
    added = await abstain.add_other_sets(sets, results, work_dir=tmp_path, provider=None)
    on_notes = added["notes"][("default", "keyword")]
    # Both chat questions of both note indexes: only the dog note answers the golden retriever one.
    assert on_notes.other_sets is not None
    assert (on_notes.other_sets.asked, on_notes.other_sets.empty) == (4, 3)
    assert {n: (a.asked, a.empty) for n, a in on_notes.other_sets.by_set.items()} == {"chat": (4, 3)}
    # The chat index answers the dog question, not the Cargo one.
    on_chat = added["chat"][("default", "keyword")]
    assert on_chat.other_sets is not None and (on_chat.other_sets.asked, on_chat.other_sets.empty) == (2, 1)
    # The same-set abstention is unchanged; the chat set has one index, so none.
    assert on_notes.abstention == results["notes"][("default", "keyword")].abstention
    assert on_chat.abstention is None
    assert added["notes"][("default", "bm25")].other_sets is None  # the floor has no threshold
    # The sweep: at min_score 0 everything matched is an answer; at the highest, nothing is.
    sweep = on_notes.sweep
    assert [row["min_score"] for row in sweep] == list(calibration.MIN_SCORES)
    assert (sweep[0]["abstain_other_sets"], sweep[-1]["abstain_other_sets"]) == (0.75, 1.0)
    assert all(a["abstain_other_sets"] <= b["abstain_other_sets"] for a, b in itertools.pairwise(sweep))
    as_dict = on_notes.to_dict()
    hook = {"hook_nothing_injected": 3, "hook_nothing_injected_rate": 0.75}  # the prompt hook injects nothing there
    assert as_dict["abstention_other_sets"] == {
        "asked": 4,
        "no_matches": 3,
        "rate": 0.75,
        **hook,
        "by_set": {"chat": {"asked": 4, "no_matches": 3, "rate": 0.75, **hook}},
    }
    assert "by_set" not in as_dict["abstention"]  # type: ignore[operator]
