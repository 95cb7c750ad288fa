"""Config: OpenClaw's defaults, key-by-key merging, clamps, and errors that name the key."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from memoryd import config as config_mod
from memoryd.errors import ConfigError, NotFoundError


def test_defaults_are_openclaws_except_where_locomo_measured_better() -> None:
    """Equal fusion weights beat OpenClaw's 0.7/0.3 on every dev set; min_score 0.10 keeps what equal
    weights score a meaning-only match, and min_evidence 0.12 abstains on a question the memory never
    mentions (memoryd eval, issue 14); every other default is OpenClaw's."""
    s = config_mod.build({}).agent(None).settings
    assert (s.chunking.tokens, s.chunking.overlap) == (400, 80)
    assert (s.query.max_results, s.query.min_score, s.query.min_evidence) == (6, 0.10, 0.12)
    h = s.query.hybrid
    assert (h.enabled, h.vector_weight, h.text_weight, h.candidate_multiplier) == (True, 0.5, 0.5, 4)
    assert (h.mmr.enabled, h.mmr.lambda_) == (False, 0.7)
    assert (h.temporal_decay.enabled, h.temporal_decay.half_life_days) == (False, 30)
    assert (s.sync.watch, s.sync.watch_debounce_ms, s.sync.interval_minutes) == (True, 1500, 0)
    assert (s.sync.sessions.delta_bytes, s.sync.sessions.delta_messages) == (100_000, 50)
    assert (s.remote.batch.enabled, s.remote.batch.concurrency, s.remote.batch.poll_interval_ms) == (False, 2, 2000)
    assert s.cache.enabled is True
    assert s.store.fts.tokenizer == "unicode61"
    assert s.query.date_boost == 0.2
    assert s.query.rerank.provider == "none"
    assert s.provider == "auto" and s.fallback == "none"
    assert s.sources == ("memory", "sessions")


def test_agent_overrides_merge_key_by_key_over_defaults(tmp_path: Path) -> None:
    cfg = config_mod.build(
        {
            "defaults": {"query": {"max_results": 10, "hybrid": {"mmr": {"enabled": True}}}},
            "agents": {
                "a": {"workspace": str(tmp_path), "query": {"min_score": 0.5, "hybrid": {"mmr": {"lambda": 0.4}}}}
            },
        }
    )
    q = cfg.agent("a").settings.query
    assert q.max_results == 10
    assert q.min_score == 0.5
    assert q.hybrid.mmr.enabled is True
    assert q.hybrid.mmr.lambda_ == 0.4


def test_out_of_range_values_are_errors_where_openclaw_clamps(tmp_path: Path) -> None:
    """OpenClaw clamps these silently (spec §1); memoryd names the key (tests/test_config_ranges.py has them all)."""
    for table, key in (
        ({"chunking": {"tokens": 0}}, "agents.a.chunking.tokens"),
        ({"query": {"min_score": 3.0}}, "agents.a.query.min_score"),
        ({"query": {"hybrid": {"candidate_multiplier": 99}}}, "agents.a.query.hybrid.candidate_multiplier"),
        ({"query": {"hybrid": {"vector_weight": 0, "text_weight": 0}}}, "agents.a.query.hybrid.text_weight"),
    ):
        with pytest.raises(ConfigError) as info:
            config_mod.build({"agents": {"a": {"workspace": str(tmp_path), **table}}})
        assert info.value.key == key


def test_normalise_keeps_openclaws_clamps_for_settings_built_in_code() -> None:
    raw = config_mod.MemorySearchSettings(
        chunking=config_mod.ChunkingSettings(tokens=0, overlap=50),
        query=dataclasses.replace(
            config_mod.QuerySettings(),
            min_score=3.0,
            hybrid=dataclasses.replace(
                config_mod.HybridSettings(), vector_weight=0, text_weight=0, candidate_multiplier=99
            ),
        ),
    )
    s = config_mod.normalise(raw)
    assert (s.chunking.tokens, s.chunking.overlap) == (1, 0)
    assert s.query.min_score == 1.0
    assert (s.query.hybrid.vector_weight, s.query.hybrid.text_weight) == (0.7, 0.3)
    assert s.query.hybrid.candidate_multiplier == 20


def test_weights_are_normalised_to_sum_to_one(tmp_path: Path) -> None:
    cfg = config_mod.build({"defaults": {"query": {"hybrid": {"vector_weight": 0.5, "text_weight": 0.5}}}})
    h = cfg.agent(None).settings.query.hybrid
    assert (h.vector_weight, h.text_weight) == (0.5, 0.5)


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"defaults": {"query": {"max_results": "ten"}}}, "defaults.query.max_results"),
        ({"defaults": {"qury": {}}}, "defaults.qury"),
        ({"defaults": {"store": {"fts": {"tokenizer": "icu"}}}}, "defaults.store.fts.tokenizer"),
        ({"defaults": {"sync": {"watch": 1}}}, "defaults.sync.watch"),
        ({"defaults": {"sources": ["memory", 3]}}, "defaults.sources[1]"),
        ({"agents": {"a": {"chunking": {"tokens": True}}}}, "agents.a.chunking.tokens"),
        ({"agents": {"bad id!": {}}}, "agents.bad id!"),
        ({"agents": {"a": {"workspace": 5}}}, "agents.a.workspace"),
        ({"deamon": {}}, "deamon"),
    ],
)
def test_invalid_values_name_the_key_and_value(data: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        config_mod.build(data)
    assert info.value.key == key
    assert key in str(info.value)


def test_workspace_flag_adds_an_adhoc_agent_with_its_sessions_dir(tmp_path: Path) -> None:
    cfg = config_mod.build({}, workspace=tmp_path / "ws", state_dir=tmp_path / "st")
    agent = cfg.agent(None)
    assert agent.id == "main"
    assert agent.workspace == (tmp_path / "ws").absolute()
    assert agent.sessions_dir == agent.workspace / "sessions"
    assert agent.db_path == tmp_path / "st" / "agents" / "main" / "index.sqlite"


def test_store_path_takes_the_agent_id_token(tmp_path: Path) -> None:
    cfg = config_mod.build(
        {"defaults": {"store": {"path": str(tmp_path / "{agentId}.sqlite")}}, "agents": {"x": {"workspace": "/w"}}}
    )
    assert cfg.agent("x").db_path == tmp_path / "x.sqlite"


def test_unknown_agent_lists_the_known_ones() -> None:
    cfg = config_mod.build({"agents": {"a": {"workspace": "/a"}, "b": {"workspace": "/b"}}})
    with pytest.raises(NotFoundError, match="a, b"):
        cfg.agent("c")
    with pytest.raises(NotFoundError, match="several agents"):
        cfg.agent(None)


def test_load_reads_toml_and_reports_syntax_errors(tmp_path: Path) -> None:
    good = tmp_path / "good.toml"
    good.write_text('[agents.notes]\nworkspace = "/srv/notes"\n[agents.notes.query]\nmax_results = 3\n')
    assert config_mod.load(good).agent("notes").settings.query.max_results == 3
    bad = tmp_path / "bad.toml"
    bad.write_text("[agents\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        config_mod.load(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        config_mod.load(tmp_path / "missing.toml")


def test_extra_paths_resolve_against_the_workspace_and_dedupe(tmp_path: Path) -> None:
    cfg = config_mod.build(
        {"agents": {"a": {"workspace": str(tmp_path), "extra_paths": ["notes", " notes ", "", "/abs/x.md"]}}}
    )
    assert cfg.agent("a").extra_paths == (tmp_path / "notes", Path("/abs/x.md"))


def test_an_agents_extra_paths_add_to_the_defaults_without_duplicates(tmp_path: Path) -> None:
    """OpenClaw concatenates defaults' and agent's `extraPaths`, trims, drops empties, de-duplicates in order."""
    cfg = config_mod.build(
        {
            "defaults": {"extra_paths": ["/shared/team", "/shared/wiki"]},
            "agents": {
                "a": {"workspace": str(tmp_path), "extra_paths": [" /shared/wiki ", "", "own"]},
                "b": {"workspace": str(tmp_path)},
            },
        }
    )
    assert cfg.agent("a").settings.extra_paths == ("/shared/team", "/shared/wiki", "own")
    assert cfg.agent("a").extra_paths == (Path("/shared/team"), Path("/shared/wiki"), tmp_path / "own")
    assert cfg.agent("b").settings.extra_paths == ("/shared/team", "/shared/wiki")


def test_qmd_collection_lists_add_to_the_defaults() -> None:
    shared = {"path": "/srv/shared", "name": "shared"}
    cfg = config_mod.build(
        {
            "defaults": {"qmd": {"paths": [shared], "extra_collections": [shared]}},
            "agents": {"a": {"qmd": {"paths": [{"path": "/srv/a"}, shared], "extra_collections": [{"path": "x"}]}}},
        }
    )
    q = cfg.agent("a").settings.qmd
    assert [p.path for p in q.paths] == ["/srv/shared", "/srv/a"]
    assert [p.path for p in q.extra_collections] == ["/srv/shared", "x"]


def test_enumerations_and_header_tables_replace_the_defaults_whole() -> None:
    cfg = config_mod.build(
        {
            "defaults": {"sources": ["memory", "sessions"], "remote": {"headers": {"X-A": "1", "X-B": "2"}}},
            "agents": {"a": {"sources": ["memory"], "remote": {"headers": {"X-C": "3"}}}},
        }
    )
    s = cfg.agent("a").settings
    assert s.sources == ("memory",)
    assert s.remote.headers == {"X-C": "3"}


def test_every_list_valued_key_has_a_documented_merge_rule() -> None:
    """A new list key must be sorted into appended or replaced, and the README must say which."""
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    for dotted in config_mod.APPENDED_LISTS:
        assert f"`{dotted}`" in readme.split("### How `[defaults]` and an agent combine", 1)[1]
    lists = []

    def walk(obj: object, prefix: str) -> None:
        for f in dataclasses.fields(obj):  # type: ignore[arg-type]
            value = getattr(obj, f.name)
            key = f"{prefix}{f.name.rstrip('_')}"
            if dataclasses.is_dataclass(value):
                walk(value, key + ".")
            elif isinstance(value, tuple | dict):
                lists.append(key)

    walk(config_mod.MemorySearchSettings(), "")
    section = readme.split("### How `[defaults]` and an agent combine", 1)[1].split("\n## ", 1)[0]
    for key in lists:
        assert f"`{key}`" in section, key


def test_to_dict_round_trips_every_key_name() -> None:
    shown = config_mod.to_dict(config_mod.build({}).agent(None).settings)
    assert isinstance(shown, dict)
    assert shown["query"]["hybrid"]["mmr"]["lambda"] == 0.7


def roots_of(cfg: config_mod.Config, agent: str) -> list[tuple[str, Path, str]]:
    return [(r.prefix, r.path, r.preset) for r in cfg.agent(agent).session_roots]


def test_transcript_presets_name_each_tools_default_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    data = {"agents": {"work": {"workspace": str(tmp_path / "ws"), "sessions": ["claude-code", "codex", "openclaw"]}}}
    assert roots_of(config_mod.build(data), "work") == [
        ("sessions", (tmp_path / "ws" / "sessions"), ""),
        ("claude-code", home / ".claude" / "projects", "claude-code"),
        ("codex", home / ".codex" / "sessions", "codex"),
        ("openclaw", home / ".openclaw" / "agents" / "work" / "sessions", "openclaw"),
    ]


def test_transcript_presets_follow_each_tools_own_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "cx"))
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(tmp_path / "oc"))
    data = {"agents": {"a": {"workspace": str(tmp_path / "ws"), "sessions": ["claude-code", "codex", "openclaw:main"]}}}
    assert [path for _, path, _ in roots_of(config_mod.build(data), "a")][1:] == [
        tmp_path / "cc" / "projects",
        tmp_path / "cx" / "sessions",
        tmp_path / "oc" / "agents" / "main" / "sessions",
    ]


def test_openclaws_legacy_state_folder_is_used_when_it_is_the_only_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".clawdbot").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    data = {"agents": {"main": {"workspace": str(tmp_path / "ws"), "sessions": ["openclaw"]}}}
    assert roots_of(config_mod.build(data), "main")[1][1] == home / ".clawdbot" / "agents" / "main" / "sessions"


def test_a_folder_named_twice_is_one_root_and_the_sessions_dir_keeps_its_prefix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    projects = tmp_path / ".claude" / "projects"
    data = {
        "agents": {
            "main": {"workspace": str(tmp_path / "ws"), "sessions_dir": str(projects), "sessions": ["claude-code"]}
        }
    }
    assert roots_of(config_mod.build(data), "main") == [("sessions", projects, "")]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("claude-code", "expected a list"),
        (["claude-code", 3], "expected a list"),
        (["cursor"], "unknown transcript preset"),
        (["openclaw", "openclaw:other"], "share the prefix"),
        (["openclaw:../x"], "OpenClaw agent id"),
    ],
)
def test_bad_transcript_presets_are_refused_naming_the_key(tmp_path: Path, value: object, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        config_mod.build({"agents": {"a": {"workspace": str(tmp_path), "sessions": value}}})
    assert info.value.key == "agents.a.sessions"
    assert message in str(info.value)


def test_transcript_presets_are_an_agent_key_only() -> None:
    with pytest.raises(ConfigError) as info:
        config_mod.build({"defaults": {"sessions": ["codex"]}})
    assert "sessions" in info.value.key
