"""Names scripts of the original flower import from ``flower.core.agent`` and
``flower.core.env``, each behaving as it does there: the self-calibration trio, the
``HandoffPolicy`` window as a number and its ``HEADROOM_FLOOR``, and the probe's verdicts."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from flower.core import agent, env, handoff
from flower.core.agent import (
    HandoffPolicy,
    calib_path,
    calibrated_window,
    default_window,
    remember_overflow,
)

from .test_env import FakeApi, error_body

WINDOW_VARS = ("ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL",
               "FLOWER_WINDOW", "FLOWER_ENV", "http_proxy", "https_proxy", "HTTP_PROXY",
               "HTTPS_PROXY", "all_proxy", "ALL_PROXY")


@pytest.fixture(autouse=True)
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key in WINDOW_VARS:
        monkeypatch.delenv(key, raising=False)
    cfg = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(cfg))
    return cfg


# --- the calibration file, from flower.core.agent --------------------------------------------

def test_calibration_names_are_the_handoff_functions(config_home: Path) -> None:
    assert remember_overflow is handoff.remember_overflow  # one definition
    assert calibrated_window is handoff.calibrated_window
    assert calib_path is handoff.windows_path
    assert calib_path() == config_home / "flower" / ".windows"


def test_calibration_round_trip_through_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_MODEL", "claude-opus-5[1m]")
    assert calibrated_window() is None
    assert remember_overflow(174_000) == 174_000 and calibrated_window() == 174_000
    assert remember_overflow(999_000) == 174_000  # min wins
    assert calib_path().is_file()


# --- HandoffPolicy ----------------------------------------------------------------------------

def test_headroom_floor_is_a_class_attribute() -> None:
    assert HandoffPolicy.HEADROOM_FLOOR == 50_000 == agent.HEADROOM_FLOOR
    assert HandoffPolicy.HEADROOM_FRACTION == 0.25
    assert "HEADROOM_FLOOR" not in {f.name for f in dataclasses.fields(HandoffPolicy)}
    assert HandoffPolicy(window=200_000).room == HandoffPolicy.HEADROOM_FLOOR


def test_default_window_applies_env_then_calibration_then_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_MODEL", "claude-haiku-4-5")
    assert default_window() == 200_000  # the name
    remember_overflow(180_000)
    assert default_window() == 180_000  # the calibration beats the name
    monkeypatch.setenv("FLOWER_WINDOW", "300000")
    assert default_window() == 300_000  # FLOWER_WINDOW beats the calibration
    # the settings given, not os.environ: another endpoint has no calibration record
    assert default_window({"ANTHROPIC_MODEL": "claude-haiku-4-5",
                           "ANTHROPIC_BASE_URL": "http://gw"}) == 200_000


def test_the_default_window_is_a_number(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_MODEL", "claude-haiku-4-5")
    h = HandoffPolicy()
    assert isinstance(h.window, int) and h.window == 200_000
    assert h.at == 150_000 and h.warn_at == 130_000
    monkeypatch.setenv("FLOWER_WINDOW", "400000")
    assert HandoffPolicy().window == 400_000
    assert HandoffPolicy(window=0).window == 400_000  # 0 means "not given", as before


def test_an_explicit_window_stays_explicit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWER_WINDOW", "400000")
    h = HandoffPolicy(window=120_000)
    assert h.window == 120_000 and h.effective_window == 120_000
    assert h.resolved().window == 120_000
    assert h.resolved({"FLOWER_WINDOW": "900000"}).window == 120_000


def test_a_default_window_follows_the_settings_it_runs_with(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The Runtime hands its .env values (never exported to os.environ) to ``resolved``;
    FLOWER_WINDOW written there by ``flower setup`` must win over the value the policy got
    at construction. So must a calibration recorded later, and ``replace`` keeps that."""
    monkeypatch.setenv("ANTHROPIC_MODEL", "claude-haiku-4-5")
    h = HandoffPolicy()
    assert h.window == 200_000
    assert h.resolved({"ANTHROPIC_MODEL": "claude-haiku-4-5",
                       "FLOWER_WINDOW": "1m"}).window == 200_000  # not a number: ignored
    assert h.resolved({"FLOWER_WINDOW": "500000"}).window == 500_000
    remember_overflow(150_000)
    assert h.effective_window == 150_000 and h.resolved().window == 150_000
    wider = dataclasses.replace(h, headroom=10_000)
    assert wider.resolved({"FLOWER_WINDOW": "500000"}).window == 500_000
    pinned = h.resolved()
    assert pinned.resolved({"FLOWER_WINDOW": "500000"}).window == 150_000  # now pinned


# --- the probe's verdicts ---------------------------------------------------------------------

def test_probe_constants() -> None:
    assert (env.PROBE_OK, env.PROBE_AUTH, env.PROBE_NET, env.PROBE_CONFIG) == \
        ("ok", "auth", "net", "config")
    assert env.PROBE_MAX_TOKENS == 16
    assert {"PROBE_OK", "PROBE_AUTH", "PROBE_NET", "PROBE_CONFIG",
            "PROBE_MAX_TOKENS"} <= set(env.__all__)


def test_the_probe_returns_the_constants() -> None:
    api = FakeApi()
    try:
        creds = {"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": api.url}
        assert env.probe_credentials(5, environ=creds)[0] == env.PROBE_OK
        assert api.requests[-1]["body"]["max_tokens"] == env.PROBE_MAX_TOKENS
        api.status, api.body = 401, error_body("authentication_error", "invalid x-api-key")
        assert env.probe_credentials(5, environ=creds)[0] == env.PROBE_AUTH
        api.status, api.body = 404, error_body("not_found_error", "Not Found")
        assert env.probe_credentials(5, environ=creds)[0] == env.PROBE_CONFIG
        api.status, api.body = 529, error_body("overloaded_error", "Overloaded")
        assert env.probe_credentials(5, environ=creds)[0] == env.PROBE_NET
    finally:
        api.close()
    assert env.probe_credentials(5, environ={})[0] == env.PROBE_AUTH  # no credential at all
    bad = {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "notaurl"}
    assert env.probe_credentials(5, environ=bad)[0] == env.PROBE_CONFIG


# --- is the served model the configured one? ---------------------------------------------------

@pytest.mark.parametrize(("configured", "served", "differs"), [
    ("claude-x[1m]", "claude-x", False),  # the window hint is the CLI's, not the API's
    ("claude-x[1m]", "claude-y", True),
    ("Claude-X", "claude-x", False),  # case is ignored
    ("claude-opus-5", "claude-opus-5-20260101", False),  # an alias served as its snapshot
    ("claude-opus-5", "claude-opus-4-5-20251101", True),
    ("claude-opus-5-20260101", "claude-opus-5", False),
    ("opus", "claude-opus-5-20260101", False),  # a bare alias: nothing to compare
    ("", "claude-y", False),  # nothing configured
    ("claude-x", "", False),
])
def test_served_differs(configured: str, served: str, differs: bool) -> None:
    assert agent.served_differs(configured, served) is differs


def test_configured_model_falls_back_to_the_opus_variable() -> None:
    assert agent.configured_model({"ANTHROPIC_DEFAULT_OPUS_MODEL": "claude-x[1m]"}) == \
        "claude-x[1m]"
    assert agent.configured_model({"ANTHROPIC_MODEL": "a", "ANTHROPIC_DEFAULT_OPUS_MODEL": "b"}) \
        == "a"
    assert agent.configured_model({}) == ""
