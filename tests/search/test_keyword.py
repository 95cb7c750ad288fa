"""The relaxed keyword leg on a real FTS5 index: OR of content words, coverage and phrase rewards,
common words kept out of the ranking, CJK through the side index."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from memoryd.search import relaxed as kw
from memoryd.search.relaxed import plan_query, search_relaxed, total_chunks
from memoryd.sources.chunking import Chunk, hash_text
from memoryd.store import schema
from memoryd.store.db import connect
from memoryd.store.index import IndexStore

BOTH = ("memory", "sessions")


@pytest.fixture
def store(tmp_path: Path) -> IndexStore:
    conn, vec = connect(tmp_path / "index.sqlite")
    schema.migrate(conn)
    schema.ensure_fts(conn, "unicode61")
    return IndexStore(conn, vec)


def put(store: IndexStore, path: str, texts: Sequence[str], source: str = "memory") -> None:
    with store.transaction():
        store.replace_file(
            source=source,
            path=path,
            file_hash=hash_text("".join(texts)),
            mtime_ns=1,
            size=1,
            bad_lines=0,
            chunks=[Chunk(start_line=i + 1, end_line=i + 1, text=t, hash=hash_text(t)) for i, t in enumerate(texts)],
            model="m",
            vectors=None,
        )


def paths(store: IndexStore, query: str, sources: Sequence[str] = BOTH, limit: int = 10) -> list[str]:
    """The content-word hits (stop-word-only hits, keyword-only's bm25 fallback, have `absolute` 0)."""
    found = search_relaxed(store.conn, query, limit=limit, sources=sources, tokenizer="unicode61")
    return [c.path for c in found if c.absolute != 0.0]


def test_bm25_order_with_bounded_factors_and_the_stop_word_fallback_after(store: IndexStore) -> None:
    put(store, "rare.md", ["The zeppelin hangar."])
    put(store, "common.md", ["My hangar, my hangar, my old hangar by the shed."])
    put(store, "stop.md", ["What is it that I do?"])
    found = search_relaxed(
        store.conn, "what do I keep in the zeppelin hangar", limit=10, sources=BOTH, tokenizer="unicode61"
    )
    assert [c.path for c in found] == ["rare.md", "common.md", "stop.md"]
    rare, common, stop = found
    assert rare.absolute is not None and rare.score == pytest.approx(max(rare.absolute, common.absolute or 0.0))
    assert 0 < common.score < rare.score
    assert stop.absolute == 0.0 and 0 < stop.score <= kw.FALLBACK_LEVEL  # ranked, never served at a min_score
    found = search_relaxed(store.conn, "what is my blimp", limit=10, sources=BOTH, tokenizer="unicode61")
    assert {c.path for c in found} == {"stop.md", "common.md"}  # no content word anywhere: plain bm25's hits
    assert all(c.absolute == 0.0 for c in found)


def test_a_question_finds_a_chunk_that_has_only_some_of_its_words(store: IndexStore) -> None:
    put(store, "a.md", ["Caroline went to the LGBTQ support group on Sunday."])
    put(store, "b.md", ["Melanie painted a sunrise over the lake."])
    assert paths(store, "When did Caroline go to the support group meeting?") == ["a.md"]


def test_a_query_of_stop_words_and_filler_verbs_looks_for_nothing(store: IndexStore) -> None:
    put(store, "a.md", ["What did we say about the thing?"])
    assert plan_query("what did we say about the thing?").units == ()
    assert paths(store, "what did we say about the thing?") == []


def test_chunks_covering_more_of_the_question_rank_higher(store: IndexStore) -> None:
    put(store, "one-word.md", ["pottery pottery pottery pottery class notes"])
    put(store, "both-words.md", ["The pottery workshop starts in July."])
    put(store, "other.md", ["Nothing relevant here at all."])
    hits = search_relaxed(store.conn, "pottery workshop", limit=10, sources=BOTH, tokenizer="unicode61")
    assert [h.path for h in hits] == ["both-words.md", "one-word.md"]
    assert hits[0].score > hits[1].score


def test_words_kept_together_beat_the_same_words_apart(store: IndexStore) -> None:
    put(store, "apart.md", ["A group of friends met; support came later."])
    put(store, "together.md", ["She found a support group that met weekly."])
    assert paths(store, "support group")[0] == "together.md"


def test_scores_are_in_the_unit_interval_and_text_scores_follow_the_bm25_mapping(store: IndexStore) -> None:
    put(store, "a.md", ["alpha beta gamma", "alpha delta", "epsilon"])
    for hit in search_relaxed(store.conn, "alpha beta", limit=10, sources=BOTH, tokenizer="unicode61"):
        assert 0 < hit.text_score < 1
        assert 0 <= hit.score <= 1


def test_sources_are_filtered(store: IndexStore) -> None:
    put(store, "m.md", ["lighthouse keeper"])
    put(store, "s.jsonl", ["lighthouse tour"], source="sessions")
    assert paths(store, "lighthouse", sources=("sessions",)) == ["s.jsonl"]
    assert sorted(paths(store, "lighthouse")) == ["m.md", "s.jsonl"]


def test_a_word_in_most_chunks_is_left_out_of_the_ranking_but_still_counts(
    store: IndexStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kw, "MIN_DF_CAP", 5)
    put(store, "common.md", [f"widget note number {i}" for i in range(60)])
    put(store, "rare.md", ["widget for the zebra enclosure"])
    hits = search_relaxed(store.conn, "widget zebra", limit=10, sources=BOTH, tokenizer="unicode61")
    assert [h.path for h in hits] == ["rare.md"]  # "widget" alone would have matched all 61 chunks
    assert hits[0].score > 0.5  # ...and it still counts towards coverage


def test_when_every_word_is_common_the_newest_chunks_are_ranked(
    store: IndexStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kw, "MIN_DF_CAP", 5)
    monkeypatch.setattr(kw, "RECENT_WINDOW", 10)
    put(store, "old.md", [f"widget note number {i}" for i in range(60)])
    put(store, "new.md", ["widget at the end"])
    found = paths(store, "widget", limit=100)
    assert "new.md" in found
    assert len(found) <= 10


def test_total_chunks_reads_the_fts_row_count_through_writes_and_deletes(store: IndexStore) -> None:
    assert total_chunks(store.conn) == 0
    put(store, "a.md", [f"chunk {i}" for i in range(300)])
    put(store, "b.md", ["one more"])
    assert total_chunks(store.conn) == 301
    put(store, "a.md", [f"chunk {i}" for i in range(200)])
    with store.transaction():
        store.delete_files("memory", ["b.md"])
    assert total_chunks(store.conn) == 200


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("我们之前讨论的部署方案是使用容器。", "部署方案"),
        ("我们之前讨论的部署方案是使用容器。", "之前讨论的那个方案"),
        ("新的API接口已经上线。", "API"),
        ("会議で話した予算は来月に承認される予定です。", "予算の承認"),
        ("어제 회의에서 새로운 디자인 시안을 논의했다.", "디자인 회의"),
        ("Guardé el pasaporte en el cajón del escritorio.", "¿Dónde guardé el pasaporte?"),
        ("Guardé el pasaporte en el cajón del escritorio.", "cajon"),
        ("موعد طبيب الأسنان يوم الخميس القادم.", "طبيب الأسنان"),
    ],
)
def test_queries_in_every_language_find_their_text(store: IndexStore, text: str, query: str) -> None:
    put(store, "target.md", [text])
    put(store, "noise.md", ["Completely unrelated English text about bicycles.", "自行车 자전거 自転車"])
    hits = search_relaxed(store.conn, query, limit=10, sources=BOTH, tokenizer="unicode61")
    assert hits and hits[0].path == "target.md"
    assert hits[0].score >= 0.35


def test_the_trigram_tokenizer_uses_the_side_index_for_short_cjk_words(tmp_path: Path) -> None:
    conn, vec = connect(tmp_path / "tri.sqlite")
    schema.migrate(conn)
    schema.ensure_fts(conn, "trigram")
    store = IndexStore(conn, vec)
    put(store, "zh.md", ["部署方案已经确定"])
    put(store, "en.md", ["deployment plan settled"])
    assert [h.path for h in search_relaxed(conn, "方案", limit=5, sources=BOTH, tokenizer="trigram")] == ["zh.md"]
    assert [h.path for h in search_relaxed(conn, "deployment", limit=5, sources=BOTH, tokenizer="trigram")] == ["en.md"]


def test_coverage_counts_word_endings_but_not_longer_words(store: IndexStore) -> None:
    put(store, "a.md", ["the report on item50 and item51"])
    put(store, "b.md", ["the report on item5"])
    put(store, "c.md", ["report: two meetings about hiking"])

    def scores(query: str) -> dict[str, float]:
        hits = search_relaxed(store.conn, query, limit=10, sources=BOTH, tokenizer="unicode61")
        return {h.path: h.score for h in hits}

    # a.md shares only "report", which every chunk has: "item50" is not "item5".
    found = scores("report item5")
    assert found["b.md"] > 0.5 > 0.1 > found["a.md"]
    # "reports" is found as "report" (FTS5 found b.md through "item5"): b.md covers the whole query.
    assert scores("reports item5")["b.md"] > 0.5


def test_word_counts_are_read_once_while_the_index_is_unchanged_and_again_after_any_commit(
    store: IndexStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    put(store, "a.md", ["The zeppelin hangar."])
    reader, _vec = connect(tmp_path / "index.sqlite", readonly=True)
    counted: list[str] = []
    real = kw.capped_df

    def counting(conn: object, table: str, term: str, cap: int) -> int:
        counted.append(term)
        return real(conn, table, term, cap)  # type: ignore[arg-type]

    monkeypatch.setattr(kw, "capped_df", counting)

    def ask() -> list[str]:
        found = search_relaxed(reader, "zeppelin blimp", limit=10, sources=BOTH, tokenizer="unicode61")
        return [c.path for c in found]

    assert ask() == ["a.md"]
    first = len(counted)
    assert first > 0 and ask() == ["a.md"] and len(counted) == first  # the counts were kept
    put(store, "b.md", ["A blimp."])  # another connection commits: the reader's counts are stale
    assert sorted(ask()) == ["a.md", "b.md"] and len(counted) > first
    reader.close()
    search_relaxed(store.conn, "blimp", limit=10, sources=BOTH, tokenizer="unicode61")
    before = len(counted)
    put(store, "c.md", ["Another blimp."])  # this connection's own commit counts too
    found = search_relaxed(store.conn, "blimp", limit=10, sources=BOTH, tokenizer="unicode61")
    assert len(counted) > before and sorted(c.path for c in found) == ["b.md", "c.md"]
