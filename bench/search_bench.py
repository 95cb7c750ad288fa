"""Issue 4's search figures: the vector leg at 100k and 1M chunks (latency, top-10 overlap with exact
search), the keyword leg's tail on the synthetic corpus, and whole hybrid searches at 100k chunks.

Vectors are synthetic, 384-d like the default model's. Real embeddings are not uniform on the
sphere: they share a mean direction (all-MiniLM-L6-v2's mean vector has norm ~0.5 over LoCoMo) and
cluster by topic, and the "clustered" set imitates that (one cluster per 50 chunks around a shared
mean); queries are drawn like documents. The "isotropic" set (uniform random unit vectors, no
structure at all) is the worst case for the sign-bit coarse pass and is reported beside it.
"""

from __future__ import annotations

import functools
import re
import shutil
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import apsw
import numpy as np
import numpy.typing as npt
import orjson

from bench.corpus import CorpusSpec, Writer, write_corpus
from bench.report import percentile, table
from memoryd import config as config_mod
from memoryd.embeddings.local import LoadState, LocalEmbeddingProvider
from memoryd.index.engine import IndexEngine
from memoryd.search import vector as vector_mod
from memoryd.search.fuse import Candidate
from memoryd.search.pipeline import VECTOR_CANDIDATES, openclaw_keyword_only
from memoryd.search.relaxed import search_relaxed, total_chunks
from memoryd.sources.chunking import Chunk
from memoryd.store import schema
from memoryd.store.db import connect
from memoryd.store.index import IndexStore

DIMS = 384
PER_FILE = 1000
MODEL = "bench-model"
FLOAT_TABLE = "bench_float_vec"
"""The bench's own float vec0 table (the store keeps none since schema v3): the float KNN reference row."""
Floats = npt.NDArray[np.float32]


class VectorSet:
    """A reproducible stream of unit vectors: `clustered` (realistic) or `isotropic` (worst case)."""

    def __init__(self, kind: str, n: int, seed: int = 3, draws: int = 0) -> None:
        self.kind = kind
        self.rng = np.random.default_rng(seed)
        mean = self.rng.standard_normal(DIMS).astype(np.float32)
        self.mean = mean * np.float32(0.5 / np.linalg.norm(mean))
        centres = self.rng.standard_normal((max(1, n // 50), DIMS)).astype(np.float32)
        self.centres = centres / np.linalg.norm(centres, axis=1, keepdims=True)
        if draws:  # the same space (mean, centres), other points: queries
            self.rng = np.random.default_rng([seed, draws])

    def draw(self, count: int) -> Floats:
        if self.kind == "isotropic":
            rows = self.rng.standard_normal((count, DIMS)).astype(np.float32)
        else:
            picks = self.centres[self.rng.integers(0, len(self.centres), count)]
            noise = self.rng.standard_normal((count, DIMS)).astype(np.float32) * np.float32(0.6 / np.sqrt(DIMS))
            rows = self.mean + np.float32(0.6) * picks + noise
        out: Floats = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
        return out


def build_vectors(
    path: Path, kind: str, n: int, *, model: str = MODEL, texts: Callable[[int], list[str]] | None = None
) -> None:
    """Write an index of `n` chunks (a quarter of them transcripts) through the real store, once."""
    marker = path.with_suffix(".json")
    wanted = orjson.dumps({"kind": kind, "n": n, "model": model, "texts": texts is not None, "v": 3}).decode()
    if path.exists() and marker.exists() and marker.read_text() == wanted:
        return
    for leftover in path.parent.glob(path.name + "*"):
        leftover.unlink()
    conn, vec = connect(path, journal="off")
    try:
        schema.migrate(conn)
        schema.ensure_fts(conn, "unicode61")
        store = IndexStore(conn, vec)
        store.ensure_vectors(DIMS)
        vectors = VectorSet(kind, n)
        for f in range(-(-n // PER_FILE)):
            count = min(PER_FILE, n - f * PER_FILE)
            bodies = texts(count) if texts is not None else [f"chunk {f}-{i}" for i in range(count)]
            chunks = [Chunk(start_line=i + 1, end_line=i + 1, text=t, hash=f"{f}-{i}") for i, t in enumerate(bodies)]
            with store.transaction():
                store.replace_file(
                    source="memory" if f % 4 else "sessions",
                    path=f"memory/f{f:05d}.md",
                    file_hash=str(f),
                    mtime_ns=1,
                    size=1,
                    bad_lines=0,
                    chunks=chunks,
                    model=model,
                    vectors=vectors.draw(count),
                )
        conn.execute("PRAGMA journal_mode=WAL")
    finally:
        conn.close()
    marker.write_text(wanted)


def vector_rows(path: Path, kind: str, n: int, queries: int) -> list[list[object]]:
    """KNN through the binary table vs the exact matrix: latencies and top-10 overlap."""
    build_vectors(path, kind, n)
    _ensure_float_table(path)
    conn, _vec = connect(path, readonly=True)
    try:
        matrix = vector_mod.ExactMatrixCache().matrix(conn, MODEL, DIMS)
        qs = VectorSet(kind, n, draws=1).draw(queries)
        both = ("memory", "sessions")
        knn_ms: list[float] = []
        exact_ms: list[float] = []
        overlap = 0.0
        vector_mod.knn_binary(conn, qs[0], k=VECTOR_CANDIDATES, sources=both, model=MODEL)  # warm the cache
        for q in qs:
            t0 = time.perf_counter()
            got = vector_mod.knn_binary(conn, q, k=VECTOR_CANDIDATES, sources=both, model=MODEL)
            knn_ms.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            want = vector_mod.knn_exact(matrix, q, k=10, sources=both)
            exact_ms.append((time.perf_counter() - t0) * 1000)
            overlap += len({m for m, _s in got[:10]} & {m for m, _s in want}) / 10
        bits_ms: list[float] = []
        bits_overlap = 0.0
        in_memory = n <= vector_mod.BITS_IN_MEMORY_MAX
        if in_memory:
            cache = vector_mod.ExactMatrixCache()
            cache.bits(conn, MODEL, DIMS)  # loaded once per index generation (warmed after every sync)
            for q in qs:
                t0 = time.perf_counter()
                pool = vector_mod.coarse_in_memory(cache.bits(conn, MODEL, DIMS), q, k=VECTOR_CANDIDATES, sources=both)
                got = vector_mod.rescore(conn, q, pool, k=VECTOR_CANDIDATES, model=MODEL)
                bits_ms.append((time.perf_counter() - t0) * 1000)
                want = vector_mod.knn_exact(matrix, q, k=10, sources=both)
                bits_overlap += len({m for m, _s in got[:10]} & {m for m, _s in want}) / 10
        one_source = functools.partial(
            vector_mod.knn_binary, conn, k=VECTOR_CANDIDATES, sources=("memory",), model=MODEL
        )
        memory_ms = _timed([functools.partial(one_source, q) for q in qs[:20]])
        full_scan_ms = _timed([functools.partial(_float_scan, conn, q) for q in qs[:5]])
    finally:
        conn.close()
    bits_row: list[list[object]] = []
    if in_memory:
        label = "in-memory sign bits + exact rescoring (what search runs here)"
        bits_row = [[f"{n:,}", kind, label, *_p(bits_ms), f"{bits_overlap / len(qs):.3f}"]]
    return [
        *bits_row,
        [f"{n:,}", kind, "sqlite-vec bit KNN + exact rescoring (corpus all)", *_p(knn_ms), f"{overlap / len(qs):.3f}"],
        [f"{n:,}", kind, "  same, one source (memory = 3/4 of chunks)", *_p(memory_ms), ""],
        [f"{n:,}", kind, "exact in-process (numpy, matrix in RAM)", *_p(exact_ms), "1.000"],
        [f"{n:,}", kind, "sqlite-vec float KNN, k=10 (reference)", *_p(full_scan_ms), "1.000"],
    ]


def _ensure_float_table(path: Path) -> None:
    """Fill the bench's float table from the stored vectors, once per built index."""
    conn, _vec = connect(path)
    try:
        if not schema.table_exists(conn, FLOAT_TABLE):
            with conn:
                conn.execute(
                    f"CREATE VIRTUAL TABLE {FLOAT_TABLE} USING vec0(embedding float[{DIMS}] distance_metric=cosine)"
                )
                conn.execute(
                    f"INSERT INTO {FLOAT_TABLE}(rowid, embedding) SELECT n, embedding FROM chunks "
                    "WHERE embedding IS NOT NULL"
                )
    finally:
        conn.close()


def _float_scan(conn: apsw.Connection, q: Floats) -> None:
    conn.execute(f"SELECT rowid FROM {FLOAT_TABLE} WHERE embedding MATCH ? AND k = 10", (q.tobytes(),)).fetchall()


def _no_mtime(path: str) -> int | None:
    return None


def _timed(calls: Sequence[Callable[[], object]]) -> list[float]:
    out: list[float] = []
    for call in calls:
        t0 = time.perf_counter()
        call()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def _p(values: Sequence[float]) -> list[float]:
    return [percentile(values, 0.5), percentile(values, 0.99)]


def keyword_rows(out: Path, quick: bool, queries: int = 200) -> tuple[int, list[list[object]]]:
    """The relaxed keyword leg and OpenClaw's FTS path on the synthetic corpus of `make bench`."""
    spec = CorpusSpec(notes=1_000, transcripts=100) if quick else CorpusSpec()
    ws = write_corpus(out / "corpus", spec)
    state = out / "state-index"
    agent = config_mod.build({}, workspace=ws, state_dir=state).agent(None)
    settings = agent.settings

    async def ensure_index() -> None:
        engine = IndexEngine(agent)
        await engine.open()
        try:
            await engine.sync("bench")  # a delta: cheap when the corpus is the one indexed, whole when it changed
        finally:
            engine.close()

    anyio.run(ensure_index)
    w = Writer(CorpusSpec(seed=spec.seed + 1, vocabulary=spec.vocabulary))
    natural = [w.query() for _ in range(queries)]
    words = [str(x) for x in w.words[w.rng.choice(len(w.words), size=queries * 2, p=w.p)]]
    pairs = [f"{words[2 * i]} {words[2 * i + 1]}" for i in range(queries)]
    recalled = line_queries(ws, queries, [str(x) for x in Writer(spec).words], seed=spec.seed + 2)
    both = ("memory", "sessions")
    conn, _vec = connect(agent.db_path, readonly=True)
    try:
        chunks = total_chunks(conn)
        rows: list[list[object]] = []
        sets = (("natural question", natural), ("two words", pairs), ("a line recalled", [q for q, _p, _l in recalled]))
        for label, qs in sets:
            search_relaxed(conn, qs[0], limit=200, sources=both, tokenizer="unicode61")
            relaxed_leg = functools.partial(search_relaxed, conn, limit=200, sources=both, tokenizer="unicode61")
            relaxed = _timed([functools.partial(relaxed_leg, q) for q in qs])
            openclaw_leg = functools.partial(
                openclaw_keyword_only,
                conn,
                settings=settings,
                sources=both,
                max_results=6,
                min_score=0.35,
                now_ms=0,
                mtime_lookup=_no_mtime,
            )
            openclaw = _timed([functools.partial(openclaw_leg, q) for q in qs])
            all_words = _timed([functools.partial(qmd_shaped, conn, q) for q in qs])
            found = label == "a line recalled"
            hit_relaxed = _line_hits(recalled, relaxed_leg) if found else ""
            hit_openclaw = _line_hits(recalled, openclaw_leg) if found else ""
            hit_all = _line_hits(recalled, functools.partial(qmd_shaped, conn)) if found else ""
            rows.append([label, "relaxed OR (memoryd)", *_p(relaxed), max(relaxed), hit_relaxed])
            rows.append([label, "AND, then per keyword (OpenClaw)", *_p(openclaw), max(openclaw), hit_openclaw])
            rows.append([label, "every word, AND, prefix (qmd's BM25 query)", *_p(all_words), max(all_words), hit_all])
    finally:
        conn.close()
    return chunks, rows


def qmd_shaped(conn: apsw.Connection, query: str, limit: int = 20) -> list[Candidate]:
    """QMD's BM25 query on this index: every word of the question as a prefix, ANDed, bm25 order (its
    searchFTS: `"w1"* AND "w2"*`, LIMIT 20). The peer's query shape on the same FTS5 table, timed in the
    same run; the real CLI starts a Node process per search, which would time Node, not the query."""
    words = [w for w in (re.sub(r"[^\w']", "", t).lower() for t in query.split()) if w]
    if not words:
        return []
    match = " AND ".join(f'"{w}"*' for w in words)
    rows: list[Any] = conn.execute(
        "SELECT c.n, c.id, c.path, c.source, c.start_line, c.end_line FROM chunks_fts f "
        "JOIN chunks c ON c.n = f.rowid WHERE chunks_fts MATCH ? ORDER BY bm25(chunks_fts) LIMIT ?",
        (match, limit),
    ).fetchall()
    return [Candidate(str(i), str(p), str(s), int(a), int(b), "") for _n, i, p, s, a, b in rows]


def line_queries(ws: Path, n: int, vocabulary: Sequence[str], *, seed: int) -> list[tuple[str, str, int]]:
    """(question, path, line): the three rarest words of one bullet line of a random note, as a question.

    What a user recalls of a note is what sets it apart (a name, a term), asked among function words;
    the line's chunk must come back in the top 5 (line-hit@5). An all-words match (qmd's BM25) finds
    it only when the question holds no word the chunk lacks. `vocabulary` is in the corpus's Zipf
    order, commonest first.
    """
    rank = {word: i for i, word in enumerate(vocabulary)}
    rng = np.random.default_rng(seed)
    notes = sorted((ws / "memory").rglob("*.md"))
    out: list[tuple[str, str, int]] = []
    while len(out) < n:
        note = notes[int(rng.integers(len(notes)))]
        lines = note.read_text().splitlines()
        bullets = [i for i, line in enumerate(lines) if line.startswith("- ")]
        line_no = bullets[int(rng.integers(len(bullets)))]
        words = {t.strip(".,").lower() for t in lines[line_no][2:].split()} & rank.keys()
        if len(words) < 3:
            continue
        a, b, c = sorted(words, key=lambda w: -rank[w])[:3]
        out.append((f"what did we say about the {a} and {b} {c}?", note.relative_to(ws).as_posix(), line_no + 1))
    return out


def _line_hits(recalled: Sequence[tuple[str, str, int]], leg: Callable[[str], Sequence[object]]) -> float:
    """The share of recalled lines whose chunk is in the leg's top 5."""
    hits = 0
    for q, path, line in recalled:
        top = list(leg(q))[:5]
        hits += any(c.path == path and c.start_line <= line <= c.end_line for c in top)  # type: ignore[attr-defined]
    return hits / len(recalled)


async def hybrid_rows(out: Path, n: int, queries: int = 200) -> list[list[object]]:
    """Whole searches through the engine (query embedding by the local model included) at `n` chunks."""
    writer = Writer(CorpusSpec(seed=11))
    db = out / "search" / f"hybrid-{n}.sqlite"
    db.parent.mkdir(parents=True, exist_ok=True)
    provider = LocalEmbeddingProvider(out / "models")
    if await provider.load() is not LoadState.READY:
        return [[f"{n:,}", "skipped: the local model did not load", str(provider.error), "", ""]]
    texts = lambda count: [writer.sentence(40) for _ in range(count)]  # noqa: E731
    build_vectors(db, "clustered", n, model=provider.fingerprint.model, texts=texts)
    ws = out / "search" / "hybrid-ws"
    ws.mkdir(parents=True, exist_ok=True)
    agent = config_mod.build({"agents": {"bench": {"workspace": str(ws), "store": {"path": str(db)}}}}).agent("bench")
    engine = IndexEngine(agent, provider, hold_writer_lock=False)
    await engine.open()
    qs = [writer.query() for _ in range(queries)]
    rows: list[list[object]] = []
    try:
        for mode in ("hybrid", "keyword", "vector"):
            await engine.search(qs[0], mode=mode)
            lat: list[float] = []
            for q in qs:
                t0 = time.perf_counter()
                resp = await engine.search(q, mode=mode)
                lat.append((time.perf_counter() - t0) * 1000)
            rows.append([f"{n:,}", mode, resp.vector_backend or "", *_p(lat)])
        embed = await _timed_async([functools.partial(provider.embed_query, q) for q in qs[:100]])
        rows.append([f"{n:,}", "query embedding alone", provider.model, *_p(embed)])
    finally:
        engine.close()
        await provider.aclose()
    return rows


async def _timed_async(calls: Sequence[Callable[[], Awaitable[object]]]) -> list[float]:
    out: list[float] = []
    for call in calls:
        t0 = time.perf_counter()
        await call()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main(out: Path, quick: bool) -> None:
    sizes = (20_000,) if quick else (100_000, 1_000_000)
    queries = 20 if quick else 100
    folder = out / "search"
    folder.mkdir(parents=True, exist_ok=True)
    rows: list[list[object]] = []
    for n in sizes:
        rows += vector_rows(folder / f"clustered-{n}.sqlite", "clustered", n, queries)
    rows += vector_rows(folder / f"isotropic-{sizes[0]}.sqlite", "isotropic", sizes[0], queries)
    table(
        f"Vector leg, 384-d, k={VECTOR_CANDIDATES} ({queries} queries; overlap = share of the exact top 10 found)",
        ["chunks", "vectors", "search", "p50 ms", "p99 ms", "top-10 overlap"],
        rows,
    )
    table(
        "Vector leg targets",
        ["target", "value"],
        [["p50 at 100k", "<= 10 ms"], ["p50 at 1M", "<= 50 ms"], ["top-10 overlap", ">= 0.99"]],
    )
    chunks, krows = keyword_rows(out, quick)
    table(
        f"Keyword leg latency at {chunks:,} chunks (200 queries each, in-process)",
        ["queries", "leg", "p50 ms", "p99 ms", "max ms", "line-hit@5"],
        krows,
    )
    hybrid_n = 20_000 if quick else 100_000
    table(
        f"Whole searches through the engine at {hybrid_n:,} chunks (local model embeds the query; target p50 <= 15 ms)",
        ["chunks", "mode", "vector backend", "p50 ms", "p99 ms"],
        anyio.run(hybrid_rows, out, hybrid_n),
    )
    shutil.rmtree(folder / "hybrid-ws", ignore_errors=True)
