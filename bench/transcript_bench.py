"""Transcript parsing: MB/s of `parse_transcript` on large generated transcripts of each format.

The files are generated here (seeded) in each tool's record shapes, with the mix a coding session has:
most bytes are tool results and file snapshots, a small share is what the person and the model said
(the only text that is normalised and redacted). Throughput is file bytes over the best of three
parses, format sniffing, JSON parsing, redaction and the line map included.
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from bench.report import table
from memoryd.sources.transcripts import parse_transcript

WORDS = [
    "the",
    "cache",
    "test",
    "login",
    "session",
    "fixture",
    "expires",
    "deploy",
    "branch",
    "merge",
    "config",
    "schema",
    "index",
    "query",
    "tile",
    "zoom",
    "evict",
    "insert",
    "lookup",
    "retry",
    "backoff",
    "token",
    "budget",
    "user",
    "agent",
    "model",
    "reply",
    "file",
    "path",
    "line",
    "column",
    "error",
]
SESSION = "5f3c1a8e-7d42-4b19-9e60-2c8f4d1b7a05"


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def _tool_output(rng: random.Random) -> str:
    return "\n".join(f"{n:6}\u2192{_sentence(rng, rng.randint(4, 14))}" for n in range(rng.randint(20, 200)))


def claude_code_turn(rng: random.Random, i: int) -> list[dict[str, object]]:
    base = {"isSidechain": False, "userType": "external", "cwd": "/home/dana/src/webshop", "sessionId": SESSION}
    stamp = f"2026-03-02T{9 + i // 3600 % 10:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000Z"
    user = {**base, "type": "user", "timestamp": stamp, "uuid": f"u{i}"}
    assistant = {**base, "type": "assistant", "timestamp": stamp, "uuid": f"a{i}", "requestId": f"req_{i}"}
    meta = {"id": f"msg_{i}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6"}
    return [
        {**user, "message": {"role": "user", "content": " ".join(_sentence(rng, 12) for _ in range(3))}},
        {**assistant, "message": {**meta, "content": [{"type": "thinking", "thinking": _sentence(rng, 60)}]}},
        {**assistant, "message": {**meta, "content": [{"type": "text", "text": _sentence(rng, 40)}]}},
        {
            **assistant,
            "message": {**meta, "content": [{"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {}}]},
        },
        {
            **user,
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": _tool_output(rng)}],
            },
            "toolUseResult": {"type": "text"},
        },
        {**base, "type": "progress", "data": {"type": "hook_progress", "hookEvent": "PostToolUse"}, "uuid": f"p{i}"},
        {"type": "file-history-snapshot", "messageId": f"u{i}", "snapshot": {"trackedFileBackups": {}}},
    ]


def codex_turn(rng: random.Random, i: int) -> list[dict[str, object]]:
    stamp = f"2026-02-11T{16 + i // 3600 % 8:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000Z"
    question = " ".join(_sentence(rng, 12) for _ in range(3))
    answer = _sentence(rng, 40)

    def item(payload: dict[str, object]) -> dict[str, object]:
        return {"timestamp": stamp, "type": "response_item", "payload": payload}

    return [
        {
            "timestamp": stamp,
            "type": "turn_context",
            "payload": {"cwd": "/home/dana/src/tiler", "model": "gpt-5.1-codex"},
        },
        item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": question}]}),
        {"timestamp": stamp, "type": "event_msg", "payload": {"type": "user_message", "message": question}},
        item({"type": "reasoning", "summary": [{"type": "summary_text", "text": _sentence(rng, 8)}], "content": None}),
        item({"type": "function_call", "name": "shell", "arguments": '{"command":["rg","evict"]}', "call_id": f"c{i}"}),
        item({"type": "function_call_output", "call_id": f"c{i}", "output": json.dumps({"output": _tool_output(rng)})}),
        item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}]}),
        {"timestamp": stamp, "type": "event_msg", "payload": {"type": "agent_message", "message": answer}},
    ]


def openclaw_turn(rng: random.Random, i: int) -> list[dict[str, object]]:
    stamp = 1_767_600_000_000 + i * 1000
    return [
        {
            "type": "message",
            "timestamp": stamp,
            "message": {"role": "user", "content": " ".join(_sentence(rng, 12) for _ in range(3))},
        },
        {
            "type": "message",
            "timestamp": stamp,
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": _sentence(rng, 60)},
                    {"type": "toolCall", "id": f"t{i}", "name": "read", "arguments": {}},
                ],
            },
        },
        {
            "type": "message",
            "timestamp": stamp,
            "message": {"role": "toolResult", "content": [{"type": "text", "text": _tool_output(rng)}]},
        },
        {
            "type": "message",
            "timestamp": stamp,
            "message": {"role": "assistant", "content": [{"type": "text", "text": _sentence(rng, 40)}]},
        },
    ]


FORMATS: dict[str, Callable[[random.Random, int], list[dict[str, object]]]] = {
    "claude-code": claude_code_turn,
    "codex": codex_turn,
    "openclaw": openclaw_turn,
}


def generate(fmt: str, target_bytes: int) -> bytes:
    rng = random.Random(fmt)
    lines: list[bytes] = []
    size = 0
    turn = FORMATS[fmt]
    i = 0
    while size < target_bytes:
        for record in turn(rng, i):
            line = orjson.dumps(record)
            lines.append(line)
            size += len(line) + 1
        i += 1
    return b"\n".join(lines) + b"\n"


def measure(data: bytes) -> tuple[float, int, str]:
    best = float("inf")
    kept = 0
    fmt = ""
    for _ in range(3):
        start = time.perf_counter()
        t = parse_transcript(data)
        best = min(best, time.perf_counter() - start)
        kept, fmt = len(t.line_map), t.format
    return len(data) / 1e6 / best, kept, fmt


def main(out: Path, quick: bool) -> None:
    del out  # generated in memory: nothing to keep
    target = 5_000_000 if quick else 50_000_000
    rows = []
    for fmt in FORMATS:
        data = generate(fmt, target)
        mb_s, kept, sniffed = measure(data)
        assert sniffed == fmt, (fmt, sniffed)
        rows.append((fmt, round(len(data) / 1e6, 1), data.count(b"\n"), kept, round(mb_s, 1)))
    table(
        "Transcript parsing (parse_transcript, best of 3)",
        ["format", "file MB", "JSONL lines", "messages kept", "MB/s"],
        rows,
    )
    sys.stdout.flush()
