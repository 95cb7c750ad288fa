"""Reading QMD's output: every known variant is read, anything else is a clear error."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.qmd.errors import QmdOutputError
from memoryd.qmd.parse import (
    ListedCollection,
    error_summary,
    is_busy,
    is_missing_collection,
    is_unsupported_option,
    needs_collection_rebuild,
    parse_collection_list,
    parse_collection_show,
    parse_file_uri,
    parse_search_output,
    parse_vector_count,
    parse_version,
    snippet_header_lines,
    strip_snippet_header,
)

# Printed by QMD 2.8.3's `qmd search biscuit --json`.
REAL_OUTPUT = """[
  {
    "docid": "#60a935",
    "score": 0.35,
    "file": "qmd://memory-dir-main/Sub Dir/My Notes_v2.md",
    "line": 6,
    "title": "Standup",
    "snippet": "@@ -5,3 @@ (4 before, 0 after)\\nMore lines\\nand more about biscuit\\n"
  }
]
"""

# Printed by QMD 2.8.3's `qmd collection list --json`: it ignores --json.
REAL_TABLE = """Collections (2):

memory-dir-main (qmd://memory-dir-main/)
  Pattern:  **/*.md
  Files:    1
  Updated:  2s ago

memory-root-main (qmd://memory-root-main/)
  Pattern:  MEMORY.md
  Files:    1
  Updated:  2s ago
"""


def test_real_search_json_becomes_hits_with_collection_relative_paths() -> None:
    (hit,) = parse_search_output(REAL_OUTPUT)
    assert hit.docid == "60a935"
    assert (hit.collection, hit.path) == ("memory-dir-main", "Sub Dir/My Notes_v2.md")
    assert hit.score == 0.35 and hit.line == 6
    assert hit.snippet.startswith("@@ -5,3 @@")


def test_warnings_printed_around_the_json_are_ignored() -> None:
    noisy = "ggml_cuda_init: no CUDA devices found [0 of 1]\nwarning: [slow]\n" + REAL_OUTPUT + "bye\n"
    assert [h.docid for h in parse_search_output(noisy)] == ["60a935"]


@pytest.mark.parametrize(
    ("stdout", "stderr"),
    [("", "No results found."), ("No results found\n", ""), ("", "[qmd] warning: no results found"), ("[]", "")],
)
def test_no_results_in_any_known_spelling_is_an_empty_list(stdout: str, stderr: str) -> None:
    assert parse_search_output(stdout, stderr) == []


@pytest.mark.parametrize(
    "stdout",
    ["{not json", '{"results": []}', "[1, 2]", "Usage: qmd <command> [options]\n  -n <num> Max results\n"],
)
def test_anything_else_is_an_output_error(stdout: str) -> None:
    with pytest.raises(QmdOutputError):
        parse_search_output(stdout)


@pytest.mark.parametrize("command", ["search", "vsearch", "query"])
def test_invalid_json_names_the_command_that_printed_it(command: str) -> None:
    with pytest.raises(QmdOutputError, match=f"^qmd {command} returned invalid JSON: "):
        parse_search_output("{not json", command=command)
    with pytest.raises(QmdOutputError, match=f"^qmd {command} returned no JSON on stdout"):
        parse_search_output("", "sqlite exploded\n", command=command)


def test_empty_stdout_with_an_unrelated_stderr_is_an_error_that_quotes_stderr() -> None:
    with pytest.raises(QmdOutputError, match="sqlite exploded"):
        parse_search_output("", "sqlite exploded\n")


def test_missing_fields_get_safe_defaults_and_the_asked_collection() -> None:
    (hit,) = parse_search_output('[{"docid": "abc", "score": "high", "start_line": 0, "end_line": 4}]', collection="c1")
    assert (hit.docid, hit.score, hit.collection, hit.start_line, hit.end_line) == ("abc", 0.0, "c1", None, 4)


_hit_dicts = st.lists(
    st.fixed_dictionaries(
        {
            "docid": st.from_regex(r"#[0-9a-f]{6}", fullmatch=True),
            "score": st.floats(0, 1),
            "file": st.from_regex(r"qmd://[a-z0-9-]{1,12}/[A-Za-z0-9 _/.-]{1,20}\.md", fullmatch=True),
            "snippet": st.text(max_size=40),
        }
    ),
    max_size=5,
)
_noise = st.lists(st.text(alphabet=st.characters(blacklist_characters="[\r\n"), max_size=30), max_size=3)


@given(hits=_hit_dicts, before=_noise, after=_noise)
def test_hits_survive_any_noise_lines_around_them(
    hits: list[dict[str, object]], before: list[str], after: list[str]
) -> None:
    payload = orjson.dumps(hits, option=orjson.OPT_INDENT_2).decode()
    text = "\n".join([*before, payload, *after])
    parsed = parse_search_output(text)
    assert [h.docid for h in parsed] == [str(h["docid"]).lstrip("#") for h in hits]
    assert [h.snippet for h in parsed] == [h["snippet"] for h in hits]


def test_file_uris_are_decoded_and_anything_else_is_not_a_uri() -> None:
    assert parse_file_uri("qmd://notes/a%20b/c.md") == ("notes", "a b/c.md")
    assert parse_file_uri("/abs/path.md") is None
    assert parse_file_uri("qmd://only-collection/") is None


def test_collection_listings_in_json_names_and_table_form() -> None:
    objects = '[{"name": "a", "path": "/w", "pattern": "**/*.md"}, {"name": "b", "mask": "MEMORY.md"}]'
    assert parse_collection_list(objects) == {
        "a": ListedCollection("/w", "**/*.md"),
        "b": ListedCollection(None, "MEMORY.md"),
    }
    assert parse_collection_list('["x", "y"]') == {"x": ListedCollection(), "y": ListedCollection()}
    assert parse_collection_list(REAL_TABLE) == {
        "memory-dir-main": ListedCollection(None, "**/*.md"),
        "memory-root-main": ListedCollection(None, "MEMORY.md"),
    }
    assert parse_collection_list("") == {}


def test_collection_show_gives_path_and_pattern() -> None:
    shown = "Collection: notes\n  Path:     /home/u/notes\n  Pattern:  **/*.md\n  Include:  yes (default)\n"
    assert parse_collection_show(shown) == ListedCollection("/home/u/notes", "**/*.md")


def test_versions_and_vector_counts() -> None:
    assert parse_version("qmd 2.8.3 (facd35e)\n") == "2.8.3"
    assert parse_version("qmd dev build") is None
    assert parse_vector_count("Documents\n  Total:    2 files indexed\n  Vectors:  0 embedded\n") == 0
    assert parse_vector_count("Vectors = 12") == 12
    assert parse_vector_count("no vectors line") is None


def test_snippet_headers_give_lines_and_are_stripped_from_the_text() -> None:
    assert snippet_header_lines("@@ -5,3 @@ (4 before, 0 after)\nx") == (5, 7)
    assert snippet_header_lines("@@ -2,0 @@\n") == (2, 2)
    assert snippet_header_lines("plain text") is None
    assert strip_snippet_header("@@ -5,3 @@ (4 before, 0 after)\nMore lines\n") == "More lines\n"
    assert strip_snippet_header("no header\n@@ -1,1 @@") == "no header\n@@ -1,1 @@"


def test_error_messages_are_classified_the_way_openclaw_classifies_them() -> None:
    assert is_unsupported_option("error: unknown option '--glob'")
    assert not is_unsupported_option("Collection not found: x")
    assert is_missing_collection("Collection not found: memory-dir-main")
    assert not is_missing_collection("file not found")
    assert is_busy("SqliteError: SQLITE_BUSY") and is_busy("database is locked")
    assert needs_collection_rebuild("UNIQUE constraint failed: documents.collection, documents.path")
    assert needs_collection_rebuild("ENOTDIR: not a directory, scandir '/w/memory\\u0000'")
    assert not needs_collection_rebuild("ENOENT: no such file or directory, open '/w/x.md'")


# Printed by QMD 2.8.3 when its index file is damaged.
NODE_CRASH = """/work/main/.qmd/node_modules/better-sqlite3/lib/methods/wrappers.js:9
\tthis[cppdb].exec(sql);
\t            ^

SqliteError: file is not a database
    at Database.exec (/work/main/.qmd/node_modules/better-sqlite3/lib/methods/wrappers.js:9:14)
    at getDb (file:///work/main/.qmd/node_modules/@tobilu/qmd/dist/cli/qmd.js:56:12) {
  code: 'SQLITE_NOTADB'
}

Node.js v24.22.3
"""


def test_a_failure_is_summarised_by_its_error_line_not_its_stack_trace() -> None:
    assert error_summary(NODE_CRASH) == "SqliteError: file is not a database"
    assert error_summary("working...\nENOSPC: no space left on device\n") == "ENOSPC: no space left on device"
    assert error_summary("disk full\n") == "disk full"
    assert error_summary("") == ""
