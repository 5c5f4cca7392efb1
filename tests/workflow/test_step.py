"""Step declarations are checked when they are written, not hours into a run."""

from __future__ import annotations

import pytest

from flower import AgentSpec, Step
from flower.workflow.base import _label

SPEC = AgentSpec("a", "x")


def test_underscore_names_are_reserved_for_ctx_keys() -> None:
    with pytest.raises(ValueError, match="reserved"):
        Step("_results", SPEC, "x")


def test_unknown_on_fail_is_refused() -> None:
    with pytest.raises(ValueError, match="on_fail"):
        Step("s", SPEC, "x", on_fail="retry")


def test_render_uses_resume_prompt_only_when_resuming() -> None:
    s = Step("s", SPEC, lambda ctx: f"do {ctx['x']}", resume_prompt="carry on")
    assert s.render({"x": 1}) == "do 1"
    assert s.render({"x": 1}, resuming=True) == "carry on"
    assert Step("t", SPEC, "p").render({}, resuming=True) == "p"


def test_attempt_labels() -> None:
    plain = Step("写", SPEC, "x")
    judged = Step("写", SPEC, "x", on_reject=lambda r, c: "more")
    assert [_label(plain, i) for i in range(3)] == ["写", "写#retry1", "写#retry2"]
    assert [_label(judged, i) for i in range(3)] == ["写", "写#round2", "写#round3"]
