"""Codex CLI's rollouts: `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`.

Read from Codex's own types (openai/codex, `codex-rs/protocol`: `RolloutLine` = `{timestamp, type,
payload}` with `type` one of `session_meta`, `response_item`, `event_msg`, `turn_context`,
`compacted`). The conversation is the `response_item` payloads of `type: "message"` with role
`user` or `assistant`, their `input_text` / `output_text` items; the time is the line's
`timestamp`. Skipped, as Codex itself leaves them out of what it shows as the conversation:

* `developer` and `system` messages, reasoning, tool calls and their output, compactions;
* user fragments Codex injects as the user (`codex-rs/core/src/context`): AGENTS.md instructions,
  `<environment_context>`, `<user_instructions>`, skills, `!` shell commands, aborted-turn and
  sub-agent notices, hook prompts and the like — each recognised by its opening and closing markup;
* the `<image>` / `</image>` tags around an attached image (the image itself is not text);
* the whole rollout of a sub-agent thread (`session_meta.source.subagent`), unless `transcripts.subagents`.

`event_msg` `user_message` / `agent_message` repeat the same conversation; they are read only from
a rollout that has no message items at all. Rollouts from before the `RolloutLine` envelope (one
bare response item per line after a `{id, timestamp, instructions}` header) are read too.
"""

from __future__ import annotations

from typing import Any

from memoryd.sources.transcripts.model import Role, Said
from memoryd.sources.transcripts.text import joined
from memoryd.sources.transcripts.timestamps import first_timestamp_ms

ENVELOPE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_TEXT_ITEMS = frozenset({"input_text", "output_text", "text"})
_MARKED = (
    ("# agents.md instructions", "</instructions>"),
    ("<agents_instructions>", "</agents_instructions>"),
    ("<user_instructions>", "</user_instructions>"),
    ("<environment_context>", "</environment_context>"),
    ("<multiagent_context>", "</multiagent_context>"),
    ("<skill>", "</skill>"),
    ("<skills_instructions>", "</skills_instructions>"),
    ("<user_shell_command>", "</user_shell_command>"),
    ("<turn_aborted>", "</turn_aborted>"),
    ("<subagent_notification>", "</subagent_notification>"),
    ("<agent_message_board_notification>", "</agent_message_board_notification>"),
    ("<codex_internal_context", "</codex_internal_context>"),
    ("<goal_context>", "</goal_context>"),
    ("<recommended_plugins>", "</recommended_plugins>"),
    ("<context_update>", "</context_update>"),
    ("<hook_prompt ", "</hook_prompt>"),
)
"""(opening, closing) of the fragments Codex injects as user text, lower case (Codex compares ignoring case)."""
_OPENING_ONLY = ("<environment_context>", "<turn_aborted>", "<context_update>")
"""Codex's session-prefix markers: a fragment that opens with one is context even if it is cut short."""
_IMAGE_TAGS = ("<image>", "</image>")
_LOCAL_IMAGE_OPEN = "<image name="


def is_injected(text: str) -> bool:
    """A user text fragment Codex wrote itself (see the module docstring)."""
    head = text.lstrip()[:64].lower()
    if not head.startswith(("#", "<")):
        return False
    if head.startswith(_OPENING_ONLY):
        return True
    tail = text.rstrip()[-48:].lower()
    return any(head.startswith(opening) and tail.endswith(closing) for opening, closing in _MARKED)


def _is_image_tag(text: str) -> bool:
    stripped = text.strip()
    return stripped in _IMAGE_TAGS or (stripped.startswith(_LOCAL_IMAGE_OPEN) and stripped.endswith(">"))


def _item_texts(content: object, role: Role) -> list[str]:
    if isinstance(content, str):
        return [] if role == "user" and is_injected(content) else [content]
    if not isinstance(content, list):
        return []
    out: list[str] = []
    for item in content:
        if not isinstance(item, dict) or item.get("type") not in _TEXT_ITEMS:
            continue
        text = item.get("text")
        if not isinstance(text, str) or _is_image_tag(text):
            continue
        if role == "user" and is_injected(text):
            continue
        out.append(text)
    return out


def message_role(item: dict[str, Any]) -> Role | None:
    """The role of a response item that is a user or assistant message, else None."""
    if item.get("type") != "message":
        return None
    role = item.get("role")
    return "user" if role == "user" else "assistant" if role == "assistant" else None


def item_said(item: dict[str, Any], role: Role, line_no: int, ts: object, slow: bool) -> Said | None:
    """A message response item (enveloped or bare) as a line; None when it holds no conversation text."""
    text = joined(_item_texts(item.get("content"), role))
    return Said(line_no, role, text, first_timestamp_ms(ts), slow) if text else None


def event_said(payload: dict[str, Any], line_no: int, ts: object, slow: bool) -> Said | None:
    """An `event_msg` user_message / agent_message as a line (used only without message items)."""
    kind = payload.get("type")
    role: Role
    if kind == "user_message":
        role = "user"
    elif kind == "agent_message":
        role = "assistant"
    else:
        return None
    text = payload.get("message")
    if not isinstance(text, str) or (role == "user" and is_injected(text)):
        return None
    line = joined([text])
    return Said(line_no, role, line, first_timestamp_ms(ts), slow) if line else None


def is_subagent_meta(payload: dict[str, Any]) -> bool:
    """Whether a `session_meta` payload starts a sub-agent's thread (its `source` is `{"subagent": …}`)."""
    source = payload.get("source")
    return isinstance(source, dict) and "subagent" in source


def is_bare_item(record: dict[str, Any]) -> bool:
    """A response item written without the envelope (rollouts before `RolloutLine`): `{type, role, content}`."""
    return isinstance(record.get("role"), str) and "message" not in record and isinstance(record.get("content"), list)


def is_bare_header(record: dict[str, Any]) -> bool:
    """The first line of an envelope-less rollout (`{id, timestamp, instructions}`), or its `record_type` lines."""
    return "record_type" in record or ("id" in record and "instructions" in record and "type" not in record)
