"""The hook's pure parts: labels and footers of search results, the filters, the budget, transcripts, state."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.cli.hooks import recall, state
from memoryd.cli.hooks.payload import event_name, parse
from memoryd.cli.hooks.project import Project, current, project_key
from memoryd.cli.hooks.transcript import previous_user_turn
from memoryd.errors import ConfigError, ProtocolError
from memoryd.hookblock import hits_of
from memoryd.hooksettings import HooksSettings, read


def test_labels_use_the_citation_else_the_matching_window() -> None:
    assert recall.label_of({"path": "MEMORY.md", "citation": "MEMORY.md#L3", "startLine": 1}) == "MEMORY.md#L3"
    window = {
        "path": "m.md",
        "citation": None,
        "startLine": 1,
        "endLine": 30,
        "snippetStartLine": 12,
        "snippetEndLine": 14,
    }
    assert recall.label_of(window) == "m.md#L12-L14"
    assert recall.label_of({"path": "m.md", "startLine": 5, "endLine": 5}) == "m.md#L5"
    assert recall.label_of({"path": "img.png", "kind": "image", "startLine": 1}) == "img.png"


def test_hits_lose_their_source_footer() -> None:
    reply = {
        "results": [
            {
                "path": "m.md",
                "citation": "m.md#L2",
                "snippet": "Deploys on Tuesdays.\n\nSource: m.md#L2",
                "source": "memory",
            },
            {"path": "x.md", "citation": None, "snippet": "   ", "source": "memory"},
        ]
    }
    assert [(h.label, h.text) for h in recall.hits_of(reply)] == [("m.md#L2", "Deploys on Tuesdays.")]


def hit(path: str, text: str, source: str = "sessions") -> recall.Hit:
    return recall.Hit(path, f"{path}#L1", text, source)


def test_choose_orders_by_project_and_drops_seen_own_and_foreign() -> None:
    hits = [
        hit("claude-code/-b/x.jsonl", "other project"),
        hit("sessions/s.jsonl", "no project"),
        hit("memory/n.md", "a note", "memory"),
        hit("claude-code/-a/sid-1.jsonl", "own session"),
        hit("claude-code/-a-sub/y.jsonl", "this project, below"),
        hit("memory/m.md", "A  NOTE", "memory"),  # the same words as "a note": one snippet
        hit("memory/seen.md", "shown before", "memory"),
    ]
    args = {
        "session_id": "sid-1",
        "transcript_path": "",
        "project": Project("-a"),
        "roots": recall.Roots(),
        "limit": 10,
    }
    seen = frozenset({state.snippet_key("shown before")})
    chosen = recall.choose(hits, seen=seen, scope="project", **args)  # type: ignore[arg-type]
    assert [h.text for h in chosen] == ["a note", "this project, below", "no project"]
    wide = recall.choose(hits, seen=seen, scope="all", **args)  # type: ignore[arg-type]
    assert [h.text for h in wide][-1] == "other project"


def test_codex_hits_take_the_project_of_their_rollout(tmp_path: Path) -> None:
    rollout = tmp_path / "2026" / "11" / "03" / "rollout-x.jsonl"
    rollout.parent.mkdir(parents=True)
    rollout.write_text(json.dumps({"type": "session_meta", "payload": {"cwd": "/proj/a"}}) + "\n")
    h = hit("codex/2026/11/03/rollout-x.jsonl", "codex words")
    assert recall.hit_project(h, recall.Roots(codex=tmp_path)) == Project(project_key("/proj/a")) == Project("-proj-a")


def test_render_holds_the_budget_and_cuts_the_last_snippet() -> None:
    hits = [hit(f"memory/{i}.md", "word " * 80, "memory") for i in range(5)]
    for budget in (200, 300, 800, 1500):
        block, shown = recall.render(hits, budget)
        assert len(block) <= budget and shown
        assert block.startswith("<memoryd-recall>") and block.endswith("</memoryd-recall>")
    assert recall.render([], 1500) == ("", [])


def test_a_short_follow_up_leads_with_the_previous_turn() -> None:
    assert recall.query_for("and the other one?", "Which bucket holds the backups?", 6).startswith("Which bucket")
    assert recall.query_for("a long enough question about the backups here", "previous", 6) == (
        "a long enough question about the backups here"
    )


def test_previous_user_turn_of_either_host(tmp_path: Path) -> None:
    claude = tmp_path / "c.jsonl"
    claude.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"type": "user", "message": {"role": "user", "content": "Where are the backups?"}},
                {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "S3."}]}},
                {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "content": "x"}]}},
                {"type": "user", "message": {"role": "user", "content": "and?"}},
            ]
        )
    )
    assert previous_user_turn(str(claude), "and?") == "Where are the backups?"
    codex = tmp_path / "r.jsonl"
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Rotate the keys"}]}
    context = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>"}]}
    codex.write_text(
        json.dumps({"type": "response_item", "payload": item})
        + "\n"
        + json.dumps({"type": "response_item", "payload": context})
    )
    assert previous_user_turn(str(codex), "when?") == "Rotate the keys"
    assert previous_user_turn(str(tmp_path / "missing.jsonl"), "x") == ""


def test_current_project_prefers_claude_codes_folder() -> None:
    assert current("claude-code", "/x/y", "/h/.claude/projects/-home-me-app/s.jsonl") == Project("-home-me-app")
    assert current("codex", "/home/me/app", "/h/.codex/sessions/2026/r.jsonl") == Project("-home-me-app")


def test_state_is_private_bounded_and_pruned(tmp_path: Path) -> None:
    s = state.SessionState(tmp_path, "claude-code", "sid")
    s.remember(f"k{i}" for i in range(state.MAX_SEEN + 10))
    assert len(s.seen()) == state.MAX_SEEN and "k0" not in s.seen()
    assert os.stat(s.path).st_mode & 0o777 == 0o600
    assert os.stat(s.path.parent).st_mode & 0o777 == 0o700
    old = state.SessionState(tmp_path, "claude-code", "old")
    old.remember(["x"])
    past = time.time() - (state.KEEP_DAYS + 1) * 86400
    os.utime(old.path, (past, past))
    assert state.prune(s.path.parent, keep=s.path) == 1 and not old.path.exists()
    assert state.SessionState(tmp_path, "codex", "").seen() == frozenset()  # no session id: no state


def test_event_names_and_input() -> None:
    assert event_name("codex", "user-prompt-submit") == "UserPromptSubmit"
    with pytest.raises(ProtocolError):
        event_name("codex", "SessionEnd")  # Codex has none
    got = parse("codex", "UserPromptSubmit", b'{"prompt": "hi", "transcript_path": null, "session_id": "s"}')
    assert (got.prompt, got.transcript_path, got.session_id) == ("hi", "", "s")


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        ({"max_chars": 10}, "between 200"),
        ({"scope": "everywhere"}, "'project'"),
        ({"flush": "yes"}, "bool"),
        ({"nope": 1}, "unknown"),
    ],
)
def test_hook_settings_are_checked(table: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        read(table)
    assert read({"max_chars": 900, "scope": "all"}) == HooksSettings(max_chars=900, scope="all")


def test_render_shares_the_budget_so_five_long_snippets_all_show() -> None:
    # A 700-character window each: greedily, two would fill 1,500 characters; shared, all five show their head.
    hits = [hit(f"memory/{i}.md", f"match{i} " + "word " * 140, "memory") for i in range(5)]
    block, shown = recall.render(hits, 1500)
    assert len(block) <= 1500 and [h.path for h in shown] == [f"memory/{i}.md" for i in range(5)]
    assert all(f"match{i}" in block for i in range(5))
    short = [hit("memory/a.md", "a short note", "memory"), *hits[:2]]
    block, shown = recall.render(short, 600)
    assert "a short note" in block and len(shown) == 3  # what a short snippet leaves goes to the others


def test_a_cut_note_window_names_only_the_lines_it_still_shows() -> None:
    from memoryd.hookblock import hits_of

    text = "\n".join(f"line {k} says something about the backups and where they go" for k in range(3, 9))
    result = {"path": "MEMORY.md", "startLine": 1, "endLine": 20, "snippetStartLine": 3, "snippetEndLine": 8}
    reply = {"results": [{**result, "citation": "MEMORY.md#L3-L8", "snippet": text, "source": "memory"}] * 3}
    block, shown = recall.render(hits_of(reply), 700)
    assert shown and all(h.lines is not None and h.lines[0] == 3 and h.lines[1] < 8 for h in shown)
    assert f"- MEMORY.md#L3-L{shown[0].lines[1]}: line 3 says" in block  # type: ignore[index]
    transcript = {**result, "path": "sessions/s.jsonl", "snippetStartLine": None, "snippet": text, "source": "sessions"}
    (kept,) = recall.render(hits_of({"results": [{**transcript, "citation": "sessions/s.jsonl#L1-L20"}]}), 300)[1]
    assert kept.lines == (1, 20)  # a transcript's records do not map onto its text: its lines stay


def _note_reply(context: list[str], match: list[str], lead: str = "") -> dict[str, object]:
    """A note's window (file lines 10 on) whose first `context` lines were taken back before its match."""
    snippet = lead + "\n".join([*context, *match])
    last = 10 + len(context) + len(match) - 1
    result = {"path": "m.md", "startLine": 1, "endLine": 40, "snippetStartLine": 10, "snippetEndLine": last}
    offset = len(lead) + sum(len(line) + 1 for line in context)
    where = f"m.md#L10-L{last}"
    return {"results": [{**result, "citation": where, "snippet": f"{snippet}\n\nSource: {where}",
                         "source": "memory", "snippetMatchOffset": offset}]}  # fmt: skip


def test_a_cut_snippet_drops_the_context_taken_back_before_its_match() -> None:
    # ollama:q005's shape: the window reached the chunk's end and took earlier lines back; a cut kept those.
    context = [f"- context line {k} the search took back before the match" for k in range(6)]
    match = ["- The answer: set OLLAMA_HOST to 0.0.0.0 and restart.", "- Then check the port."]
    (h,) = hits_of(_note_reply(context, match, lead="  "))  # the leading spaces are stripped as a reply's are
    assert h.text[h.match_at :].startswith("- The answer")
    frame = len(recall.HEADER) + len(recall.FOOTER)
    block, (shown,) = recall.render([h], frame + 130)
    assert "- m.md#L16-L17: - The answer: set OLLAMA_HOST" in block and "context line" not in block
    assert shown.lines == (16, 17)
    block, (shown,) = recall.render([h], frame + 200)  # room for one line of context before it
    assert "- m.md#L15-L17: - context line 5 the search" in block and shown.lines == (15, 17)
    block, (shown,) = recall.render([h], frame + 82)  # less than the match: its head, cut
    assert "- m.md#L16-L17: - The answer: set" in block and block.count("…") == 1 and "context" not in block
    plain = hits_of({"results": [{**_note_reply(context, match)["results"][0], "snippetMatchOffset": None}]})  # type: ignore[index]
    assert "context line 0" in recall.render(plain, frame + 130)[0]  # no offset: the head, as before


_WORDS = st.sampled_from(["alpha", "beta", "gamma", "ollama", "x" * 40, "日本語", "a"])
_LINES = st.lists(
    st.tuples(st.sampled_from(["", " ", "  "]), st.lists(_WORDS, max_size=12).map(" ".join)).map("".join),
    min_size=1,
    max_size=25,
)


@settings(max_examples=300, deadline=None)
@given(lines=_LINES, at=st.integers(0, 2000), budget=st.integers(40, 1500), transcript=st.booleans())
def test_a_cut_keeps_the_match_and_cites_exactly_the_lines_it_shows(
    lines: list[str], at: int, budget: int, transcript: bool
) -> None:
    text = "\n".join(lines)
    at = min(at, len(text))
    result = {"path": "m.md", "startLine": 1, "endLine": 99, "snippetStartLine": 5, "snippetEndLine": 4 + len(lines)}
    if transcript:
        result = {**result, "path": "s.jsonl", "snippetStartLine": None, "snippetEndLine": None, "source": "sessions"}
    hits = hits_of({"results": [{**result, "citation": None, "snippet": text, "snippetMatchOffset": at}]})
    if not hits:
        return
    (h,) = hits
    block, shown = recall.render(hits, budget + len(recall.HEADER) + len(recall.FOOTER))
    if not shown:
        return
    assert len(block) <= budget + len(recall.HEADER) + len(recall.FOOTER)
    (row,) = block.splitlines()[2:-1]
    label, _, body = row.removeprefix("- ").partition(": ")
    body = body.removesuffix("…")
    match = " ".join(h.text[h.match_at :].split())
    assert match.startswith(body) or body.endswith(match) or body == match  # the match first, context before it
    if transcript or not h.exact:  # a transcript's records, or blank edges a served window never has
        assert shown[0].lines == h.lines  # not narrowed
        return
    assert shown[0].lines is not None
    first, last = shown[0].lines
    assert label == (f"m.md#L{first}" if first == last else f"m.md#L{first}-L{last}")
    cited = [" ".join(line.split()) for line in lines[first - 5 : last - 4]]
    assert cited[0] and cited[-1]  # the cited lines' first and last are shown, no blank at either edge
    joined = " ".join(c for c in cited if c)
    where = joined.find(body)  # the text shown is a run of the cited lines, opening in the first, reaching the last
    assert 0 <= where < len(cited[0]) and where + len(body) > len(joined) - len(cited[-1])
    assert row.endswith("…") or joined.endswith(body)  # not cut: it runs to the window's end
