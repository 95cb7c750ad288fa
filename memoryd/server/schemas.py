"""The tool contracts, read from `protocol/*.json`, and the argument checks the MCP SDK leaves to servers.

The JSON files are the single source of truth: tools/list serves them verbatim and a test pins it.
Arguments are checked by a small validator for the subset of JSON Schema the input schemas use,
not by `jsonschema`, for three reasons: the messages must name the field in words a model can act
on, `jsonschema` ships without type information (mypy --strict), and it is not a declared
dependency. An input schema using any keyword outside the subset is refused when it is loaded, so
the subset can never be exceeded silently.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import memoryd
from memoryd.errors import ConfigError, ProtocolError

TOOL_NAMES = ("memory_search", "memory_get", "status")
"""The tools memoryd serves, in tools/list order."""

_INPUT_KEYWORDS = frozenset(
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
        "default",
        "examples",
    }
)
_JSON_TYPES = frozenset({"string", "integer", "number", "boolean", "object", "array", "null"})


class InvalidArgumentsError(ProtocolError):
    """Tool arguments that do not match the tool's input schema; `field` names the culprit."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"invalid arguments: {field} {problem}")
        self.field = field


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


def validate_arguments(tool: ToolSchema, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """Check tool arguments; return a copy with schema defaults filled in and integral floats as ints.

    Raises InvalidArgumentsError naming the first offending field.
    """
    return _check_object("arguments", tool.input_schema, dict(arguments or {}), top_level=True)


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


def _check_object(where: str, schema: Mapping[str, Any], value: dict[str, Any], *, top_level: bool) -> dict[str, Any]:
    properties: Mapping[str, Any] = schema.get("properties", {})
    if schema.get("additionalProperties", False) is False:
        for name in value:
            if name not in properties:
                raise _unexpected(where, name, properties, top_level=top_level)
    for name in schema.get("required", []):
        if name not in value:
            raise InvalidArgumentsError(_join(where, name, top_level), "is required")
    checked = dict(value)
    for name, sub in properties.items():
        if name in value:
            checked[name] = _check_value(_join(where, name, top_level), sub, value[name])
        elif "default" in sub:
            checked[name] = copy.deepcopy(sub["default"])
    return checked


PATTERN_WORDS = {"\\S": "must not be blank (it holds only whitespace)"}
"""The schemas' patterns said in words a model (or a person) can act on; others are quoted as they are."""


def _check_value(where: str, schema: Mapping[str, Any], value: Any) -> Any:
    types = schema.get("type")
    if types is not None:
        allowed = [types] if isinstance(types, str) else list(types)
        if not any(_has_type(value, t) for t in allowed):
            raise InvalidArgumentsError(where, f"must be {_describe_types(allowed)} (got {_json_type(value)})")
        if isinstance(value, float) and "integer" in allowed and "number" not in allowed:
            value = int(value)
    if "enum" in schema and not any(_same_json(value, option) for option in schema["enum"]):
        options = ", ".join(json.dumps(option) for option in schema["enum"])
        raise InvalidArgumentsError(where, f"must be one of {options} (got {json.dumps(value)})")
    if _is_number(value):
        if "minimum" in schema and value < schema["minimum"]:
            raise InvalidArgumentsError(where, f"must be at least {schema['minimum']} (got {value})")
        if "maximum" in schema and value > schema["maximum"]:
            raise InvalidArgumentsError(where, f"must be at most {schema['maximum']} (got {value})")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            raise InvalidArgumentsError(where, "must not be empty" if schema["minLength"] == 1 else "is too short")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise InvalidArgumentsError(where, f"must be at most {schema['maxLength']} characters")
        if "pattern" in schema and re.search(schema["pattern"], value) is None:
            words = PATTERN_WORDS.get(schema["pattern"], f"must match {schema['pattern']!r}")
            raise InvalidArgumentsError(where, words)
    if isinstance(value, dict) and "properties" in schema:
        value = _check_object(where, schema, value, top_level=False)
    return value


def _unexpected(where: str, name: str, properties: Mapping[str, Any], *, top_level: bool) -> InvalidArgumentsError:
    accepted = ", ".join(properties) or "none"
    if top_level and name == "agent":
        return InvalidArgumentsError(
            "agent",
            "is not an argument: the connection is bound to one agent (memoryd/bind, or memoryd mcp --agent)",
        )
    return InvalidArgumentsError(_join(where, name, top_level), f"is not an accepted argument (accepted: {accepted})")


def _join(where: str, name: str, top_level: bool) -> str:
    return name if top_level else f"{where}.{name}"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _has_type(value: Any, json_type: str) -> bool:
    match json_type:
        case "string":
            return isinstance(value, str)
        case "integer":
            return (isinstance(value, int) and not isinstance(value, bool)) or (
                isinstance(value, float) and value.is_integer()
            )
        case "number":
            return _is_number(value)
        case "boolean":
            return isinstance(value, bool)
        case "object":
            return isinstance(value, dict)
        case "array":
            return isinstance(value, list)
        case "null":
            return value is None
    return False


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _describe_types(types: list[str]) -> str:
    article = {"integer": "an integer", "array": "an array", "object": "an object", "null": "null"}
    return " or ".join(article.get(t, f"a {t}") for t in types)


def _same_json(value: Any, option: Any) -> bool:
    """Equal as JSON values: True is not 1, "1" is not 1."""
    return type(value) is type(option) and bool(value == option)
