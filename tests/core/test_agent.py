"""build_options compiles an AgentSpec into exactly the SDK options flower promises."""

from __future__ import annotations

from pathlib import Path

import pytest

from flower.core.agent import (
    PLUGIN_DIR,
    AgentSpec,
    CompactPolicy,
    HandoffPolicy,
    build_options,
    config_dir_for,
    default_window,
)


def test_spec_defaults_match_reference() -> None:
    s = AgentSpec("a", "do")
    assert s.allowed_tools == ["Read", "Glob", "Grep"] and s.disallowed_tools == []
    assert s.permission_mode == "default" and s.workbench is True
    assert not s.glance and not s.delegate_only and s.compact is None and s.env == {}


def test_instructions_are_appended_to_preset(tmp_path: Path) -> None:
    o = build_options(AgentSpec("a", "be terse"), cwd=tmp_path, prelude="INDEX")
    assert o.system_prompt == {"type": "preset", "preset": "claude_code",
                               "append": "be terse\n\nINDEX"}
    assert o.cwd == str(tmp_path)


def test_portable_means_no_setting_sources() -> None:
    assert build_options(AgentSpec("a", "x")).setting_sources == []
    assert build_options(AgentSpec("a", "x"), portable=False).setting_sources == ["project"]


def test_shipped_plugin_is_loaded_from_inside_the_package() -> None:
    assert PLUGIN_DIR.is_dir() and (PLUGIN_DIR / ".claude-plugin" / "plugin.json").is_file()
    assert "flower" in PLUGIN_DIR.parts[-2]  # flower/plugins, inside the package
    o = build_options(AgentSpec("a", "x"))
    assert o.plugins == [{"type": "local", "path": str(PLUGIN_DIR)}]
    assert build_options(AgentSpec("a", "x"), use_plugin=False).plugins == []


def test_resume_fork_and_resume_at_only_with_resume() -> None:
    o = build_options(AgentSpec("a", "x"), fork=True, resume_at="u1")
    assert o.resume is None and not o.fork_session and o.resume_session_at is None
    o = build_options(AgentSpec("a", "x"), resume="sid", fork=True, resume_at="u1")
    assert (o.resume, o.fork_session, o.resume_session_at) == ("sid", True, "u1")


def test_store_and_flush_only_with_a_store() -> None:
    o = build_options(AgentSpec("a", "x"))
    assert o.session_store is None
    store = object()
    o = build_options(AgentSpec("a", "x"), session_store=store)  # type: ignore[arg-type]
    assert o.session_store is store and o.session_store_flush == "eager"


def test_compact_env_layers_over_spec_env_and_extra_env_under_it() -> None:
    spec = AgentSpec("a", "x", env={"FOO": "spec", "CLAUDE_CODE_MAX_RETRIES": "7"},
                     compact=CompactPolicy(mode="no_summary", window=300_000))
    o = build_options(spec, extra_env={"CLAUDE_CODE_MAX_RETRIES": "2", "BAR": "1"})
    assert o.env["FOO"] == "spec" and o.env["BAR"] == "1"
    assert o.env["CLAUDE_CODE_MAX_RETRIES"] == "7"  # flower's default never beats the author
    assert o.env["DISABLE_AUTO_COMPACT"] == "1"
    assert o.env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] == "300000"


def test_compact_modes() -> None:
    assert CompactPolicy().env() == {}
    assert CompactPolicy(mode="off").env() == {"DISABLE_COMPACT": "1"}
    with pytest.raises(ValueError, match="mode"):
        CompactPolicy(mode="sometimes").env()


def test_config_dir_is_always_pinned(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """sdk-notes §0.1: overriding only HOME would make the SDK drop every mirror frame."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "parent"))
    assert config_dir_for({}) == str(tmp_path / "parent")
    assert config_dir_for({"HOME": "/h"}) == "/h/.claude"
    assert config_dir_for({"HOME": "/h", "CLAUDE_CONFIG_DIR": "/c"}) == "/c"
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert config_dir_for({}) == str(tmp_path / ".claude")
    o = build_options(AgentSpec("a", "x", env={"HOME": "/elsewhere"}))
    assert o.env["CLAUDE_CONFIG_DIR"] == "/elsewhere/.claude"


def test_optional_fields_only_when_set() -> None:
    o = build_options(AgentSpec("a", "x"))
    assert o.model is None and o.max_turns is None and o.hooks is None
    o = build_options(AgentSpec("a", "x", model="m", max_turns=3, effort="low",
                                max_budget_usd=1.5))
    assert (o.model, o.max_turns, o.effort, o.max_budget_usd) == ("m", 3, "low", 1.5)


@pytest.mark.parametrize(("model", "window"), [
    ("", 1_000_000), ("claude-opus-5-5", 1_000_000), ("claude-sonnet-4-5[1m]", 1_000_000),
    ("claude-haiku-4-5", 200_000), ("my-1mb-model-haiku", 200_000),
])
def test_default_window(monkeypatch: pytest.MonkeyPatch, model: str, window: int) -> None:
    monkeypatch.delenv("ANTHROPIC_DEFAULT_OPUS_MODEL", raising=False)
    monkeypatch.setenv("ANTHROPIC_MODEL", model)
    assert default_window() == window


def test_handoff_thresholds() -> None:
    h = HandoffPolicy(window=200_000)
    assert h.at == 150_000 and h.warn_at == 130_000
    tiny = HandoffPolicy(window=20_000)
    assert tiny.at == 10_000 and tiny.warn_at == 1_000
