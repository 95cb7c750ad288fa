"""The docs are tested: every CLI command and every config key appears in the README, every tool in PROTOCOL.md."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd import config as config_mod
from memoryd.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def config_keys(obj: object, prefix: str = "") -> Iterator[str]:
    assert dataclasses.is_dataclass(obj)
    for f in dataclasses.fields(obj):
        key = f"{prefix}.{f.name.rstrip('_')}" if prefix else f.name.rstrip("_")
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            yield from config_keys(value, key)
        else:
            yield key


def commands() -> list[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices)


@pytest.mark.parametrize(
    "key",
    sorted(
        [
            *config_keys(config_mod.MemorySearchSettings()),
            *config_keys(config_mod.DaemonSettings(), "daemon"),
            *config_keys(config_mod.HooksSettings(), "hooks"),
        ]
    ),
)
def test_every_config_key_is_documented(key: str) -> None:
    assert f"`{key}`" in README, f"config key {key} is missing from README.md's configuration table"


@pytest.mark.parametrize("command", commands())
def test_every_cli_command_is_documented(command: str) -> None:
    assert f"`memoryd {command}" in README, f"command {command} is missing from README.md"


@pytest.mark.parametrize("tool", ["memory_search", "memory_get", "status", "memory_write"])
def test_every_tool_is_documented(tool: str) -> None:
    protocol = (ROOT / "protocol" / "PROTOCOL.md").read_text(encoding="utf-8")
    assert tool in protocol
    assert f"`{tool}`" in README
