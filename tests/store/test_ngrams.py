"""The CJK side index: what is stored for a chunk, what a query looks for, and how old indexes get it."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from memoryd.sources.chunking import Chunk, hash_text
from memoryd.store import schema
from memoryd.store.db import connect
from memoryd.store.index import IndexStore
from memoryd.store.ngrams import has_cjk, query_ngrams, side_document


def test_text_without_cjk_has_no_side_document() -> None:
    assert side_document("Plain English and café") == ""


def test_chinese_runs_give_characters_and_adjacent_pairs() -> None:
    assert side_document("部署方案") == "部 署 方 案 部署 署方 方案"


def test_latin_parts_of_mixed_words_are_kept_whole() -> None:
    assert side_document("使用API接口") == "使 用 使用 API 接 口 接口"


def test_korean_words_with_particles_contain_the_bare_word() -> None:
    assert "회의" in side_document("회의에서 논의했다").split()


def test_query_words_are_cut_into_pairs_and_lone_characters_stay_whole() -> None:
    assert query_ngrams("部署方案") == ["部署", "署方", "方案"]
    assert query_ngrams("猫") == ["猫"]
    assert query_ngrams("api接口") == ["api", "接口"]


@given(st.text(alphabet=st.sampled_from("部署方案会議予算회의디자인API x"), min_size=1, max_size=30))
def test_every_pair_a_query_looks_for_is_stored_for_text_that_contains_the_query(text: str) -> None:
    stored = set(side_document(text).lower().split())
    for word in text.split():
        if has_cjk(word):
            assert set(query_ngrams(word)) <= stored


def test_migrating_a_v1_index_fills_the_side_index(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    conn, _vec = connect(path)
    schema.STEPS[0](conn)
    conn.execute("PRAGMA user_version=1")
    conn.execute(
        "INSERT INTO chunks(id, path, source, start_line, end_line, hash, model, text, updated_at) "
        "VALUES('a', 'memory/zh.md', 'memory', 1, 1, 'h', 'm', '之前讨论的部署方案', 0)"
    )
    schema.migrate(conn)
    rows = conn.execute(f"SELECT rowid FROM {schema.CJK_TABLE} WHERE {schema.CJK_TABLE} MATCH '\"方案\"'").fetchall()
    assert rows == [(1,)]


def test_replacing_and_deleting_files_keeps_the_side_index_in_step(tmp_path: Path) -> None:
    conn, vec = connect(tmp_path / "index.sqlite")
    schema.migrate(conn)
    schema.ensure_fts(conn, "unicode61")
    store = IndexStore(conn, vec)

    def put(text: str) -> None:
        with store.transaction():
            store.replace_file(
                source="memory",
                path="memory/zh.md",
                file_hash=hash_text(text),
                mtime_ns=1,
                size=1,
                bad_lines=0,
                chunks=[Chunk(start_line=1, end_line=1, text=text, hash=hash_text(text))],
                model="m",
                vectors=None,
            )

    def side_hits(term: str) -> int:
        row = conn.execute(
            f"SELECT COUNT(*) FROM {schema.CJK_TABLE} WHERE {schema.CJK_TABLE} MATCH ?", (f'"{term}"',)
        ).fetchone()
        return int(row[0]) if row else 0

    put("部署方案")
    assert side_hits("方案") == 1
    put("会议记录")
    assert (side_hits("方案"), side_hits("记录")) == (0, 1)
    with store.transaction():
        store.delete_files("memory", ["memory/zh.md"])
    assert side_hits("记录") == 0
    conn.execute(f"INSERT INTO {schema.CJK_TABLE}({schema.CJK_TABLE}) VALUES('integrity-check')")  # raises if not
