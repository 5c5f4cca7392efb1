"""Role factories: rule text + tool set + the flags the Runtime walls them by (spec §7)."""

from __future__ import annotations

from typing import Any

import pytest
from claude_agent_sdk import AgentDefinition

from flower import texts
from flower.core.agent import AgentSpec, CompactPolicy
from flower.core.guard import wants_isolation
from flower.core.roles import (
    CLARIFIER_RULES,
    COORDINATOR_RULES,
    JUDGE_RULES,
    ORACLE_RULES,
    WORKER_RULES,
    WORKER_TOOLS,
    clarify,
    coordinator,
    judge,
    oracle,
    worker,
)

ASK, INBOX = "mcp__human__ask", "mcp__human__inbox"


class Channel:
    """The three things a role factory reads from a ``HumanChannel``."""

    tool_name = ASK
    inbox_name = INBOX

    def __init__(self) -> None:
        self.server = object()

    def mcp_servers(self) -> dict[str, Any]:
        return {"human": self.server}


def tools_of(spec: AgentSpec) -> set[str]:
    assert len(spec.allowed_tools) == len(set(spec.allowed_tools)), spec.allowed_tools
    return set(spec.allowed_tools)


def coder(tools: list[str] | None = None) -> dict[str, AgentDefinition]:
    return {"coder": worker("writes code", "you implement", tools=tools)}


# ------------------------------------------------------------------ rule texts


def test_rule_texts_are_the_exported_ones() -> None:
    assert COORDINATOR_RULES == texts.COORDINATOR_RULES
    assert WORKER_RULES == texts.WORKER_RULES
    assert CLARIFIER_RULES == texts.CLARIFIER_RULES
    assert JUDGE_RULES == texts.JUDGE_RULES
    assert ORACLE_RULES == texts.ORACLE_RULES


@pytest.mark.parametrize("make,rules", [
    (lambda extra: coordinator("c", extra, {}), COORDINATOR_RULES),
    (lambda extra: clarify("c", None, instructions=extra), CLARIFIER_RULES),
    (lambda extra: judge("j", None, instructions=extra), JUDGE_RULES),
    (lambda extra: oracle(instructions=extra), ORACLE_RULES),
])
def test_instructions_are_rules_then_extra_stripped(make: Any, rules: str) -> None:
    assert make("  只做 A。\n\n").instructions == f"{rules}\n  只做 A。".strip()
    assert make("").instructions == rules.strip()


# ------------------------------------------------------------------ coordinator


def test_coordinator_defaults() -> None:
    workers = coder(["Read", "Write", "Bash"])
    spec = coordinator("协调者", "go", workers)
    assert tools_of(spec) == {"Agent", "TodoWrite", "Read", "Bash"}
    assert spec.name == "协调者" and spec.role == "coordinator"
    assert spec.delegate_only and spec.glance and spec.workbench
    assert spec.permission_mode == "acceptEdits"
    assert spec.agents == workers and spec.agents is not workers
    assert spec.mcp_servers == {} and spec.env == {} and spec.hooks is None


@pytest.mark.parametrize("can_read,glance,expected", [
    (True, True, {"Agent", "TodoWrite", "Read", "Bash"}),
    (True, False, {"Agent", "TodoWrite", "Read"}),
    (False, True, {"Agent", "TodoWrite", "Bash"}),
    (False, False, {"Agent", "TodoWrite"}),
])
def test_coordinator_read_and_glance(can_read: bool, glance: bool, expected: set[str]) -> None:
    spec = coordinator("c", "", coder(["Read"]), can_read=can_read, glance=glance)
    assert tools_of(spec) == expected and spec.glance is glance and spec.delegate_only


@pytest.mark.parametrize("worker_tools,web", [
    (None, {"WebFetch", "WebSearch"}),  # the default worker has both
    (["Read", "WebFetch"], {"WebFetch"}),
    (["WebSearch"], {"WebSearch"}),
    (["Read", "Write", "Edit", "Bash"], set()),
    ([], set()),
])
def test_coordinator_merges_only_web_tools_its_workers_hold(worker_tools: list[str] | None,
                                                           web: set[str]) -> None:
    workers = {**coder(worker_tools), "reader": worker("reads", "p", tools=["Read", "Grep"])}
    got = tools_of(coordinator("c", "", workers))
    assert got == {"Agent", "TodoWrite", "Read", "Bash"} | web
    assert not {"Write", "Edit", "Grep"} & got  # hands-on tools are never merged


def test_coordinator_merges_a_web_tool_once() -> None:
    workers = {"a": worker("a", "p", tools=["WebFetch"]), "b": worker("b", "p")}
    assert coordinator("c", "", workers).allowed_tools.count("WebFetch") == 1


def test_coordinator_with_a_channel_can_ask_and_read_the_inbox() -> None:
    ch = Channel()
    spec = coordinator("c", "", coder(["Read"]), channel=ch)
    assert tools_of(spec) == {"Agent", "TodoWrite", "Read", "Bash", ASK, INBOX}
    assert spec.mcp_servers == {"human": ch.server}


def test_coordinator_passes_its_knobs_through() -> None:
    policy = CompactPolicy(mode="no_summary")
    hooks = {"Stop": []}
    env = {"X": "1"}
    spec = coordinator("c", "", {}, model="opus", effort="high", max_turns=9,
                       max_budget_usd=2.5, permission_mode="bypassPermissions",
                       compact=policy, hooks=hooks, env=env)
    assert (spec.model, spec.effort, spec.max_turns, spec.max_budget_usd) == \
        ("opus", "high", 9, 2.5)
    assert spec.permission_mode == "bypassPermissions"
    assert spec.compact is policy and spec.hooks is hooks
    assert spec.env == env and spec.env is not env


def test_coordinator_does_not_share_tool_lists_between_calls() -> None:
    a = coordinator("c", "", {})
    a.allowed_tools.append("Write")
    assert "Write" not in coordinator("c", "", {}).allowed_tools


# ------------------------------------------------------------------ worker


def test_worker_defaults() -> None:
    d = worker("writes code", "you implement")
    assert isinstance(d, AgentDefinition)
    assert d.description == "writes code"
    assert d.prompt == f"you implement\n\n{WORKER_RULES}"
    assert d.tools == WORKER_TOOLS and d.tools is not WORKER_TOOLS
    assert set(WORKER_TOOLS) == {"Read", "Write", "Edit", "Bash", "Glob", "Grep", "WebFetch",
                                 "WebSearch"}
    assert d.model == "inherit"
    assert d.maxTurns is None and d.permissionMode is None and d.effort is None
    assert d.skills is None
    assert not wants_isolation(d)


def test_worker_without_discipline_keeps_its_prompt() -> None:
    assert worker("d", "only this", discipline=False).prompt == "only this"


def test_worker_knobs_map_to_camel_case_fields() -> None:
    tools = ["Read"]
    d = worker("d", "p", tools=tools, model="haiku", effort=3, max_turns=7,
               permission_mode="acceptEdits", skills=["pdf"])
    assert d.tools == ["Read"] and d.tools is not tools
    assert (d.model, d.effort, d.maxTurns, d.permissionMode, d.skills) == \
        ("haiku", 3, 7, "acceptEdits", ["pdf"])
    assert worker("d", "p", tools=[]).tools == []  # an empty list is not "default"


def test_worker_isolate_marks_it() -> None:
    assert wants_isolation(worker("d", "p", isolate=True))
    assert not wants_isolation(worker("d", "p", isolate=False))


# ------------------------------------------------------------------ clarify


def test_clarify_asks_and_reads() -> None:
    ch = Channel()
    spec = clarify("确认需求", ch)
    assert tools_of(spec) == {ASK, "Read", "Glob", "Grep", "WebFetch", "WebSearch"}
    assert spec.role == "clarifier" and spec.permission_mode == "default"
    assert not spec.workbench and not spec.delegate_only and not spec.glance
    assert spec.mcp_servers == {"human": ch.server} and spec.agents is None
    assert spec.max_turns is None  # unlimited questions


def test_clarify_without_reading_only_asks() -> None:
    assert clarify("c", Channel(), can_read=False).allowed_tools == [ASK]
    assert clarify("c", None, can_read=False).allowed_tools == []
    assert clarify("c", None).mcp_servers == {}


def test_clarify_never_gets_the_inbox_or_hands() -> None:
    got = tools_of(clarify("c", Channel()))
    assert not {INBOX, "Write", "Edit", "Bash", "Agent"} & got


# ------------------------------------------------------------------ judge


@pytest.mark.parametrize("can_run", [False, True])
def test_judge_inspects_and_runs_only_when_allowed(can_run: bool) -> None:
    ch = Channel()
    spec = judge("判定", ch, can_run=can_run)
    assert tools_of(spec) == {ASK, "Read", "Glob", "Grep"} | ({"Bash"} if can_run else set())
    assert spec.role == "judge" and spec.permission_mode == "default"
    assert not spec.workbench and not spec.delegate_only
    assert spec.mcp_servers == {"human": ch.server}
    assert not {INBOX, "Write", "Edit", "Agent"} & tools_of(spec)


def test_judge_without_a_channel() -> None:
    spec = judge("j", None, max_turns=3, max_budget_usd=0.2, model="m", effort="low")
    assert tools_of(spec) == {"Read", "Glob", "Grep"} and spec.mcp_servers == {}
    assert (spec.max_turns, spec.max_budget_usd, spec.model, spec.effort) == (3, 0.2, "m", "low")


# ------------------------------------------------------------------ oracle


def test_oracle_defaults() -> None:
    spec = oracle()
    assert spec.name == "旁路问答" and spec.role == "oracle"
    assert tools_of(spec) == {"Read", "Glob", "Grep"}
    assert spec.max_turns == 12 and spec.max_budget_usd == 0.5
    assert spec.workbench is True and not spec.delegate_only
    assert spec.mcp_servers == {} and spec.permission_mode == "default"


def test_oracle_brakes_can_be_lifted() -> None:
    spec = oracle("问", max_turns=None, max_budget_usd=None)
    assert spec.name == "问" and spec.max_turns is None and spec.max_budget_usd is None


def test_only_the_coordinator_delegates() -> None:
    roles = [coordinator("c", "", {}), clarify("c", None), judge("j", None), oracle()]
    assert [r.delegate_only for r in roles] == [True, False, False, False]
    assert [r.role for r in roles] == ["coordinator", "clarifier", "judge", "oracle"]


def test_a_hand_built_worker_with_every_tool_gets_the_web_tools_merged() -> None:
    """``AgentDefinition(tools=None)`` means every tool, web ones included: its WebFetch
    would otherwise wait for an approval nobody gives (found by reading the code)."""
    from claude_agent_sdk import AgentDefinition

    spec = coordinator("c", "", {"any": AgentDefinition(description="d", prompt="p")})
    assert {"WebFetch", "WebSearch"} <= set(spec.allowed_tools)
