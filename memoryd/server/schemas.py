"""The tool contracts, read from `protocol/*.json`; their arguments are checked by `memoryd.server.validate`.

The JSON files are the single source of truth: tools/list serves them verbatim and a test pins it.
An input schema using any keyword outside the validator's subset of JSON Schema is refused when it
is loaded, so the subset can never be exceeded silently.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import memoryd
from memoryd.errors import ConfigError
from memoryd.server.validate import InvalidArgumentsError, validate_arguments

__all__ = [
    "TOOL_NAMES",
    "InvalidArgumentsError",
    "ToolSchema",
    "load_method_schemas",
    "load_tool_schemas",
    "protocol_dir",
    "validate_arguments",
]

TOOL_NAMES = ("memory_search", "memory_get", "status", "memory_write")
"""The tools memoryd serves, in tools/list order."""

METHODS_FILE = "memoryd.methods.json"
"""The params schemas of memoryd's own methods (memoryd/bind, /agents, /sync, /transcriptUpdated)."""

_INPUT_KEYWORDS = frozenset(  # what memoryd.server.validate implements
    {
        "$schema",
        "$id",
        "title",
        "description",
        "type",
        "properties",
        "required",
        "additionalProperties",
        "enum",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "pattern",
        "items",
        "maxItems",
        "default",
        "examples",
    }
)
_JSON_TYPES = frozenset({"string", "integer", "number", "boolean", "object", "array", "null"})


@dataclass(frozen=True, slots=True)
class ToolSchema:
    """One tool as the protocol files describe it."""

    name: str
    title: str | None
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]


def protocol_dir() -> Path:
    """`protocol/` beside the package: the schemas ship with the code that serves them."""
    return Path(memoryd.__file__).resolve().parent.parent / "protocol"


def load_tool_schemas(directory: Path | None = None) -> tuple[ToolSchema, ...]:
    """Read every tool's input and output schema; a missing or malformed file is a ConfigError."""
    root = directory if directory is not None else protocol_dir()
    tools: list[ToolSchema] = []
    for name in TOOL_NAMES:
        input_schema = _read_schema(root / f"{name}.input.json")
        output_schema = _read_schema(root / f"{name}.output.json")
        _require_supported(root / f"{name}.input.json", "", input_schema)
        description = input_schema.get("description")
        if not isinstance(description, str) or not description:
            raise ConfigError(f"{root / name}.input.json", "the root needs a description (it describes the tool)")
        title = input_schema.get("title")
        tools.append(
            ToolSchema(
                name=name,
                title=title if isinstance(title, str) else None,
                description=description,
                input_schema=input_schema,
                output_schema=output_schema,
            )
        )
    return tuple(tools)


def load_method_schemas(directory: Path | None = None) -> dict[str, dict[str, Any]]:
    """The params schema of each of memoryd's own methods (`protocol/memoryd.methods.json`), by method name."""
    root = directory if directory is not None else protocol_dir()
    path = root / METHODS_FILE
    document = _read_schema(path)
    methods: dict[str, dict[str, Any]] = {}
    for method, schema in document.get("properties", {}).items():
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise ConfigError(str(path), f"{method}: params must be described by an object schema")
        _require_supported(path, method, schema)
        methods[method] = schema
    return methods


def _read_schema(path: Path) -> dict[str, Any]:
    try:
        loaded: object = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(str(path), f"cannot read the tool schema: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise ConfigError(str(path), f"not valid JSON: {exc}") from exc
    if not isinstance(loaded, dict) or loaded.get("type") != "object":
        raise ConfigError(str(path), 'a tool schema must be a JSON object with "type": "object" at the root')
    return loaded


def _require_supported(path: Path, where: str, schema: Mapping[str, Any]) -> None:
    unsupported = sorted(set(schema) - _INPUT_KEYWORDS)
    if unsupported:
        raise ConfigError(str(path), f"{where or 'root'} uses keywords the argument validator lacks: {unsupported}")
    types = schema.get("type")
    named = [types] if isinstance(types, str) else types if isinstance(types, list) else []
    if any(t not in _JSON_TYPES for t in named):
        raise ConfigError(str(path), f"{where or 'root'} has an unknown type: {types!r}")
    extra = schema.get("additionalProperties", False)
    if not isinstance(extra, bool):
        raise ConfigError(str(path), f"{where or 'root'}: additionalProperties must be true or false")
    properties = schema.get("properties", {})
    for name, sub in properties.items():
        _require_supported(path, f"{where}.{name}" if where else name, sub)
    if "items" in schema:
        _require_supported(path, f"{where}[]", schema["items"])
