"""Settings from mappings: every TOML value checked against the dataclass field's declared type.

`merge` overlays a table onto a settings instance key by key (an unknown key or a wrong type is a
ConfigError naming the dotted key and the value); `to_dict` is the reverse, for `config show`.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from memoryd.errors import ConfigError

T = TypeVar("T")


def _type_name(tp: object) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return " | ".join(repr(a) for a in typing.get_args(tp))
    if origin in (tuple, list):
        return f"list of {_type_name(typing.get_args(tp)[0])}"
    if origin is dict:
        return "table of strings"
    return getattr(tp, "__name__", str(tp))


def _coerce(value: object, tp: Any, key: str) -> object:
    """Check `value` against the declared type `tp`; return the typed value or raise ConfigError."""
    origin = typing.get_origin(tp)
    bad = ConfigError(key, f"expected {_type_name(tp)}, got {value!r}")
    if origin is Literal:
        if value not in typing.get_args(tp):
            raise bad
        return value
    if origin in (tuple, list):
        if not isinstance(value, list | tuple):
            raise bad
        (item_tp, *_rest) = typing.get_args(tp)
        items = [_coerce(v, item_tp, f"{key}[{i}]") for i, v in enumerate(value)]
        return tuple(dict.fromkeys(items)) if origin is tuple else items
    if origin is dict:
        if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise bad
        return dict(value)
    if origin in (types.UnionType, typing.Union):
        for option in typing.get_args(tp):
            try:
                return _coerce(value, option, key)
            except ConfigError:
                continue
        raise bad
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if not isinstance(value, Mapping):
            raise bad
        return merge(tp(), value, key)
    if tp is bool:
        if not isinstance(value, bool):
            raise bad
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise bad
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise bad
        return value
    raise ConfigError(key, f"unsupported setting type {tp!r}")


def _field_key(f: dataclasses.Field[object]) -> str:
    return f.name.rstrip("_")  # `lambda_` is spelled `lambda` in the file


def merge(base: T, data: Mapping[str, object], prefix: str) -> T:
    """Overlay `data` onto the dataclass instance `base`, key by key, recursively; unknown keys are errors."""
    hints = typing.get_type_hints(type(base))
    fields = {_field_key(f): f for f in dataclasses.fields(base)}  # type: ignore[arg-type]
    changes: dict[str, object] = {}
    for key, value in data.items():
        dotted = f"{prefix}.{key}" if prefix else key
        f = fields.get(key)
        if f is None:
            raise ConfigError(dotted, f"unknown key (known: {', '.join(sorted(fields))})")
        tp = hints[f.name]
        current = getattr(base, f.name)
        if dataclasses.is_dataclass(current):
            if not isinstance(value, Mapping):
                raise ConfigError(dotted, f"expected a table, got {value!r}")
            changes[f.name] = merge(current, value, dotted)
        else:
            changes[f.name] = _coerce(value, tp, dotted)
    return dataclasses.replace(base, **changes)  # type: ignore[type-var]


def to_dict(obj: object) -> object:
    """A JSON-ready view of any settings object (for `memoryd config show`)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {_field_key(f): to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, tuple | list):
        return [to_dict(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): to_dict(v) for k, v in obj.items()}
    return obj
