"""The gateway serves another model than the configured one: flower says so once per run.

The window — and with it every handoff threshold — is guessed from the configured name
(``claude-x[1m]`` → 1M). A gateway that quietly serves ``claude-y`` makes that guess
meaningless, and the person should hear it once, with the way out (``FLOWER_WINDOW`` /
``--window``), not once per step. The ``[1m]`` suffix alone is no mismatch: the CLI reads
it as a window hint and sends ``claude-x``.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from flower import AgentSpec, Runtime, Step, Workflow, texts
from flower.core.events import Event
from flower.testing import FakeServer, reply, tool_use

STEP_TIMEOUT = 90


def spec() -> AgentSpec:
    return AgentSpec("worker", "test agent", allowed_tools=["Bash", "Read"],
                     permission_mode="bypassPermissions")


def mismatches(events: list[Event]) -> list[Event]:
    return [ev for ev in events if ev.payload.get("model_mismatch")]


async def run_steps(workspace: Path, run_dir: Path, n: int) -> list[Event]:
    events: list[Event] = []
    wf = Workflow([Step(f"第{i}步", spec(), f"do part {i}") for i in range(1, n + 1)],
                  continuous=False)
    rt = Runtime(workspace=workspace, run_dir=run_dir, resilience=False)
    try:
        with anyio.fail_after(STEP_TIMEOUT * n):
            ctx = await wf.run(rt, on_event=events.append)
    finally:
        rt.close()
    assert "_failed_at" not in ctx, ctx["_results"]
    return events


@pytest.fixture
def configured(cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("ANTHROPIC_MODEL", "claude-x[1m]")
    return "claude-x[1m]"


async def test_another_model_is_told_once_per_run(fake: FakeServer, workspace: Path,
                                                  run_dir: Path, configured: str) -> None:
    # step 1 takes a tool round (two replies), the others one reply: four served messages
    fake.script(reply("looking", tool_use("Bash", {"command": "echo hi"}), model="claude-y"))
    fake.fallback(reply("done", model="claude-y"))
    events = await run_steps(workspace, run_dir, 3)
    (warning,) = mismatches(events)
    assert warning.kind == "task"
    assert warning.payload["configured"] == configured
    assert warning.payload["served"] == "claude-y"
    assert warning.payload["window"] == 1_000_000  # what the name guess made of [1m]
    assert "claude-y" in warning.text and configured in warning.text
    assert "FLOWER_WINDOW" in warning.text and "--window" in warning.text
    assert warning.text == texts.MODEL_MISMATCH.format(
        served="claude-y", configured=configured, window="1,000,000")
    # the warning came with the first served reply, before the first step was over
    first_result = next(i for i, ev in enumerate(events) if ev.kind == "result")
    assert events.index(warning) < first_result

    again = await run_steps(workspace, run_dir, 1)  # a new run is told again
    assert len(mismatches(again)) == 1


async def test_the_window_hint_alone_is_no_mismatch(fake: FakeServer, workspace: Path,
                                                    run_dir: Path, configured: str) -> None:
    fake.fallback(reply("done"))  # the fake answers with the model it was asked for
    events = await run_steps(workspace, run_dir, 2)
    assert mismatches(events) == []
    asked = {r.model for r in fake.message_requests()}
    assert asked == {"claude-x"}  # the CLI sent the name without its [1m] hint


async def test_a_spec_with_its_own_model_is_not_compared(fake: FakeServer, workspace: Path,
                                                         run_dir: Path, configured: str) -> None:
    """A step that names its model asked for something else on purpose."""
    fake.fallback(reply("done", model="claude-y"))
    events: list[Event] = []
    rt = Runtime(workspace=workspace, run_dir=run_dir, resilience=False)
    try:
        with anyio.fail_after(STEP_TIMEOUT):
            own = AgentSpec("worker", "test agent", model="claude-z",
                            permission_mode="bypassPermissions")
            result = await rt.run(own, "hi", on_event=events.append)
    finally:
        rt.close()
    assert result.ok and mismatches(events) == []
