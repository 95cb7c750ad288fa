"""Checking JSON values against the small subset of JSON Schema memoryd's contracts use: the one place
where tool arguments (every tool: memory_search, memory_get, status, and any tool added later) and the
params of memoryd's own methods (`memoryd/sync`, `memoryd/bind`, `memoryd/transcriptUpdated`) are validated.

Not `jsonschema`, for three reasons: the messages must name the field in words a model can act on,
`jsonschema` ships without type information (mypy --strict), and it is not a declared dependency.

Numbers are held to what JSON can carry between programs: an integer (or an integral float such as
`1e300`, which JSON parsers read as a float) must lie within ±(2**53 − 1), the range every JSON
implementation represents exactly, so no value past it reaches the code or a reply (a `from` of
`1e300` used to come back as `{"code": 0, "message": "Integer exceeds 64-bit range"}`).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from typing import Any, Protocol

from memoryd.errors import ProtocolError

SAFE_INTEGER = 2**53 - 1
"""The largest integer every JSON implementation holds exactly (JavaScript's Number.MAX_SAFE_INTEGER)."""


class InvalidArgumentsError(ProtocolError):
    """Arguments (or params) that do not match their schema; `field` names the culprit."""

    def __init__(self, field: str, problem: str, *, what: str = "arguments") -> None:
        super().__init__(f"invalid {what}: {field} {problem}")
        self.field = field
        self.problem = problem


class HasInputSchema(Protocol):
    """A tool as `memoryd.server.schemas` loads it: anything with an input schema."""

    @property
    def input_schema(self) -> Mapping[str, Any]: ...


def validate_arguments(tool: HasInputSchema, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """Check tool arguments; return a copy with schema defaults filled in and integral floats as ints.

    Raises InvalidArgumentsError naming the first offending field.
    """
    return _check_object("arguments", tool.input_schema, dict(arguments or {}), top_level=True)


def validate_params(schema: Mapping[str, Any], params: Mapping[str, Any] | None) -> dict[str, Any]:
    """Check a memoryd method's params against its schema (`_meta`, the protocol's envelope, is let
    through untouched); return a copy with defaults filled in. Raises InvalidArgumentsError ("invalid
    params: …")."""
    given = dict(params or {})
    meta = given.pop("_meta", None)
    try:
        checked = _check_object("params", schema, given, top_level=True)
    except InvalidArgumentsError as exc:
        raise InvalidArgumentsError(exc.field, exc.problem, what="params") from None
    if meta is not None:
        checked["_meta"] = meta
    return checked


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
        if "integer" in allowed and _has_type(value, "integer") and abs(value) > SAFE_INTEGER:
            bound = f"at most {SAFE_INTEGER}" if value > 0 else f"at least {-SAFE_INTEGER}"
            raise InvalidArgumentsError(where, f"must be {bound} (got {_show_number(value)})")
        if isinstance(value, float) and "integer" in allowed and "number" not in allowed:
            value = int(value)
    if "enum" in schema and not any(_same_json(value, option) for option in schema["enum"]):
        options = ", ".join(json.dumps(option) for option in schema["enum"])
        raise InvalidArgumentsError(where, f"must be one of {options} (got {json.dumps(value)})")
    if _is_number(value):
        if "minimum" in schema and value < schema["minimum"]:
            raise InvalidArgumentsError(where, f"must be at least {schema['minimum']} (got {_show_number(value)})")
        if "maximum" in schema and value > schema["maximum"]:
            raise InvalidArgumentsError(where, f"must be at most {schema['maximum']} (got {_show_number(value)})")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            raise InvalidArgumentsError(where, "must not be empty" if schema["minLength"] == 1 else "is too short")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise InvalidArgumentsError(where, f"must be at most {schema['maxLength']} characters")
        if "pattern" in schema and re.search(schema["pattern"], value) is None:
            words = PATTERN_WORDS.get(schema["pattern"], f"must match {schema['pattern']!r}")
            raise InvalidArgumentsError(where, words)
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise InvalidArgumentsError(where, f"must hold at most {schema['maxItems']} items (got {len(value)})")
        if "items" in schema:
            value = [_check_value(f"{where}[{i}]", schema["items"], item) for i, item in enumerate(value)]
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


def _show_number(value: float) -> str:
    """A number as the client wrote it, short: `1e+300`, not three hundred digits."""
    return repr(float(value)) if abs(value) > SAFE_INTEGER else repr(value)


def _describe_types(types: list[str]) -> str:
    article = {"integer": "an integer", "array": "an array", "object": "an object", "null": "null"}
    return " or ".join(article.get(t, f"a {t}") for t in types)


def _same_json(value: Any, option: Any) -> bool:
    """Equal as JSON values: True is not 1, "1" is not 1."""
    return type(value) is type(option) and bool(value == option)
