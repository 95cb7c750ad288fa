"""How long an input each embedding model accepts (spec §1 table, §3.4)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

DEFAULT_MAX_INPUT_TOKENS = 8192
_MAX_INPUT_TOKENS: Mapping[str, int] = MappingProxyType(
    {
        "openai:text-embedding-3-small": 8192,
        "openai:text-embedding-3-large": 8192,
        "openai:text-embedding-ada-002": 8191,
        "gemini:text-embedding-004": 2048,
        "gemini:gemini-embedding-001": 2048,
        "gemini:gemini-embedding-2-preview": 8192,
        "gemini:gemini-embedding-2": 8192,
        "voyage:voyage-3": 32000,
        "voyage:voyage-3-lite": 16000,
        "voyage:voyage-code-3": 32000,
    }
)
_UNKNOWN_MODEL_MAX_INPUT_TOKENS: Mapping[str, int] = MappingProxyType({"gemini": 2048, "local": 2048})


def model_max_input_tokens(provider_id: str, model: str) -> int:
    """The largest input a model accepts, in tokens (spec §1 table)."""
    known = _MAX_INPUT_TOKENS.get(f"{provider_id}:{model}".lower())
    if known is not None:
        return known
    return _UNKNOWN_MODEL_MAX_INPUT_TOKENS.get(provider_id.lower(), DEFAULT_MAX_INPUT_TOKENS)


EMBEDDING_MAX_INPUT_BYTES = 8000
"""OpenClaw's hard cap on one embedding input, in UTF-8 bytes (a safe upper bound of its tokens)."""


def input_limit_bytes(provider_id: str, model: str) -> int:
    """The largest chunk, in UTF-8 bytes, sent to this model in one input (spec §3.4):
    `min(model's max input tokens, 8000)`, counting a byte as a token (never fewer tokens than bytes).
    The local model reads the first 256 tokens of each input and never rejects a longer one, so it
    gets OpenClaw's figure for local models (2048) rather than its own window."""
    return min(model_max_input_tokens(provider_id, model), EMBEDDING_MAX_INPUT_BYTES)
