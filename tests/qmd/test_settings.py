"""The `[qmd]` table: OpenClaw's defaults, its resolver rules, and errors that name the key."""

from __future__ import annotations

import pytest

from memoryd import config as config_mod
from memoryd.errors import ConfigError
from memoryd.qmd.settings import QmdPath, QmdSettings, QmdUpdateSettings, normalise_qmd, parse_duration_ms


def test_defaults_are_openclaws() -> None:
    q = QmdSettings()
    assert (q.command, q.search_mode, q.include_default_memory) == ("qmd", "search", True)
    assert (q.update.interval_ms, q.update.debounce_ms, q.update.embed_interval_ms) == (300_000, 15_000, 3_600_000)
    assert (q.update.command_timeout_ms, q.update.update_timeout_ms, q.update.embed_timeout_ms) == (
        30_000,
        120_000,
        120_000,
    )
    assert (q.limits.max_results, q.limits.max_snippet_chars, q.limits.max_injected_chars, q.limits.timeout_ms) == (
        6,
        700,
        4000,
        4000,
    )
    assert not q.sessions.enabled


@pytest.mark.parametrize(
    ("text", "ms"),
    [("5m", 300_000), ("90s", 90_000), ("1.5h", 5_400_000), ("500ms", 500), ("2d", 172_800_000), ("10", 600_000)],
)
def test_durations_read_like_openclaws_with_minutes_as_the_default_unit(text: str, ms: int) -> None:
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize("text", ["soon", "5 minutes", "-1m", "1e999h"])
def test_unreadable_durations_are_rejected(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration_ms(text)


def test_normalising_restores_defaults_for_blank_or_non_positive_values() -> None:
    raw = config_mod.merge(
        QmdSettings(),
        {
            "command": "  ",
            "update": {"interval": " ", "debounce_ms": -5, "update_timeout_ms": 0},
            "limits": {"max_results": 0, "timeout_ms": -1, "max_snippet_chars": 20},
            "fallback": {"retry_ms": 5000, "retry_max_ms": 10},
            "sessions": {"enabled": True, "retention_days": -3},
        },
        "agents.a.qmd",
    )
    q = normalise_qmd(raw)
    assert q.command == "qmd"
    assert (q.update.interval, q.update.debounce_ms, q.update.update_timeout_ms) == ("5m", 0, 120_000)
    assert (q.limits.max_results, q.limits.timeout_ms, q.limits.max_snippet_chars) == (6, 4000, 20)
    assert (q.fallback.retry_ms, q.fallback.retry_max_ms) == (5000, 5000)
    assert q.sessions.enabled and q.sessions.retention_days == 0


def test_a_bad_duration_names_its_key() -> None:
    bad = QmdSettings(update=QmdUpdateSettings(embed_interval="hourly"))
    with pytest.raises(ConfigError, match=r"agents\.a\.qmd\.update\.embed_interval"):
        normalise_qmd(bad, "agents.a.qmd")


def test_a_path_entry_without_a_path_names_its_key() -> None:
    with pytest.raises(ConfigError, match=r"qmd\.extra_collections\[1\]\.path"):
        normalise_qmd(QmdSettings(extra_collections=(QmdPath(path="/x"), QmdPath(name="nameless"))))


def test_the_config_loaders_merge_checks_qmd_keys_and_values() -> None:
    merged = config_mod.merge(QmdSettings(), {"search_mode": "query", "limits": {"timeout_ms": 250}}, "qmd")
    assert merged.search_mode == "query" and merged.limits.timeout_ms == 250
    with pytest.raises(ConfigError, match=r"qmd\.search_mode"):
        config_mod.merge(QmdSettings(), {"search_mode": "semantic"}, "qmd")
    with pytest.raises(ConfigError, match=r"qmd\.mcporter"):
        config_mod.merge(QmdSettings(), {"mcporter": {"enabled": True}}, "qmd")
