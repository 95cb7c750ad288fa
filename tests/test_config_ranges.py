"""Every numeric config key has a range; a value outside it is a ConfigError naming the dotted key.

Table-driven at each key's bounds (in `[defaults]`, in an agent's table and for `[daemon]`), plus a
property over any value: accepted exactly when it lies in the range, and then kept as written.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd import config as config_mod
from memoryd.config import ranges
from memoryd.config.ranges import Range
from memoryd.errors import ConfigError

NORMALISED = {
    "query.hybrid.vector_weight",  # the two weights are rescaled to sum to 1
    "query.hybrid.text_weight",
    "sync.watch_max_wait_ms",  # raised to watch_debounce_ms when lower (README says so)
    "qmd.fallback.retry_max_ms",  # raised to retry_ms when lower (README says so)
}
"""Keys whose accepted values are adjusted afterwards, as documented."""

COMPANIONS: dict[str, dict[str, Any]] = {
    "chunking.tokens": {"chunking.overlap": 0},  # so a small chunk size does not trip the overlap rule
}


def numeric_fields(obj: object, prefix: str = "") -> Iterator[tuple[str, type]]:
    hints = typing.get_type_hints(type(obj))
    for f in dataclasses.fields(obj):  # type: ignore[arg-type]
        key = f"{prefix}{f.name.rstrip('_')}"
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            yield from numeric_fields(value, f"{key}.")
        elif hints[f.name] in (int, float):
            yield key, hints[f.name]


SETTINGS_TYPES = dict(numeric_fields(config_mod.MemorySearchSettings()))
DAEMON_TYPES = dict(numeric_fields(config_mod.DaemonSettings()))


def nested(dotted: str, value: object, into: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {} if into is None else into
    node = out
    *parents, leaf = dotted.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = value
    return out


def table_for(key: str, value: object) -> dict[str, Any]:
    table = nested(key, value)
    for other, v in COMPANIONS.get(key, {}).items():
        nested(other, v, table)
    return table


def read_back(settings: object, key: str) -> object:
    node = settings
    for part in key.split("."):
        node = getattr(node, part if part != "lambda" else "lambda_")
    return node


def boundary_cases(key: str, tp: type, r: Range) -> Iterator[tuple[object, bool]]:
    """(value, accepted) at and just past each end of the range."""
    step: float = 1 if tp is int else 0.001
    lo: object = int(r.lo) if tp is int else float(r.lo)
    yield (lo, not r.lo_open)
    yield ((int(r.lo) - 1) if tp is int else r.lo - step, False)
    if r.lo_open:
        yield ((int(r.lo) + 1) if tp is int else r.lo + step, True)
    if r.hi != math.inf:
        yield ((int(r.hi)) if tp is int else float(r.hi), True)
        yield ((int(r.hi) + 1) if tp is int else r.hi + step, False)
    if tp is float:
        yield (math.nan, False)
        yield (math.inf, False)
        yield (-math.inf, False)


def test_every_numeric_key_has_a_range_and_every_range_a_key() -> None:
    assert set(SETTINGS_TYPES) == set(ranges.SETTINGS)
    assert set(DAEMON_TYPES) == set(ranges.DAEMON)


def test_defaults_are_in_range() -> None:
    for key, r in ranges.SETTINGS.items():
        value = read_back(config_mod.MemorySearchSettings(), key)
        assert isinstance(value, int | float) and r.contains(value), key
    for key, r in ranges.DAEMON.items():
        value = read_back(config_mod.DaemonSettings(), key)
        assert isinstance(value, int | float) and r.contains(value), key


SETTINGS_CASES = [
    (key, value, ok)
    for key, r in sorted(ranges.SETTINGS.items())
    for value, ok in boundary_cases(key, SETTINGS_TYPES[key], r)
]


@pytest.mark.parametrize("where", ["defaults", "agents.a"])
@pytest.mark.parametrize(("key", "value", "accepted"), SETTINGS_CASES)
def test_each_settings_key_at_its_bounds(where: str, key: str, value: object, accepted: bool) -> None:
    table = table_for(key, value)
    data = {"defaults": table} if where == "defaults" else {"agents": {"a": {"workspace": "/w", **table}}}
    if accepted:
        settings = config_mod.build(data).agent(None).settings
        if key not in NORMALISED:
            assert read_back(settings, key) == value
        return
    with pytest.raises(ConfigError) as info:
        config_mod.build(data)
    assert info.value.key == f"{where}.{key}"
    assert f"{where}.{key}" in str(info.value) and "must be" in str(info.value)


@pytest.mark.parametrize(
    ("key", "value", "accepted"),
    [(key, v, ok) for key, r in ranges.DAEMON.items() for v, ok in boundary_cases(key, DAEMON_TYPES[key], r)],
)
def test_each_daemon_key_at_its_bounds(key: str, value: object, accepted: bool) -> None:
    data = {"daemon": {key: value}}
    if accepted:
        assert read_back(config_mod.build(data).daemon, key) == value
        return
    with pytest.raises(ConfigError) as info:
        config_mod.build(data)
    assert info.value.key == f"daemon.{key}"


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ({"query": {"min_score": 3}}, "defaults.query.min_score"),
        ({"query": {"max_results": -5}}, "defaults.query.max_results"),
        ({"chunking": {"tokens": 0}}, "defaults.chunking.tokens"),
        ({"chunking": {"overlap": 400}}, "defaults.chunking.overlap"),  # the default tokens is 400
        ({"chunking": {"tokens": 100, "overlap": 100}}, "defaults.chunking.overlap"),
        ({"sync": {"watch_debounce_ms": -1}}, "defaults.sync.watch_debounce_ms"),
        ({"query": {"hybrid": {"vector_weight": 0, "text_weight": 0}}}, "defaults.query.hybrid.text_weight"),
    ],
)
def test_the_issues_examples(table: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        config_mod.build({"defaults": table})
    assert info.value.key == key


def test_a_cross_key_rule_names_the_table_that_broke_it() -> None:
    """overlap < tokens is checked on the agent's effective values: its own key when it set one."""
    data = {
        "defaults": {"chunking": {"overlap": 150}},
        "agents": {"a": {"workspace": "/w", "chunking": {"tokens": 100}}},
    }
    with pytest.raises(ConfigError) as info:
        config_mod.build(data)
    assert info.value.key == "agents.a.chunking.overlap"
    with pytest.raises(ConfigError) as info:
        config_mod.build({"defaults": {"chunking": {"tokens": 50}}, "agents": {"a": {"workspace": "/w"}}})  # overlap 80
    assert info.value.key == "defaults.chunking.overlap"
    ok = config_mod.build(
        {"defaults": {"chunking": {"tokens": 100, "overlap": 20}}, "agents": {"a": {"workspace": "/w"}}}
    )
    assert ok.agent("a").settings.chunking == config_mod.ChunkingSettings(100, 20)


def _values(key: str) -> st.SearchStrategy[object]:
    if SETTINGS_TYPES[key] is int:
        return st.integers(min_value=-(2**40), max_value=2**40)
    return st.floats(allow_nan=True, allow_infinity=True) | st.integers(min_value=-1000, max_value=1000)


@given(st.sampled_from(sorted(ranges.SETTINGS)).flatmap(lambda key: st.tuples(st.just(key), _values(key))))
def test_any_value_is_accepted_exactly_when_in_range(case: tuple[str, object]) -> None:
    key, value = case
    assert isinstance(value, int | float)
    expected = ranges.SETTINGS[key].contains(value)
    if key == "chunking.overlap":
        expected = expected and value < config_mod.ChunkingSettings().tokens
    data = {"defaults": table_for(key, value)}
    if not expected:
        with pytest.raises(ConfigError) as info:
            config_mod.build(data)
        assert info.value.key == f"defaults.{key}"
        return
    settings = config_mod.build(data).agent(None).settings
    if key not in NORMALISED:
        assert read_back(settings, key) == value
