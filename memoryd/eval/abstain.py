"""Abstention on questions truly off-topic: the other sets' questions asked of each set's indexes.

The harness's abstention asks an index the next index's questions of the same set (another
conversation, other tools' FAQs): they share topic and words with it, so some answers are fair.
When several sets run together, each index of a set is also asked a fixed sample of the other sets'
questions (LoCoMo's chit-chat of the FAQ notes, the FAQ's of the conversations) as served, at the
default settings: the share answered "No matches." is `EvalReport.other_sets`, per set asked too. The
sample is up to `LIMIT` questions, an equal share from each other set, those whose id hashes lowest
(as `EvalSet.sample` picks). Each is asked again at min_score 0 for its best score and whether the
abstention rule (`min_evidence`) lets it answer, which gives the figure at every min_score of the sweep
(`abstain_other_sets` in its rows).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from memoryd.embeddings.base import EmbeddingProvider
from memoryd.eval.calibration import Asked
from memoryd.eval.dataset import EvalSet, stable_key
from memoryd.eval.harness import (
    DEFAULT,
    Abstention,
    EvalReport,
    Mode,
    agent_config,
    ask_ranking,
    index_share,
    injected_spans,
    search_served,
)
from memoryd.index.engine import IndexEngine

LIMIT = 200


@dataclass(frozen=True, slots=True)
class Probe:
    """A question of another set, and the set it comes from."""

    source: str
    question: str


@dataclass(frozen=True, slots=True)
class Answer:
    """What one index answered one probe: nothing as served, and its ranking at min_score 0."""

    source: str
    empty: bool
    ranking: Asked
    quiet: bool = True
    """The prompt hook's block for it would be empty (`harness.injected_spans`)."""


def other_questions(sets: Sequence[EvalSet], name: str, limit: int = LIMIT) -> tuple[Probe, ...]:
    """Up to `limit` questions of the sets other than `name`, an equal share of each, the same on every run."""
    others = [s for s in sets if s.name != name]
    if not others:
        return ()
    share = limit // len(others)
    probes: list[Probe] = []
    for s in others:
        questions = sorted((q for g in s.groups for q in g.questions), key=stable_key)[:share]
        probes.extend(Probe(s.name, q.question) for q in questions)
    return tuple(probes)


async def ask_other_sets(
    eval_set: EvalSet,
    probes: Sequence[Probe],
    *,
    mode: Mode,
    work_dir: Path,
    provider: EmbeddingProvider | None,
) -> list[Answer]:
    """Every probe asked of every index of the set at the default settings (each index is reopened where
    `evaluate_set` built it and synced, a no-op unless another variant's index was left there)."""
    if mode == "bm25":
        raise ValueError("the bm25 floor has no threshold to abstain with")
    root = work_dir / eval_set.name
    answers: list[Answer] = []
    for group in eval_set.groups:
        engine = IndexEngine(agent_config(group, root, DEFAULT), provider)
        await engine.open()
        try:
            await engine.sync("eval")
            share = await index_share(engine)
            for p in probes:
                answer = await search_served(engine.searcher, mode, p.question)
                ranking = await ask_ranking(engine.searcher, mode, p.question)
                quiet = not injected_spans(answer)
                answers.append(Answer(p.source, not answer.results, ranking.asked(share=share), quiet))
        finally:
            await engine.aclose()
    return answers


def tally(answers: Sequence[Answer]) -> Abstention:
    """The share answered "No matches.", overall and per set the questions come from."""
    by_set: dict[str, Abstention] = {}
    for source in dict.fromkeys(a.source for a in answers):
        mine = [a for a in answers if a.source == source]
        by_set[source] = Abstention(len(mine), sum(a.empty for a in mine), quiet=sum(a.quiet for a in mine))
    return Abstention(len(answers), sum(a.empty for a in answers), by_set, quiet=sum(a.quiet for a in answers))


def with_answers(report: EvalReport, answers: Sequence[Answer]) -> EvalReport:
    """The report with the other sets' abstention, and its share at each threshold pair of the sweeps."""
    n = max(1, len(answers))

    def with_share(rows: Sequence[dict[str, float]]) -> list[dict[str, float]]:
        return [
            {
                **row,
                "abstain_other_sets": round(
                    sum(not a.ranking.served(row["min_score"], row["min_evidence"]) for a in answers) / n, 4
                ),
            }
            for row in rows
        ]

    return replace(
        report,
        other_sets=tally(answers),
        sweep=with_share(report.sweep),
        evidence_sweep=with_share(report.evidence_sweep),
    )


async def add_other_sets(
    sets: Sequence[EvalSet],
    results: Mapping[str, Mapping[tuple[str, Mode], EvalReport]],
    *,
    work_dir: Path,
    provider: EmbeddingProvider | None,
    limit: int = LIMIT,
) -> dict[str, dict[tuple[str, Mode], EvalReport]]:
    """The results with the other sets' abstention added to every report asked as served."""
    out: dict[str, dict[tuple[str, Mode], EvalReport]] = {}
    for s in sets:
        probes = other_questions(sets, s.name, limit)
        out[s.name] = dict(results[s.name])
        for (variant, mode), report in results[s.name].items():
            if probes and variant == DEFAULT.name and report.served is not None:
                answers = await ask_other_sets(s, probes, mode=mode, work_dir=work_dir, provider=provider)
                out[s.name][(variant, mode)] = with_answers(report, answers)
    return out
