"""`multimodal.enabled`, `modalities`, `max_file_bytes` (OpenClaw's memorySearch.multimodal) and its refusals."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memoryd import config as config_mod
from memoryd.errors import ConfigError
from memoryd.media import DEFAULT_MAX_FILE_BYTES

GEMINI_2 = {"provider": "gemini", "model": "gemini-embedding-2"}


def _agent(tmp_path: Path, **table: Any) -> config_mod.AgentConfig:
    data = {"agents": {"main": {"workspace": str(tmp_path), **table}}}
    return config_mod.build(data, state_dir=tmp_path / "state").agent("main")


def test_off_by_default_with_openclaws_limits(tmp_path: Path) -> None:
    mm = _agent(tmp_path).settings.multimodal
    assert (mm.enabled, mm.active, mm.kinds, mm.max_file_bytes) == (False, False, (), DEFAULT_MAX_FILE_BYTES)
    assert DEFAULT_MAX_FILE_BYTES == 10 * 1024 * 1024


def test_enabled_takes_every_kind_unless_told_which(tmp_path: Path) -> None:
    on = _agent(tmp_path, multimodal={"enabled": True}, **GEMINI_2).settings.multimodal
    assert on.active and on.modalities == ("image", "audio")
    audio = _agent(tmp_path, multimodal={"enabled": True, "modalities": ["audio"]}, **GEMINI_2).settings.multimodal
    assert audio.modalities == ("audio",)
    none = _agent(tmp_path, multimodal={"enabled": True, "modalities": []}, **GEMINI_2).settings.multimodal
    assert not none.active  # enabled with no kind indexes nothing (OpenClaw's isMemoryMultimodalEnabled)


@pytest.mark.parametrize(
    "table",
    [
        {},  # provider auto: which model embeds is not known before it runs
        {"provider": "openai"},
        {"provider": "local"},
        {"provider": "none"},
        {"provider": "gemini"},  # its default model, gemini-embedding-001, takes text only
        {"provider": "gemini", "model": "gemini-embedding-001"},
    ],
)
def test_refused_unless_the_provider_embeds_media(tmp_path: Path, table: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=r"agents\.main\.multimodal\.enabled.*multimodal embedding model"):
        _agent(tmp_path, multimodal={"enabled": True}, **table)


def test_refused_with_a_fallback_provider(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match='fallback = "none"'):
        _agent(tmp_path, multimodal={"enabled": True}, fallback="openai", **GEMINI_2)


def test_gemini_embedding_2_models_are_accepted_with_their_prefixes(tmp_path: Path) -> None:
    for model in ("gemini-embedding-2", "gemini-embedding-2-preview", "models/gemini-embedding-2"):
        assert _agent(tmp_path, multimodal={"enabled": True}, provider="gemini", model=model).settings.multimodal.active


def test_bad_values_name_their_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"multimodal\.max_file_bytes: must be at least 1"):
        _agent(tmp_path, multimodal={"max_file_bytes": 0})
    with pytest.raises(ConfigError, match=r"multimodal\.modalities\[0\]"):
        _agent(tmp_path, multimodal={"enabled": True, "modalities": ["video"]}, **GEMINI_2)


def test_a_disabled_feature_is_never_refused(tmp_path: Path) -> None:
    assert not _agent(tmp_path, multimodal={"enabled": False}, provider="openai").settings.multimodal.active


def test_the_cli_exits_2_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[agents.main]\nworkspace = "{tmp_path}"\nmultimodal = {{ enabled = true }}\n')
    argv = ["config", "show", "--config", str(config), "--state-dir", str(tmp_path / "state")]
    command = [sys.executable, "-m", "memoryd", *argv]
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "multimodal.enabled" in done.stderr and "gemini-embedding-2" in done.stderr
