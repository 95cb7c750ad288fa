"""QMD hits mapped to memoryd results: paths, lines, snippets, ordering and the budgets of spec §4.5."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from memoryd.qmd.collections import ManagedCollection
from memoryd.qmd.exporter import ExportedSession
from memoryd.qmd.parse import QmdHit
from memoryd.qmd.results import (
    ResultLimits,
    ResultMapper,
    best_per_document,
    clamp_injected,
    hit_lines,
    interleave_sources,
)
from memoryd.search.pipeline import SearchResult
from memoryd.search.scoring import utf16_len
from tests.conftest import write

LIMITS = ResultLimits(max_results=6, max_snippet_chars=700, max_injected_chars=4000)


def hit(collection: str, path: str, score: float = 0.5, snippet: str = "text", docid: str = "", **kw: int) -> QmdHit:
    return QmdHit(docid or f"{collection}/{path}", score, collection, path, snippet, **kw)


def mapper_for(ws: Path, *extra: ManagedCollection, **kw: object) -> ResultMapper:
    collections = (
        ManagedCollection("memory-root-main", ws, "MEMORY.md", "memory"),
        ManagedCollection("memory-dir-main", ws / "memory", "**/*.md", "memory"),
        *extra,
    )
    return ResultMapper(ws, collections, **kw)  # type: ignore[arg-type]


def test_hits_in_the_workspace_are_cited_like_the_builtin_index_cites_them(tmp_path: Path) -> None:
    results = mapper_for(tmp_path).map(
        [hit("memory-dir-main", "2026/Jan notes.md", snippet="@@ -5,3 @@ (4 before, 0 after)\nMore\nbiscuit\n")],
        LIMITS,
    )
    assert [(r.path, r.start_line, r.end_line, r.snippet, r.source) for r in results] == [
        ("memory/2026/Jan notes.md", 5, 6, "More\nbiscuit", "memory")  # the header's range, cut to what is shown
    ]


def test_hits_outside_the_workspace_get_a_qmd_path(tmp_path: Path) -> None:
    team = ManagedCollection("team", tmp_path / "elsewhere", "**/*.md", "custom")
    inside_qmd = ManagedCollection("odd-main", tmp_path / "ws" / "qmd", "**/*.md", "custom")
    mapper = mapper_for(tmp_path / "ws", team, inside_qmd)
    results = mapper.map([hit("team", "a/b.md", 0.9), hit("odd-main", "c.md", 0.8)], LIMITS)
    assert [r.path for r in results] == ["qmd/team/a/b.md", "qmd/odd-main/c.md"]
    assert {r.source for r in results} == {"memory"}


def test_session_exports_are_cited_as_the_transcript_at_its_jsonl_lines(tmp_path: Path) -> None:
    sessions = ManagedCollection("sessions-main", tmp_path / "export", "**/*.md", "sessions")
    origin = ExportedSession("sessions/s1.jsonl", (2, 4, 5), 0, "h")
    mapper = mapper_for(tmp_path / "ws", sessions, exports=lambda: {"s1.md": origin})
    snippet = "@@ -4,2 @@ (3 before, 0 after)\nAssistant: booked\nUser: thanks\n"
    (result,) = mapper.map([hit("sessions-main", "s1.md", snippet=snippet)], LIMITS)
    assert (result.path, result.start_line, result.end_line, result.source) == ("sessions/s1.jsonl", 4, 5, "sessions")
    (unknown,) = mapper.map([hit("sessions-main", "s9.md")], LIMITS)
    assert unknown.path == "qmd/sessions-main/s9.md"


def test_lines_come_from_fields_then_the_header_then_the_matched_line_then_the_snippet() -> None:
    assert hit_lines(hit("c", "p", start_line=9, end_line=4), "x") == (4, 9)
    assert hit_lines(hit("c", "p", start_line=7), "@@ -2,3 @@\na\nb\nc") == (7, 9)
    assert hit_lines(hit("c", "p", end_line=7), "@@ -2,3 @@\na\nb\nc") == (5, 7)
    assert hit_lines(hit("c", "p", line=6), "@@ -5,3 @@\na\nb\n") == (5, 6)
    assert hit_lines(hit("c", "p", line=6), "no header") == (6, 6)
    assert hit_lines(hit("c", "p"), "one\ntwo\nthree") == (1, 3)


def test_blank_lines_opening_a_snippet_move_its_start(tmp_path: Path) -> None:
    snippet = "@@ -2,4 @@ (1 before, 0 after)\n\n- My dog Biscuit.\n- Editor: helix.\n"
    (r,) = mapper_for(tmp_path).map([hit("memory-root-main", "MEMORY.md", snippet=snippet)], LIMITS)
    assert (r.path, r.start_line, r.end_line, r.snippet) == ("MEMORY.md", 3, 4, "- My dog Biscuit.\n- Editor: helix.")


def test_the_best_score_per_document_wins_and_low_scores_are_dropped(tmp_path: Path) -> None:
    hits = [
        hit("memory-root-main", "MEMORY.md", 0.2, docid="d1"),
        hit("memory-dir-main", "x.md", 0.9, docid="d1"),
        hit("memory-dir-main", "y.md", 0.1, docid="d2"),
    ]
    assert [(h.docid, h.score) for h in best_per_document(hits)] == [("d1", 0.9), ("d2", 0.1)]
    limits = ResultLimits(6, 700, 4000, min_score=0.15)
    assert [r.path for r in mapper_for(tmp_path).map(hits, limits)] == ["memory/x.md"]


def test_snippets_are_cut_and_the_total_is_clamped(tmp_path: Path) -> None:
    hits = [hit("memory-dir-main", f"{i}.md", 1 - i / 10, snippet="é" * 500) for i in range(5)]
    results = mapper_for(tmp_path).map(hits, ResultLimits(max_results=4, max_snippet_chars=300, max_injected_chars=700))
    assert [len(r.snippet) for r in results] == [300, 300, 100]


def test_a_hit_naming_no_file_is_found_through_qmds_document_table(tmp_path: Path) -> None:
    write(tmp_path / "memory" / "real.md", "x\n")
    looked_up: list[str] = []

    def lookup(docid: str) -> list[tuple[str, str]]:
        looked_up.append(docid)
        return [("other", "zzz.md"), ("memory-dir-main", "real.md")] if docid == "abc123" else []

    mapper = mapper_for(tmp_path, lookup=lookup)
    results = mapper.map([QmdHit("abc123", 0.5, "", "", "snippet"), hit("memory-dir-main", "real.md")], LIMITS)
    assert [r.path for r in results] == ["memory/real.md", "memory/real.md"]
    assert looked_up == ["abc123"]
    assert mapper.map([QmdHit("nomatch", 0.5, "", "", "s")], LIMITS) == []  # nowhere to cite: dropped


def result(source: str, score: float, snippet: str = "s") -> SearchResult:
    return SearchResult(f"{source}-{score}", 1, 1, score, snippet, source)


def test_memory_and_sessions_take_turns_led_by_the_best_source() -> None:
    ranked = [result("sessions", 0.9), result("sessions", 0.8), result("sessions", 0.7), result("memory", 0.5)]
    assert [r.path for r in interleave_sources(ranked, 3)] == ["sessions-0.9", "memory-0.5", "sessions-0.8"]


_results = st.lists(
    st.builds(result, st.sampled_from(["memory", "sessions"]), st.floats(0, 1), st.text(max_size=50)), max_size=12
)


@given(results=_results, limit=st.integers(0, 10))
def test_interleaving_keeps_each_sources_order_and_the_limit(results: list[SearchResult], limit: int) -> None:
    ordered = sorted(results, key=lambda r: -r.score)
    out = interleave_sources(ordered, limit)
    assert len(out) == min(limit, len(ordered))
    for source in ("memory", "sessions"):
        mine = [r for r in ordered if r.source == source]
        assert [r for r in out if r.source == source] == mine[: len([r for r in out if r.source == source])]


@given(results=_results, budget=st.integers(1, 200))
def test_the_snippet_budget_is_never_exceeded(results: list[SearchResult], budget: int) -> None:
    out = clamp_injected(results, budget)
    assert sum(utf16_len(r.snippet) for r in out) <= budget
    assert [r.path for r in out] == [r.path for r in results[: len(out)]]
