"""LoCoMo through memoryd's real pipeline: write workspaces, index them, ask every question, score.

Indexes are built exactly as the daemon builds them (default settings, `IndexEngine.sync`) and searched
through the engine's `Searcher` as the daemon searches them, one per
conversation or one pooled index of all of them; every question is asked with min_score 0 and
the top 10 kept, and the latency of each search is measured around the engine call.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio.to_thread

from memoryd import config as config_mod
from memoryd import paths
from memoryd.config import AgentConfig
from memoryd.embeddings.base import EmbeddingProvider
from memoryd.embeddings.select import select_provider
from memoryd.errors import MemorydError
from memoryd.eval import locomo
from memoryd.eval.locomo import Conversation, Dataset, Qrel
from memoryd.eval.metrics import (
    QuestionScore,
    Span,
    Summary,
    by_category,
    count_relevant,
    percentile,
    score_question,
    summarise,
)
from memoryd.index.engine import IndexEngine, Progress, ProgressFn
from memoryd.search.pipeline import Mode
from memoryd.search.request import SearchRequest
from memoryd.store.db import connect, translated

TOP_K = 10
MIN_SCORE = 0.0
POOL_ID = "locomo-pool"

SearchFn = Callable[[IndexEngine, str], Awaitable[list[Span]]]


def searcher(mode: Mode) -> SearchFn:
    """The one place the harness picks a search mode (hybrid and vector need the engine's provider)."""

    async def search(engine: IndexEngine, query: str) -> list[Span]:
        resp = await engine.searcher.search(SearchRequest(query, max_results=TOP_K, min_score=MIN_SCORE, mode=mode))
        if resp.mode != mode:
            reason = (resp.fallback or {}).get("reason", "unknown")
            raise MemorydError(f"{mode} search did not run ({resp.mode} ran instead): {reason}")
        return [Span(r.path, r.start_line, r.end_line) for r in resp.results]

    return search


@dataclass(frozen=True, slots=True)
class EvalReport:
    overall: Summary
    by_category: dict[int, Summary]
    latency_p50_ms: float
    latency_p99_ms: float
    settings: dict[str, object] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {
            "overall": self.overall.to_dict(),
            "by_category": {str(c): s.to_dict() for c, s in self.by_category.items()},
            "latency_ms": {"p50": round(self.latency_p50_ms, 3), "p99": round(self.latency_p99_ms, 3)},
            "settings": self.settings,
        }


@dataclass(frozen=True, slots=True)
class _Group:
    """The conversations that share one index."""

    agent_id: str
    conversations: tuple[Conversation, ...]


@dataclass(slots=True)
class _Tally:
    """What the groups add up to while the run goes on."""

    files_total: int
    progress: ProgressFn | None
    scores: list[QuestionScore] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    files: int = 0
    chunks: int = 0
    index_s: float = 0.0
    query_s: float = 0.0

    def report_progress(self, p: Progress | None = None) -> None:
        """The engine reports per sync; the bar shows the whole run."""
        if self.progress is not None:
            done, chunks = (p.files_done, p.chunks) if p is not None else (0, 0)
            self.progress(Progress("index", self.files + done, self.files_total, self.chunks + chunks))


def read_chunk_spans(db_path: Path) -> list[Span]:
    """Every chunk's file and line range, for the size of each question's ideal ranking."""
    conn, _vec = connect(db_path, readonly=True, vec_enabled=False)
    try:
        with translated(f"reading chunks of {db_path}"):
            rows: list[Any] = conn.execute("SELECT path, start_line, end_line FROM chunks").fetchall()
    finally:
        conn.close()
    return [Span(str(path), int(start), int(end)) for path, start, end in rows]


def _spans_by_path(spans: Sequence[Span]) -> dict[str, list[Span]]:
    out: dict[str, list[Span]] = {}
    for span in spans:
        out.setdefault(span.path, []).append(span)
    return out


async def _run_group(
    group: _Group, pool: bool, root: Path, search: SearchFn, tally: _Tally, *, provider: EmbeddingProvider | None
) -> AgentConfig:
    """Write one index's workspace, sync it with the real engine, then ask and score its questions."""
    workspace = root / group.agent_id
    files: dict[str, str] = {}
    questions: list[Qrel] = []
    for conv in group.conversations:
        files.update(locomo.workspace_files(conv, pooled=pool))
        questions.extend(locomo.qrels(conv, pooled=pool))
    await anyio.to_thread.run_sync(locomo.write_workspace, workspace, files)
    table = {"agents": {group.agent_id: {"workspace": str(workspace)}}}
    agent = config_mod.build(table, state_dir=root / "state").agent(group.agent_id)
    engine = IndexEngine(agent, provider)
    await engine.open()
    try:
        started = time.perf_counter()
        await engine.sync("eval", progress=tally.report_progress)
        tally.index_s += time.perf_counter() - started
        spans = await anyio.to_thread.run_sync(read_chunk_spans, agent.db_path)
        tally.files += len(files)
        tally.chunks += len(spans)
        tally.report_progress()
        by_path = _spans_by_path(spans)
        started = time.perf_counter()
        for q in questions:
            asked = time.perf_counter()
            ranked = await search(engine, q.question)
            tally.latencies_ms.append((time.perf_counter() - asked) * 1000)
            candidates = [s for path in {p for p, _ in q.lines} for s in by_path.get(path, ())]
            ideal = count_relevant(candidates, q.lines)
            tally.scores.append(score_question(ranked, q.lines, ideal, q.category))
        tally.query_s += time.perf_counter() - started
    finally:
        await engine.aclose()
    return agent


async def evaluate(
    dataset: Dataset,
    *,
    mode: Mode,
    pool: bool,
    work_dir: Path,
    progress: ProgressFn | None = None,
) -> EvalReport:
    """Index every group (one per conversation, or all pooled), ask its questions, and score them."""
    search = searcher(mode)
    convs = dataset.conversations
    groups = [_Group(POOL_ID, convs)] if pool else [_Group(c.sample_id, (c,)) for c in convs]
    tally = _Tally(files_total=sum(len(c.sessions) for c in convs), progress=progress)
    provider: EmbeddingProvider | None = None
    if mode != "keyword":
        selection = await select_provider(config_mod.build({}).defaults, cache_dir=paths.cache_dir())
        if selection.provider is None:
            raise MemorydError(f"{mode} search needs an embedding provider: {selection.reason}")
        provider = selection.provider
    try:
        agents = [await _run_group(g, pool, work_dir, search, tally, provider=provider) for g in groups]
    finally:
        if provider is not None:
            await provider.aclose()
    chunking = agents[0].settings.chunking
    settings: dict[str, object] = {
        "dataset": "locomo",
        "source_sha256": dataset.sha256,
        "mode": mode,
        "pool": pool,
        "indexes": len(groups),
        "chunks": tally.chunks,
        "chunk_tokens": chunking.tokens,
        "chunk_overlap": chunking.overlap,
        "fts_tokenizer": agents[0].settings.store.fts.tokenizer,
        "provider": provider.fingerprint.provider if provider else "none",
        "model": provider.fingerprint.model if provider else "fts-only",
        "k": TOP_K,
        "min_score": MIN_SCORE,
        **locomo.counts(convs),
        "scored": len(tally.scores),
        "index_seconds": round(tally.index_s, 3),
        "query_seconds": round(tally.query_s, 3),
    }
    return EvalReport(
        overall=summarise(tally.scores),
        by_category=by_category(tally.scores),
        latency_p50_ms=percentile(tally.latencies_ms, 50),
        latency_p99_ms=percentile(tally.latencies_ms, 99),
        settings=settings,
    )
