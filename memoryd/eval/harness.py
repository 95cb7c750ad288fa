"""Dev sets through memoryd's real pipeline: write workspaces, index them, ask every question, score.

Indexes are built exactly as the daemon builds them (`IndexEngine.sync`) and searched through a
`Searcher` as the daemon searches them, one index per group of the set. Every question is asked
twice: with min_score 0 and the top 10 kept (the ranking), and as served — the agent's own settings
(min_score and all), only max_results raised to 10 so R@10 can be read — counting the answerable
questions that get nothing back. The questions of the next group are then asked of each index as
served: they are about things that index never mentions, so the right answer is "No matches.". When
several sets run together, `memoryd.eval.abstain` also asks each index questions of the other sets.

`bm25` mode is the floor: plain FTS5 bm25 over an OR of the question's tokens on the same chunks
(`memoryd.eval.baseline`). A `Variant` changes settings (a `[defaults]` table fragment; one that
changes the index, such as the tokenizer, gets its own index) or switches a ranking feature off.

Why over 400 lines: the three passes over each question (ranking, as served, abstention) share one
loop over the same indexes, searchers and tallies, and the report types they fill sit beside it, so
a new measure changes one module; the data sets' own parts live in their modules (locomo, realtalk, faq).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio.to_thread

from memoryd import config as config_mod
from memoryd import paths
from memoryd.config import AgentConfig
from memoryd.embeddings.base import EmbeddingProvider
from memoryd.embeddings.select import select_provider
from memoryd.errors import MemorydError
from memoryd.eval import calibration
from memoryd.eval.baseline import Bm25Baseline, Chunk
from memoryd.eval.calibration import Asked
from memoryd.eval.dataset import EvalSet, Group, Qrel, write_workspace
from memoryd.eval.hookreplay import HookReplay
from memoryd.eval.metrics import (
    EvidenceLine,
    QuestionScore,
    Span,
    Summary,
    by_category,
    count_relevant,
    percentile,
    score_question,
    summarise,
)
from memoryd.hookblock import distinct, hits_of, render
from memoryd.hooksettings import HooksSettings
from memoryd.index.engine import IndexEngine, Progress, ProgressFn
from memoryd.search.features import RankingFeatures
from memoryd.search.keyword import total_chunks
from memoryd.search.request import SearchMode, SearchRequest, SearchResponse
from memoryd.search.searcher import Searcher
from memoryd.search.smallindex import size_share
from memoryd.store.db import connect, translated

TOP_K = 10
MIN_SCORE = 0.0
Mode = Literal["hybrid", "keyword", "vector", "bm25"]
MODES: tuple[Mode, ...] = ("hybrid", "keyword", "vector", "bm25")


@dataclass(frozen=True, slots=True)
class Variant:
    """Settings (a `[defaults]` table fragment) and ranking features one run uses."""

    name: str = "default"
    overrides: Mapping[str, Any] = field(default_factory=dict)
    features: RankingFeatures = field(default_factory=RankingFeatures)


DEFAULT = Variant()


@dataclass(frozen=True, slots=True)
class Served:
    """The answers users get: default min_score (and every other default), top 10."""

    overall: Summary
    empty: int  # answerable questions that got no result at all
    injected: Summary | None = None
    """What the prompt hook would inject for each question (`memoryd.hookblock`, `[hooks]` defaults):
    its snippets' lines as the ranking, so R@5 is the share of evidence lines inside the block."""

    def to_dict(self) -> dict[str, object]:
        n = self.overall.n
        out: dict[str, object] = {
            **self.overall.to_dict(),
            "empty": self.empty,
            "empty_share": round(self.empty / n, 4) if n else 0.0,
        }
        if self.injected is not None:
            out["hook_block"] = self.injected.to_dict()
        return out


@dataclass(frozen=True, slots=True)
class Abstention:
    """Questions of another group asked of an index that never mentions their subject."""

    asked: int
    empty: int
    by_set: Mapping[str, Abstention] = field(default_factory=dict)  # other sets' questions: per set asked
    quiet: int | None = None  # questions for which the prompt hook would inject nothing

    @property
    def rate(self) -> float:
        return self.empty / self.asked if self.asked else 0.0

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"asked": self.asked, "no_matches": self.empty, "rate": round(self.rate, 4)}
        if self.quiet is not None and self.asked:
            out["hook_nothing_injected"] = self.quiet
            out["hook_nothing_injected_rate"] = round(self.quiet / self.asked, 4)
        if self.by_set:
            out["by_set"] = {name: a.to_dict() for name, a in self.by_set.items()}
        return out


@dataclass(frozen=True, slots=True)
class EvalReport:
    overall: Summary
    by_category: dict[int, Summary]
    latency_p50_ms: float
    latency_p99_ms: float
    settings: dict[str, object] = field(default_factory=dict)
    served: Served | None = None
    abstention: Abstention | None = None
    other_sets: Abstention | None = None  # the other sets' questions (memoryd.eval.abstain)
    sweep: list[dict[str, float]] = field(default_factory=list)
    """As served at each min_score (`calibration.MIN_SCORES`), min_evidence at its default."""
    evidence_sweep: list[dict[str, float]] = field(default_factory=list)
    """As served at each min_evidence (`calibration.MIN_EVIDENCES`), min_score at its default; hybrid only."""
    hooks: HookReplay | None = None
    """The questions replayed through the real `memoryd hook` command (`eval --hooks`, memoryd.eval.hookrun)."""

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "overall": self.overall.to_dict(),
            "by_category": {str(c): s.to_dict() for c, s in self.by_category.items()},
            "latency_ms": {"p50": round(self.latency_p50_ms, 3), "p99": round(self.latency_p99_ms, 3)},
            "settings": self.settings,
        }
        if self.served is not None:
            out["served"] = self.served.to_dict()
        if self.abstention is not None:
            out["abstention"] = self.abstention.to_dict()
        if self.other_sets is not None:
            out["abstention_other_sets"] = self.other_sets.to_dict()
        if self.sweep:
            out["min_score_sweep"] = self.sweep
        if self.evidence_sweep:
            out["min_evidence_sweep"] = self.evidence_sweep
        if self.hooks is not None:
            out["hooks"] = self.hooks.to_dict()
        return out


@dataclass(slots=True)
class _Tally:
    """What the groups of one (variant, mode) run add up to."""

    scores: list[QuestionScore] = field(default_factory=list)
    served: list[QuestionScore] = field(default_factory=list)
    served_empty: int = 0
    injected: list[QuestionScore] = field(default_factory=list)
    abstain_asked: int = 0
    abstain_empty: int = 0
    abstain_quiet: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    asked: list[tuple[Asked, int]] = field(default_factory=list)
    """Per answerable question: its ranking (top 10 at min_score 0) and how many evidence lines it has."""
    probes_asked: list[Asked] = field(default_factory=list)
    """Per abstention probe: its ranking (only whether anything is served counts)."""
    chunks: int = 0
    index_s: float = 0.0
    query_s: float = 0.0


@dataclass(slots=True)
class _Progress:
    files_total: int
    progress: ProgressFn | None
    files: int = 0
    chunks: int = 0
    synced: int = 0  # chunks the current sync reported so far

    def report(self, p: Progress | None = None) -> None:
        """The engine reports per sync; the bar shows the whole run."""
        done, self.synced = (p.files_done, p.chunks) if p is not None else (0, self.synced)
        if self.progress is not None:
            self.progress(Progress("index", self.files + done, self.files_total, self.chunks + self.synced))

    def synced_group(self, files: int, chunks: int) -> None:
        """One index is synced: its files and chunks count towards the whole run."""
        self.files += files
        self.chunks += chunks
        self.synced = 0
        self.report()


def read_chunks(db_path: Path) -> list[Chunk]:
    """Every chunk's file, line range and text, as the index holds them."""
    conn, _vec = connect(db_path, readonly=True, vec_enabled=False)
    try:
        with translated(f"reading chunks of {db_path}"):
            rows: list[Any] = conn.execute("SELECT path, start_line, end_line, text FROM chunks").fetchall()
    finally:
        conn.close()
    return [Chunk(Span(str(path), int(start), int(end)), str(text)) for path, start, end, text in rows]


def read_chunk_spans(db_path: Path) -> list[Span]:
    """Every chunk's file and line range, for the size of each question's ideal ranking."""
    return [c.span for c in read_chunks(db_path)]


def _index_key(agent: AgentConfig) -> str:
    """What makes two variants need different indexes (the rest is search-time)."""
    s = agent.settings
    return f"{s.store.fts.tokenizer}-{s.chunking.tokens}-{s.chunking.overlap}-{s.chunking.transcripts}"


def agent_config(group: Group, root: Path, variant: Variant) -> AgentConfig:
    """The group's agent at the variant's settings. Every variant shares one database: a variant that
    changes the index (the tokenizer) rebuilds it safely, carrying the embedding cache over, so
    switching costs chunking and FTS, never re-embedding."""
    table: dict[str, Any] = {"agents": {group.agent_id: {"workspace": str(root / group.agent_id)}}}
    if variant.overrides:
        table["defaults"] = dict(variant.overrides)
    return config_mod.build(table, state_dir=root / "state").agent(group.agent_id)


def _covered(span: Span, q: Qrel) -> frozenset[EvidenceLine]:
    return frozenset(line for line in q.lines if span.covers(line))


def _score(ranked: Sequence[Span], q: Qrel, by_path: Mapping[str, list[Span]]) -> QuestionScore:
    candidates = [s for path in {p for p, _ in q.lines} for s in by_path.get(path, ())]
    return score_question(ranked, q.lines, count_relevant(candidates, q.lines), q.category)


@dataclass(frozen=True, slots=True)
class Ranking:
    """One question's top k at min_score 0 (no floor, no abstention) and the answer's evidence."""

    scored: list[tuple[Span, float]]
    evidence: float | None

    def asked(self, q: Qrel | None = None, *, share: float = 1.0) -> Asked:
        """For the calibration sweeps: each result's score and the evidence lines of `q` it covers; `share`
        is the answering index's (`index_share`)."""
        covered = [(score, _covered(span, q) if q else frozenset()) for span, score in self.scored]
        return Asked(covered, self.evidence, share)


async def index_share(engine: IndexEngine) -> float:
    """The share of the configured thresholds the engine's index applies (memoryd.search.smallindex)."""

    def size() -> int:
        with engine.database.readers.reader() as (conn, _vec):
            return total_chunks(conn)

    return size_share(await anyio.to_thread.run_sync(size))


async def _search(searcher: Searcher, mode: SearchMode, query: str, min_score: float | None) -> SearchResponse:
    resp = await searcher.search(SearchRequest(query, max_results=TOP_K, min_score=min_score, mode=mode))
    if resp.mode != mode:
        reason = (resp.fallback or {}).get("reason", "unknown")
        raise MemorydError(f"{mode} search did not run ({resp.mode} ran instead): {reason}")
    return resp


def _spans(resp: SearchResponse) -> list[tuple[Span, float]]:
    return [(Span(r.path, r.start_line, r.end_line), r.score) for r in resp.results]


HOOKS = HooksSettings()


def injected_spans(resp: SearchResponse) -> list[Span]:
    """The lines the prompt hook's block would hold for this served answer (`[hooks]` defaults; no
    session, so nothing is left out as already seen): its distinct snippets in order, within the budget
    (a repeated snippet is skipped, as `memoryd hook` skips it)."""
    hits = distinct(hits_of(resp.to_dict()))
    _block, shown = render(hits[: HOOKS.max_results], HOOKS.max_chars)
    return [Span(h.path, *h.lines) for h in shown if h.lines is not None]


async def search_served(searcher: Searcher, mode: SearchMode, query: str) -> SearchResponse:
    """The answer as served (the agent's min_score and evidence rule), top k."""
    return await _search(searcher, mode, query, None)


async def ask_scored(
    searcher: Searcher, mode: SearchMode, query: str, min_score: float | None
) -> list[tuple[Span, float]]:
    """The top-k spans of one question in `mode` and their scores; raises if another mode answered."""
    return _spans(await _search(searcher, mode, query, min_score))


async def ask_ranking(searcher: Searcher, mode: SearchMode, query: str) -> Ranking:
    """The ranking (min_score 0: no floor, no abstention) and its evidence."""
    resp = await _search(searcher, mode, query, MIN_SCORE)
    return Ranking(_spans(resp), resp.evidence)


async def ask(searcher: Searcher, mode: SearchMode, query: str, min_score: float | None) -> list[Span]:
    """The spans `ask_scored` returns, without their scores."""
    return [span for span, _score in await ask_scored(searcher, mode, query, min_score)]


async def _ask_group(
    engine: IndexEngine,
    agent: AgentConfig,
    *,
    variant: Variant,
    mode: Mode,
    questions: Sequence[Qrel],
    probes: Sequence[Qrel],
    tally: _Tally,
    as_served: bool,
) -> None:
    """Ask the group's questions (ranking and as served) and the other group's (abstention)."""
    chunks = await anyio.to_thread.run_sync(read_chunks, agent.db_path)
    by_path: dict[str, list[Span]] = {}
    for chunk in chunks:
        by_path.setdefault(chunk.span.path, []).append(chunk.span)
    tally.chunks += len(chunks)
    share = size_share(len(chunks))
    started = time.perf_counter()
    if mode == "bm25":
        baseline = Bm25Baseline(chunks)
        try:
            for q in questions:
                asked = time.perf_counter()
                ranked = baseline.rank(q.question, TOP_K)
                tally.latencies_ms.append((time.perf_counter() - asked) * 1000)
                tally.scores.append(_score(ranked, q, by_path))
        finally:
            baseline.close()
        tally.query_s += time.perf_counter() - started
        return
    search_mode: SearchMode = mode
    searcher = Searcher(
        agent.settings,
        engine.database.readers,
        engine.active,
        workspace=agent.workspace,
        freshness=engine.state.freshness,
        features=variant.features,
    )
    try:
        for q in questions:
            asked = time.perf_counter()
            ranking = await ask_ranking(searcher, search_mode, q.question)
            tally.latencies_ms.append((time.perf_counter() - asked) * 1000)
            ranked = [span for span, _ in ranking.scored]
            tally.scores.append(_score(ranked, q, by_path))
            tally.asked.append((ranking.asked(q, share=share), len(q.lines)))
            if not as_served:
                continue
            answer = await _search(searcher, search_mode, q.question, None)
            served = [span for span, _score in _spans(answer)]
            tally.served.append(_score(served, q, by_path))
            tally.served_empty += not served
            tally.injected.append(_score(injected_spans(answer), q, by_path))
        for q in probes if as_served else ():
            tally.abstain_asked += 1
            answer = await _search(searcher, search_mode, q.question, None)
            tally.abstain_empty += not answer.results
            tally.abstain_quiet += not injected_spans(answer)
            tally.probes_asked.append((await ask_ranking(searcher, search_mode, q.question)).asked(share=share))
    finally:
        await searcher.aclose()
    tally.query_s += time.perf_counter() - started


async def evaluate_set(
    eval_set: EvalSet,
    *,
    modes: Sequence[Mode],
    variants: Sequence[Variant] = (DEFAULT,),
    work_dir: Path,
    progress: ProgressFn | None = None,
    provider: EmbeddingProvider | None = None,
) -> dict[tuple[str, Mode], EvalReport]:
    """Every (variant, mode) over every group of the set. Only the first variant is also asked as served
    and for abstention (the ablation compares rankings). Variants sharing an index run back to back."""
    if provider is None and any(m in ("hybrid", "vector") for m in modes):
        raise MemorydError(f"{'/'.join(m for m in modes if m in ('hybrid', 'vector'))} search needs a provider")
    root = work_dir / eval_set.name
    groups = eval_set.groups
    tallies = {(v.name, m): _Tally() for v in variants for m in modes}
    keys = {_variant_key(groups[0], root, v) for v in variants} if groups else set()
    bar = _Progress(files_total=eval_set.files * len(keys), progress=progress)
    for index, group in enumerate(groups):
        await anyio.to_thread.run_sync(write_workspace, root / group.agent_id, group.files)
        probes = groups[(index + 1) % len(groups)].questions if len(groups) > 1 else ()
        by_key: dict[str, list[Variant]] = {}
        for v in variants:
            by_key.setdefault(_variant_key(group, root, v), []).append(v)
        for same_index in by_key.values():
            agent = agent_config(group, root, same_index[0])
            engine = IndexEngine(agent, provider)
            await engine.open()
            try:
                started = time.perf_counter()
                await engine.sync("eval", progress=bar.report)
                elapsed = time.perf_counter() - started
                chunk_count = len(await anyio.to_thread.run_sync(read_chunk_spans, agent.db_path))
                bar.synced_group(len(group.files), chunk_count)
                for v in same_index:
                    variant_agent = agent_config(group, root, v)
                    for m in modes:
                        tally = tallies[(v.name, m)]
                        tally.index_s += elapsed
                        await _ask_group(
                            engine,
                            variant_agent,
                            variant=v,
                            mode=m,
                            questions=group.questions,
                            probes=probes,
                            tally=tally,
                            as_served=v is variants[0],
                        )
            finally:
                await engine.aclose()
    return {
        key: _report(eval_set, key[1], tally, agent_config(groups[0], root, _by_name(variants, key[0])), provider)
        for key, tally in tallies.items()
    }


def _variant_key(group: Group, root: Path, variant: Variant) -> str:
    return _index_key(agent_config(group, root, variant))


def _by_name(variants: Sequence[Variant], name: str) -> Variant:
    return next(v for v in variants if v.name == name)


def _report(
    eval_set: EvalSet, mode: Mode, tally: _Tally, agent: AgentConfig, provider: EmbeddingProvider | None
) -> EvalReport:
    s = agent.settings
    searched = mode != "bm25"
    settings: dict[str, object] = {
        "dataset": eval_set.name,
        "source_sha256": eval_set.sha256,
        "mode": mode,
        "indexes": len(eval_set.groups),
        "chunks": tally.chunks,
        "chunk_tokens": s.chunking.tokens,
        "chunk_overlap": s.chunking.overlap,
        "chunk_transcripts": s.chunking.transcripts,
        "fts_tokenizer": s.store.fts.tokenizer if searched else "unicode61",
        "provider": provider.fingerprint.provider if provider and mode in ("hybrid", "vector") else "none",
        "model": provider.fingerprint.model if provider and mode in ("hybrid", "vector") else "fts-only",
        "k": TOP_K,
        "min_score": MIN_SCORE,
        "served_min_score": s.query.min_score,
        "served_min_evidence": s.query.min_evidence,  # hybrid only
        **eval_set.counts,
        "scored": len(tally.scores),
        "index_seconds": round(tally.index_s, 3),
        "query_seconds": round(tally.query_s, 3),
    }
    by_score, by_evidence = (
        calibration.sweeps(
            tally.asked, tally.probes_asked, min_score=s.query.min_score, min_evidence=s.query.min_evidence
        )
        if tally.served
        else ([], [])
    )
    return EvalReport(
        overall=summarise(tally.scores),
        by_category=by_category(tally.scores),
        latency_p50_ms=percentile(tally.latencies_ms, 50),
        latency_p99_ms=percentile(tally.latencies_ms, 99),
        settings=settings,
        served=Served(summarise(tally.served), tally.served_empty, summarise(tally.injected))
        if searched and tally.served
        else None,
        abstention=Abstention(tally.abstain_asked, tally.abstain_empty, quiet=tally.abstain_quiet)
        if searched and tally.abstain_asked
        else None,
        sweep=by_score,
        evidence_sweep=by_evidence,
    )


async def local_provider(modes: Sequence[Mode]) -> EmbeddingProvider | None:
    """The default provider when a mode needs vectors (the caller closes it), else None."""
    if not any(m in ("hybrid", "vector") for m in modes):
        return None
    selection = await select_provider(config_mod.build({}).defaults, cache_dir=paths.cache_dir())
    if selection.provider is None:
        raise MemorydError(f"{'/'.join(modes)} search needs an embedding provider: {selection.reason}")
    return selection.provider


async def evaluate(
    eval_set: EvalSet,
    *,
    mode: Mode,
    work_dir: Path,
    progress: ProgressFn | None = None,
    variant: Variant = DEFAULT,
) -> EvalReport:
    """One set in one mode at one variant's settings (the provider is loaded and closed here)."""
    provider = await local_provider([mode])
    try:
        reports = await evaluate_set(
            eval_set, modes=[mode], variants=[variant], work_dir=work_dir, progress=progress, provider=provider
        )
    finally:
        if provider is not None:
            await provider.aclose()
    return reports[(variant.name, mode)]
