"""The harness drives the real engine: progress over the whole run, modes, variants, the bm25 floor,
answers as served and abstention on another index's questions."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.cli.hooks import recall
from memoryd.cli.hooks.project import Project
from memoryd.eval import calibration, harness, locomo
from memoryd.eval.dataset import EvalSet, Group, Qrel
from memoryd.eval.harness import Mode
from memoryd.eval.metrics import Span
from memoryd.hookblock import distinct, hits_of, render
from memoryd.index.engine import Progress
from memoryd.search.pipeline import SearchResult
from memoryd.search.request import SearchResponse

pytestmark = pytest.mark.anyio


async def test_progress_covers_every_transcript_of_every_index(
    two_conversations_path: Path,
    tmp_path: Path,
) -> None:
    seen: list[Progress] = []
    dataset = locomo.eval_set(locomo.load_locomo(two_conversations_path))
    work = tmp_path / "w"
    report = await harness.evaluate(dataset, mode="keyword", work_dir=work, progress=seen.append)
    assert {p.files_total for p in seen} == {4}
    assert [p.files_done for p in seen] == sorted(p.files_done for p in seen)
    assert (seen[-1].files_done, seen[-1].chunks) == (4, 4)
    assert report.settings["chunks"] == 4


async def test_chunk_spans_are_read_back_from_the_index(tiny_path: Path, tmp_path: Path) -> None:
    tiny = locomo.eval_set(locomo.load_locomo(tiny_path))
    await harness.evaluate(tiny, mode="keyword", work_dir=tmp_path)
    agent = harness.agent_config(tiny.groups[0], tmp_path / "locomo", harness.DEFAULT)
    assert agent.workspace == tmp_path / "locomo" / "conv-t1"
    assert sorted(harness.read_chunk_spans(agent.db_path), key=lambda s: s.path) == [
        Span("sessions/session_01.jsonl", 1, 5),
        Span("sessions/session_02.jsonl", 1, 5),
    ]


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
async def test_modes_needing_vectors_run_with_the_local_model(mode: Mode, tiny_path: Path, tmp_path: Path) -> None:
    tiny = locomo.eval_set(locomo.load_locomo(tiny_path))
    report = await harness.evaluate(tiny, mode=mode, work_dir=tmp_path / "w")
    assert report.settings["mode"] == mode
    assert report.settings["provider"] == "local"
    assert report.overall.n == report.settings["scored"]
    assert 0.0 <= report.overall.recall_10 <= 1.0
    assert report.served is not None and report.served.overall.n == report.overall.n
    assert report.abstention is None  # one conversation: no other index to ask its questions


def _group(agent_id: str, lines: list[str], question: str, evidence_line: int) -> Group:
    rel = f"memory/{agent_id}.md"
    return Group(
        agent_id,
        {rel: "\n".join(lines) + "\n"},
        (Qrel(f"{agent_id}:q1", question, 1, frozenset({(rel, evidence_line)})),),
    )


def two_notes() -> EvalSet:
    """Two one-note indexes on unrelated subjects (every line a chunk of its own is not needed)."""
    pets = _group(
        "pets",
        ["# pets", "", "Rex is a golden retriever who loves the beach."],
        "Which golden retriever loves the beach?",
        3,
    )
    build = _group(
        "build", ["# build", "", "Cargo compiles crates with rustc and caches them."], "What does Cargo cache?", 3
    )
    return EvalSet("notes", "Notes", (pets, build), {1: "fact"}, "0" * 64, {"questions": 2})


def test_the_measured_block_skips_a_repeated_snippet_as_the_hook_does() -> None:
    # aider's architect answer comes back as the editor's message: two lines, one text. The hook shows it
    # once and gives its place to the next result; a measured block that showed both was not the hook's.
    def note(path: str, line: int, text: str, score: float) -> SearchResult:
        return SearchResult(path, line, line, score, text, "memory", snippet_lines=(line, line))

    results = [
        note("memory/a.md", 3, "Deploys go through the staging cluster first.", 0.9),
        note("memory/b.md", 7, "deploys go through the  staging cluster FIRST.", 0.8),
        note("memory/c.md", 2, "The staging cluster runs in eu-west-1.", 0.7),
    ]
    resp = SearchResponse(results, "hybrid", "local", None, None, {})
    measured = harness.injected_spans(resp)
    assert measured == [Span("memory/a.md", 3, 3), Span("memory/c.md", 2, 2)]
    hits = hits_of(resp.to_dict())
    chosen = recall.choose(
        hits,
        seen=frozenset(),
        session_id="s1",
        transcript_path="",
        project=Project(),
        scope="project",
        roots=recall.Roots(),
        limit=harness.HOOKS.max_results,
    )
    _block, shown = render(chosen, harness.HOOKS.max_chars)
    assert [Span(h.path, *h.lines) for h in shown if h.lines is not None] == measured
    assert [h.path for h in distinct(hits, seen={hits[2].key})] == ["memory/a.md"]


async def test_bm25_mode_is_plain_fts5_over_the_same_chunks(tmp_path: Path) -> None:
    report = await harness.evaluate(two_notes(), mode="bm25", work_dir=tmp_path)
    assert report.settings["mode"] == "bm25"
    assert report.settings["chunks"] == 2
    assert (report.overall.n, report.overall.recall_5) == (2, 1.0)
    assert report.served is None and report.abstention is None  # the floor has no threshold to serve


async def test_abstention_asks_each_index_the_next_ones_questions(tmp_path: Path) -> None:
    report = await harness.evaluate(two_notes(), mode="keyword", work_dir=tmp_path)
    assert report.abstention is not None
    # Neither note shares a content word with the other's question: both get "No matches.".
    assert (report.abstention.asked, report.abstention.empty) == (2, 2)
    assert report.served is not None and (report.served.empty, report.served.overall.recall_5) == (0, 1.0)
    # The prompt hook's block holds the evidence too, and injects nothing for the other note's question.
    assert report.served.injected is not None and report.served.injected.recall_5 == 1.0
    assert report.abstention.quiet == 2
    assert report.to_dict()["abstention"]["hook_nothing_injected_rate"] == 1.0  # type: ignore[index]


async def test_a_variant_that_changes_the_tokenizer_rebuilds_the_index_for_its_run(tmp_path: Path) -> None:
    porter = harness.Variant("porter", {"store": {"fts": {"tokenizer": "porter"}}})
    reports = await harness.evaluate_set(
        two_notes(), modes=["keyword"], variants=[harness.DEFAULT, porter], work_dir=tmp_path
    )
    assert reports[("porter", "keyword")].settings["fts_tokenizer"] == "porter"
    assert reports[("default", "keyword")].settings["fts_tokenizer"] == "unicode61"
    assert reports[("porter", "keyword")].overall.recall_5 == 1.0
    assert reports[("porter", "keyword")].served is None  # only the first variant is asked as served


async def test_a_variant_that_cuts_transcripts_by_exchange_gets_its_own_index(tmp_path: Path) -> None:
    exchange = harness.Variant("exchange", {"chunking": {"transcripts": "exchange"}})
    reports = await harness.evaluate_set(
        two_notes(), modes=["keyword"], variants=[harness.DEFAULT, exchange], work_dir=tmp_path
    )
    assert reports[("exchange", "keyword")].settings["chunk_transcripts"] == "exchange"
    assert reports[("default", "keyword")].settings["chunk_transcripts"] == "lines"
    group = two_notes().groups[0]
    keys = {harness._variant_key(group, tmp_path, v) for v in (harness.DEFAULT, exchange)}
    assert len(keys) == 2


async def test_hybrid_reports_both_calibration_sweeps(tmp_path: Path) -> None:
    """The other index's question is off-topic: at the default min_evidence it gets nothing."""
    report = await harness.evaluate(two_notes(), mode="hybrid", work_dir=tmp_path)
    assert report.abstention is not None and report.abstention.rate == 1.0
    assert [row["min_evidence"] for row in report.evidence_sweep] == list(calibration.MIN_EVIDENCES)
    assert {row["min_score"] for row in report.evidence_sweep} == {report.settings["served_min_score"]}
    assert {row["min_evidence"] for row in report.sweep} == {report.settings["served_min_evidence"]}
    default = next(r for r in report.evidence_sweep if r["min_evidence"] == report.settings["served_min_evidence"])
    assert default["abstain"] == report.abstention.rate
    assert report.served is not None
    assert default["recall@10"] == pytest.approx(report.served.overall.recall_10)
    assert "min_evidence_sweep" in report.to_dict()
