"""Runtime construction: credentials checked up front, policies coerced, bad state refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from flower import EphemeralPolicy, Resilience, Runtime, TrimPolicy
from flower.core.agent import HandoffPolicy


def test_missing_credentials_is_a_clear_error(home: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RuntimeError) as err:
        Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs")
    assert "ANTHROPIC_API_KEY" in str(err.value)


def test_policies_are_coerced(home: Path, tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-0000000000")
    rt = Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs", trim=True,
                 ephemeral=False, resilience=False, handoff=HandoffPolicy(window=300_000))
    try:
        assert isinstance(rt.trim_policy, TrimPolicy) and rt.trim_policy.enabled
        assert isinstance(rt.ephemeral_policy, EphemeralPolicy) and not rt.ephemeral_policy.enabled
        assert isinstance(rt.resilience, Resilience) and not rt.resilience.enabled
        assert rt.handoff.window == 300_000
        assert rt.store.policy is rt.trim_policy
        assert (tmp_path / "runs" / "sessions.db").exists() and rt.workbench is None
        assert rt.total_cost() == 0.0
        other = Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs")
        assert other.run_id != rt.run_id  # manifest rows of two processes never collide
        other.close()
    finally:
        rt.close()


def test_corrupt_sessions_db_is_refused_untouched(home: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-0000000000")
    runs = tmp_path / "runs"
    runs.mkdir()
    junk = b"this is not a database" * 100
    (runs / "sessions.db").write_bytes(junk)
    with pytest.raises(RuntimeError) as err:
        Runtime(workspace=tmp_path / "ws", run_dir=runs)
    assert str(runs / "sessions.db") in str(err.value)
    assert (runs / "sessions.db").read_bytes() == junk


def test_dotenv_false_reads_no_env_file(home: Path, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """``flower demo`` builds its Runtime with ``dotenv=False``: a key the user saved with
    ``flower setup`` never reaches the agent's env (and does not count as a credential)."""
    monkeypatch.chdir(tmp_path)
    saved = home / ".config" / "flower" / ".env"
    saved.parent.mkdir(parents=True)
    saved.write_text("ANTHROPIC_AUTH_TOKEN=tok-saved-by-setup-0000\n")
    with pytest.raises(RuntimeError):
        Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs", dotenv=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-0000000000")
    rt = Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs", dotenv=False)
    try:
        assert "ANTHROPIC_AUTH_TOKEN" not in rt._agent_env()
    finally:
        rt.close()
    rt = Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs")
    try:  # the default still hands it over
        assert rt._agent_env()["ANTHROPIC_AUTH_TOKEN"] == "tok-saved-by-setup-0000"
    finally:
        rt.close()
