"""Provider selection: auto prefers the packaged local model, explicit providers fall back, none is keyword-only."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from memoryd import config as config_mod
from memoryd.config import MemorySearchSettings
from memoryd.embeddings.select import ProviderPool, select_provider

pytestmark = pytest.mark.anyio


def settings(**table: object) -> MemorySearchSettings:
    return config_mod.build({"defaults": table}).defaults


async def test_none_means_keyword_only_with_a_reason(tmp_path: Path) -> None:
    sel = await select_provider(settings(provider="none"), cache_dir=tmp_path, env={})
    assert sel.provider is None
    assert sel.reason is not None and "keyword-only" in sel.reason


async def test_auto_picks_the_packaged_local_model(tmp_path: Path) -> None:
    sel = await select_provider(settings(), cache_dir=tmp_path, env={})
    assert sel.provider is not None
    try:
        assert sel.provider.id == "local"
        assert sel.reason is None and sel.fallback_from is None
        assert sel.provider.fingerprint.key_data["long_inputs"] == "windows"  # the default reads whole chunks
    finally:
        await sel.provider.aclose()


async def test_long_inputs_truncate_gives_the_truncating_model_its_own_fingerprint(tmp_path: Path) -> None:
    sel = await select_provider(settings(local={"long_inputs": "truncate"}), cache_dir=tmp_path, env={})
    assert sel.provider is not None
    try:
        assert "long_inputs" not in sel.provider.fingerprint.key_data
    finally:
        await sel.provider.aclose()


async def test_auto_skips_an_unusable_local_model_and_uses_a_keyed_remote(tmp_path: Path) -> None:
    broken = settings(local={"model_path": str(tmp_path / "no-model")})
    sel = await select_provider(broken, cache_dir=tmp_path, env={"OPENAI_API_KEY": "sk-test-not-sent-anywhere"})
    assert sel.provider is not None
    try:
        assert sel.provider.id == "openai"
    finally:
        await sel.provider.aclose()


async def test_auto_with_nothing_usable_explains_every_candidate(tmp_path: Path) -> None:
    broken = settings(local={"model_path": str(tmp_path / "no-model")})
    sel = await select_provider(broken, cache_dir=tmp_path, env={})
    assert sel.provider is None
    assert sel.reason is not None
    for name in ("local", "openai", "gemini", "voyage", "mistral"):
        assert f"{name}:" in sel.reason


async def test_an_explicit_provider_without_a_key_falls_back(tmp_path: Path) -> None:
    sel = await select_provider(settings(provider="openai", fallback="local"), cache_dir=tmp_path, env={})
    assert sel.provider is not None
    try:
        assert sel.provider.id == "local"
        assert sel.fallback_from == "openai"
        assert sel.reason is not None and "No API key" in sel.reason
    finally:
        await sel.provider.aclose()
    alone = await select_provider(settings(provider="openai"), cache_dir=tmp_path, env={})
    assert alone.provider is None and alone.reason is not None and "No API key" in alone.reason


async def test_agents_with_the_same_settings_share_one_provider(tmp_path: Path) -> None:
    cfg = config_mod.build(
        {"agents": {"a": {"workspace": str(tmp_path / "a")}, "b": {"workspace": str(tmp_path / "b")}}}
    )
    pool = ProviderPool(cache_dir=tmp_path, env={})
    picked = []

    async def pick(agent_id: str) -> None:
        picked.append(await pool.select(cfg.agent(agent_id)))

    async with anyio.create_task_group() as tg:
        tg.start_soon(pick, "a")
        tg.start_soon(pick, "b")
    assert picked[0].provider is not None and picked[0].provider is picked[1].provider
    await pool.aclose()
