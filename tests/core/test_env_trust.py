"""The project ``.env`` trust rule (flower.config.env_trusted) against any mix of human
edits, agent edits, clean ends, kills and ``trust-env``: bytes an agent wrote last are never
read before the human's yes; bytes the human wrote last are read — unless a run was killed
since the last yes (its end was never seen, so a change after it cannot be told from an
agent's: the file then waits for the yes too)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flower import config

EVENTS = st.lists(st.sampled_from(["human", "run-agent-edits", "run-quiet", "killed-edits",
                                   "killed-quiet", "trust"]), max_size=12)


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=EVENTS)
def test_read_exactly_when_the_human_wrote_it_last(state: Path, events: list[str]) -> None:
    import uuid

    ws = state / uuid.uuid4().hex
    ws.mkdir()
    env = ws / ".env"
    agent_last = False  # an agent wrote the bytes there now, and no yes came since
    killed = False  # a run was killed since the last yes
    for n, event in enumerate(events):
        if event == "human":
            env.write_text(f"A={n}\n")
            agent_last = False
        elif event == "trust":
            if env.exists():
                config.trust_env(env)
                agent_last = killed = False
        else:
            readable = config.env_trusted(env)
            if agent_last:
                assert not readable, (events, event)
            elif not killed:
                assert readable, (events, event)
            config.mark_env(ws, agents_done=False)  # what a Runtime does at its start
            if event.endswith("edits"):
                env.write_text(f"AGENT={n}\n")
                agent_last = True
            if event.startswith("run"):
                config.mark_env(ws, agents_done=True)  # and at its end; a kill skips it
            else:
                killed = True
    if agent_last:
        assert not config.env_trusted(env), events
    elif not killed:
        assert config.env_trusted(env), events

def test_a_command_setting_is_never_taken_from_the_project(state: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    monkeypatch.chdir(state)
    monkeypatch.delenv("FLOWER_NOTIFY", raising=False)
    (state / ".env").write_text("FLOWER_NOTIFY=touch x\nOTHER=1\n")
    got = config.load_dotenv(export=False)
    assert got.get("OTHER") == "1" and "FLOWER_NOTIFY" not in got
