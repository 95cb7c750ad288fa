"""Transcript adapters: OpenClaw, Claude Code and Codex files, sniffed per file, all read into one Transcript.

The fixtures in `transcript_fixtures/` are written by hand in each tool's record shapes (none is a
real session): string and block content, images, tool-only turns, compaction, injected context, an
unknown record type, invalid UTF-8 and a truncated last line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.sources.transcripts import CLAUDE_CODE, CODEX, EMPTY, OPENCLAW, UNKNOWN, parse_transcript

FIXTURES = Path(__file__).parent / "transcript_fixtures"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def jsonl(*records: object) -> bytes:
    return b"\n".join(r if isinstance(r, bytes) else json.dumps(r).encode() for r in records)


def cc(kind: str, content: object, **extra: Any) -> dict[str, Any]:
    """A Claude Code record of `kind` (user / assistant)."""
    return {
        "parentUuid": None,
        "isSidechain": False,
        "type": kind,
        "message": {"role": kind, "content": content},
        "timestamp": "2026-03-02T09:15:02.331Z",
        **extra,
    }


def cx(role: str, *texts: str, kind: str = "input_text") -> dict[str, Any]:
    """A Codex `response_item` message."""
    return {
        "timestamp": "2026-02-11T16:40:21.481Z",
        "type": "response_item",
        "payload": {"type": "message", "role": role, "content": [{"type": kind, "text": t} for t in texts]},
    }


# ---------------------------------------------------------------------------------------------- fixtures


def test_the_claude_code_fixture_keeps_only_what_the_person_and_the_model_said() -> None:
    t = parse_transcript(fixture("claude-code.jsonl"))
    assert t.format == CLAUDE_CODE
    assert t.content.split("\n") == [
        "User: The login test fails about one run in five on CI. Can you find out why?",
        "Assistant: I'll look at the test and the session fixture it uses.",
        "Assistant: The session fixture expires after 30 seconds, and the test sleeps 31 seconds before it logs in, "
        "so it races the expiry.",
        "User: Here is the screenshot of the failing CI run.",
        "User: Use the frozen clock helper instead of sleeping.",
        "User: /review the session expiry change",
        "Assistant: Done: the test now uses the frozen clock. The deploy job also needs STRIPE_API_KEY=sk_l… in the "
        "CI secrets.",
        "User: Thanks, the caf\ufffd fixture passes now \ufffd",
    ]
    assert t.line_map == (6, 8, 11, 12, 13, 21, 25, 26)
    assert t.timestamps_ms[0] == 1_772_442_902_331  # 2026-03-02T09:15:02.331Z
    assert t.malformed_lines == 1  # the truncated last line


def test_claude_code_sidechains_are_kept_only_when_configured() -> None:
    t = parse_transcript(fixture("claude-code.jsonl"), subagents=True)
    assert t.line_map == (6, 8, 11, 12, 13, 14, 15, 21, 25, 26)
    assert "Found three more tests that call time.sleep" in t.content


def test_the_codex_fixture_skips_injected_context_tools_reasoning_and_duplicate_events() -> None:
    t = parse_transcript(fixture("codex.jsonl"))
    assert t.format == CODEX
    assert t.content.split("\n") == [
        "User: Why does the tile cache grow without bound when I zoom out?",
        "Assistant: Eviction only runs on insert. Zooming out reuses cached tiles without inserting any, so nothing "
        "is ever evicted.",
        "User: This heap graph is from the staging box.",
        "Assistant: I added eviction to the lookup path too. The bench script reads GITHUB_TOKEN=ghp_… from your "
        "shell.",
        "User: Merci, le caf\ufffd est r\ufffdparé",
    ]
    assert t.line_map == (6, 11, 14, 19, 21)
    assert t.timestamps_ms[:2] == (1_770_828_021_481, 1_770_828_040_118)
    assert t.malformed_lines == 1


def test_a_codex_rollout_from_before_the_envelope_is_read() -> None:
    t = parse_transcript(fixture("codex-legacy.jsonl"))
    assert t.format == CODEX
    assert t.content == (
        "User: Rename the --out flag to --output and keep --out as an alias.\n"
        "Assistant: Renamed it; --out still works and prints a deprecation note."
    )
    assert t.line_map == (4, 9)


def test_a_codex_sub_agent_rollout_is_empty_unless_configured() -> None:
    data = fixture("codex-subagent.jsonl")
    assert parse_transcript(data).format == CODEX
    assert parse_transcript(data).content == ""
    assert parse_transcript(data, subagents=True).line_map == (2, 3)


def test_the_openclaw_fixture_reads_as_openclaw_always_did() -> None:
    t = parse_transcript(fixture("openclaw.jsonl"))
    assert t.format == OPENCLAW
    assert t.content.split("\n") == [
        "User: Book the dentist for the week of the 20th, mornings only.",
        "Assistant: I booked Tuesday the 20th at 9:00 with Dr. Okafor.",
        "User: Also add this receipt to my expenses.",
        "Assistant: Added the caf\ufffd receipt (€14).",
    ]
    assert t.line_map == (2, 5, 7, 8)
    assert t.timestamps_ms == (1_767_607_200_000, 1_767_607_209_000, 1_767_607_300_000, 0)
    assert t.malformed_lines == 1


def test_json_no_adapter_understands_is_unknown_and_a_blank_file_is_empty() -> None:
    assert parse_transcript(fixture("unrecognised.jsonl")).format == UNKNOWN
    assert parse_transcript(b"not json at all\n").format == UNKNOWN
    assert parse_transcript(b"").format == EMPTY
    assert parse_transcript(b"\n  \n").format == EMPTY


# ---------------------------------------------------------------------------------------------- sniffing


def test_a_file_with_any_openclaw_message_is_read_as_openclaw() -> None:
    data = jsonl(cc("user", "claude says hi"), {"type": "message", "message": {"role": "user", "content": "oc"}})
    t = parse_transcript(data)
    assert (t.format, t.content, t.line_map) == (OPENCLAW, "User: oc", (2,))


def test_otherwise_the_first_message_record_decides() -> None:
    t = parse_transcript(jsonl(cx("user", "codex first"), cc("user", "claude second")))
    assert (t.format, t.content) == (CODEX, "User: codex first")
    t = parse_transcript(jsonl(cc("user", "claude first"), cx("user", "codex second")))
    assert (t.format, t.content) == (CLAUDE_CODE, "User: claude first")


@pytest.mark.parametrize(
    ("record", "fmt"),
    [
        ({"type": "summary", "summary": "A title", "leafUuid": "x"}, CLAUDE_CODE),
        ({"type": "file-history-snapshot", "messageId": "m", "snapshot": {}}, CLAUDE_CODE),
        ({"type": "session_meta", "timestamp": "2026-01-01T00:00:00Z", "payload": {"id": "x"}}, CODEX),
        ({"type": "session", "version": 3, "id": "s"}, OPENCLAW),
        ({"id": "x", "timestamp": "2025-05-20T08:12:44Z", "instructions": None}, CODEX),
    ],
)
def test_a_file_of_records_only_one_tool_writes_is_that_tools_even_without_messages(
    record: dict[str, Any], fmt: str
) -> None:
    t = parse_transcript(jsonl(record))
    assert (t.format, t.content) == (fmt, "")


# ---------------------------------------------------------------------------------------------- Claude Code


def test_claude_code_string_and_block_content_read_alike() -> None:
    data = jsonl(
        cc("user", "plain   string\ncontent"),
        cc("user", [{"type": "text", "text": "block"}, {"type": "text", "text": " content "}]),
        cc("assistant", [{"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "ls"}}]),
        cc("user", [{"type": "tool_result", "tool_use_id": "t", "content": "file.txt"}]),
        cc("assistant", [{"type": "redacted_thinking", "data": "x"}, {"type": "text", "text": "answer"}]),
    )
    t = parse_transcript(data)
    assert t.content == "User: plain string content\nUser: block content\nAssistant: answer"
    assert t.line_map == (1, 2, 5)


@pytest.mark.parametrize(
    "text",
    [
        "This session is being continued from a previous conversation that ran out of context. Summary: …",
        "Caveat: The messages below were generated by the user while running local commands. DO NOT respond.",
        "[Request interrupted by user]",
        "<bash-input>ls -la</bash-input>",
        "<bash-stdout>total 0</bash-stdout><bash-stderr></bash-stderr>",
        "<local-command-stdout>Compacted</local-command-stdout>",
        "<command-name>/compact</command-name>\n<command-message>compact</command-message>\n<command-args></command-args>",
        "<system-reminder>only a reminder</system-reminder>",
    ],
)
def test_text_claude_code_injects_as_the_user_is_left_out_even_without_its_flags(text: str) -> None:
    assert parse_transcript(jsonl(cc("user", text))).content == ""


@pytest.mark.parametrize(
    "extra",
    [
        {"isMeta": True},
        {"isCompactSummary": True},
        {"isVisibleInTranscriptOnly": True},
        {"origin": {"kind": "task-notification"}},
        {"isSidechain": True},
    ],
)
def test_user_records_claude_code_flags_as_its_own_are_left_out(extra: dict[str, Any]) -> None:
    assert parse_transcript(jsonl(cc("user", "looks like a person"), cc("user", "kept", **extra))).line_map == (1,)


def test_assistant_records_claude_code_made_up_are_left_out() -> None:
    data = jsonl(
        cc("assistant", [{"type": "text", "text": "API Error: 500"}], isApiErrorMessage=True),
        {
            **cc("assistant", [{"type": "text", "text": "No response requested."}]),
            "message": {
                "role": "assistant",
                "model": "<synthetic>",
                "content": [{"type": "text", "text": "No response requested."}],
            },
        },
        cc("assistant", [{"type": "text", "text": "real"}]),
    )
    assert parse_transcript(data).content == "Assistant: real"


def test_a_person_typing_about_the_markup_is_kept() -> None:
    text = "Why does Claude write <command-name> tags into my transcript?"
    assert parse_transcript(jsonl(cc("user", text))).content == f"User: {text}"


def test_a_lone_surrogate_escape_in_claude_code_text_is_replaced() -> None:
    raw = rb'{"type":"user","message":{"role":"user","content":"a\ud800b"},"timestamp":"2026-03-02T09:15:02Z"}'
    t = parse_transcript(raw)
    assert t.content == "User: a\ufffdb"
    t.content.encode("utf-8")


# ---------------------------------------------------------------------------------------------- Codex


@pytest.mark.parametrize(
    "text",
    [
        "<ENVIRONMENT_CONTEXT>\n<cwd>/x</cwd>\n</ENVIRONMENT_CONTEXT>",
        "<environment_context>cut short",
        "<user_instructions>\nbe brief\n</user_instructions>",
        "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nx\n</INSTRUCTIONS>",
        "<skill>\n<name>pdf</name>\n</skill>",
        '<hook_prompt hook_run_id="h1">check</hook_prompt>',
        "<subagent_notification>done</subagent_notification>",
    ],
)
def test_user_fragments_codex_injects_are_left_out(text: str) -> None:
    assert parse_transcript(jsonl(cx("user", text), cx("user", "kept"))).line_map == (2,)


def test_codex_developer_and_system_messages_are_left_out() -> None:
    data = jsonl(cx("developer", "<permissions instructions>x</permissions instructions>"), cx("system", "sys"))
    t = parse_transcript(data)
    assert (t.format, t.content) == (CODEX, "")


def test_codex_events_are_read_only_from_a_rollout_without_message_items() -> None:
    events = [
        {"timestamp": "2026-02-11T16:40:21Z", "type": "event_msg", "payload": {"type": "user_message", "message": "q"}},
        {
            "timestamp": "2026-02-11T16:40:22Z",
            "type": "event_msg",
            "payload": {"type": "agent_message", "message": "a"},
        },
    ]
    assert parse_transcript(jsonl(*events)).content == "User: q\nAssistant: a"
    assert parse_transcript(jsonl(*events, cx("assistant", "item", kind="output_text"))).content == "Assistant: item"


# ---------------------------------------------------------------------------------------------- properties

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
TYPES = st.sampled_from(
    ["message", "user", "assistant", "response_item", "event_msg", "session_meta", "summary", "custom", "x"]
)
TEXT = st.text(st.sampled_from("ab <>/\n\t日😀[]#"), max_size=30)
CONTENT = st.one_of(
    TEXT,
    st.lists(
        st.fixed_dictionaries(
            {"type": st.sampled_from(["text", "input_text", "output_text", "image", "tool_use"]), "text": TEXT}
        ),
        max_size=3,
    ),
    JSON,
)
RECORD = st.one_of(
    JSON,
    st.builds(
        lambda kind, role, content, flags, ts: {
            "type": kind,
            "message": {"role": role, "content": content},
            "payload": {"type": "message", "role": role, "content": content, "message": content},
            "role": role,
            "content": content,
            "timestamp": ts,
            **flags,
        },
        TYPES,
        st.sampled_from(["user", "assistant", "developer", "toolResult"]),
        CONTENT,
        st.dictionaries(st.sampled_from(["isMeta", "isSidechain", "isCompactSummary"]), st.booleans(), max_size=2),
        st.one_of(st.none(), st.integers(), TEXT, st.just("2026-01-05T10:00:00Z")),
    ),
)
LINE = st.one_of(RECORD.map(lambda r: json.dumps(r).encode()), st.binary(max_size=30), st.just(b"{trunc"))


@settings(deadline=None, max_examples=300)
@given(lines=st.lists(LINE, max_size=20), subagents=st.booleans())
def test_arbitrary_json_lines_never_raise_and_the_line_map_stays_ordered_and_inside_the_file(
    lines: list[bytes], subagents: bool
) -> None:
    data = b"\n".join(lines)
    t = parse_transcript(data, subagents=subagents)
    texts = t.content.split("\n") if t.content else []
    assert len(texts) == len(t.line_map) == len(t.timestamps_ms)
    assert list(t.line_map) == sorted(set(t.line_map))
    assert all(1 <= n <= data.count(b"\n") + 1 for n in t.line_map)
    assert all(text.startswith(("User: ", "Assistant: ")) for text in texts)
    assert t.format in (OPENCLAW, CLAUDE_CODE, CODEX, UNKNOWN, EMPTY)
    t.content.encode("utf-8")


@settings(deadline=None, max_examples=200)
@given(lines=st.lists(LINE, max_size=12))
def test_every_kept_line_comes_from_a_record_of_the_chosen_format(lines: list[bytes]) -> None:
    data = b"\n".join(lines)
    t = parse_transcript(data, subagents=True)
    raw = data.split(b"\n")
    expected_types = {OPENCLAW: {"message"}, CLAUDE_CODE: {"user", "assistant"}, CODEX: {"response_item", "event_msg"}}
    for n in t.line_map:
        record = json.loads(raw[n - 1].decode("utf-8", "replace"))
        kind = record.get("type")
        if t.format == CODEX and kind == "message":
            continue  # an envelope-less rollout's bare item
        assert kind in expected_types[t.format]
