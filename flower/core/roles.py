"""Role factories: coordinator, worker, clarify, judge, oracle, bequest.

A role is rule text plus a tool set. What a role may *not* do is enforced by the hooks the
Runtime installs from the spec (``flower.core.guard``), never by the tool list alone — the
bundled CLI offers every tool to every agent. The division of labour is what keeps a
ten-hour run's main context lean: the coordinator only dispatches and reads four-section
reports; workers do the hands-on work in their own subagent contexts; the clarifier only
asks; the judge only inspects, in a fresh session each round.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flower import texts
from flower.core.agent import AgentSpec, CompactPolicy
from flower.core.guard import isolated

if TYPE_CHECKING:
    from claude_agent_sdk import AgentDefinition

COORDINATOR_RULES = texts.COORDINATOR_RULES
WORKER_RULES = texts.WORKER_RULES
CLARIFIER_RULES = texts.CLARIFIER_RULES
JUDGE_RULES = texts.JUDGE_RULES
ORACLE_RULES = texts.ORACLE_RULES
BEQUEST_RULES = texts.BEQUEST_RULES

COORDINATOR_TOOLS = ["Agent", "TodoWrite", "Read"]
WEB_TOOLS = ["WebFetch", "WebSearch"]
WORKER_TOOLS = ["Read", "Write", "Edit", "Bash", "Glob", "Grep", "WebFetch", "WebSearch"]
READ_TOOLS = ["Read", "Glob", "Grep"]


def _joined(rules: str, instructions: str) -> str:
    return f"{rules}\n{instructions}".strip()


def _channel_tools(channel: Any, *, inbox: bool) -> list[str]:
    if channel is None:
        return []
    return [channel.tool_name, channel.inbox_name] if inbox else [channel.tool_name]


def coordinator(name: str, instructions: str, workers: dict[str, AgentDefinition], *,
                channel: Any = None, can_read: bool = True, glance: bool = True,
                model: str | None = None, effort: str | None = None,
                max_turns: int | None = None, max_budget_usd: float | None = None,
                permission_mode: str = "acceptEdits", compact: CompactPolicy | None = None,
                hooks: dict[str, Any] | None = None,
                env: dict[str, str] | None = None) -> AgentSpec:
    """The dispatcher: decomposes, sends workers, reads their reports, decides.

    Read-only web tools that any worker holds are added to the coordinator's list too:
    approval is session-wide, so a subagent calling a tool missing from the session list
    would wait for a permission nobody grants (silent retry loops when unattended).
    Hands-on tools are never merged — that would void the delegate wall.
    """
    tools = [t for t in COORDINATOR_TOOLS if can_read or t != "Read"]
    if glance:
        tools.append("Bash")
    for web in WEB_TOOLS:  # tools=None gives a worker every tool, web ones included
        if any(w.tools is None or web in w.tools for w in workers.values()):
            tools.append(web)
    tools += _channel_tools(channel, inbox=True)
    return AgentSpec(
        name=name, instructions=_joined(COORDINATOR_RULES, instructions),
        allowed_tools=tools, model=model, effort=effort, max_turns=max_turns,
        max_budget_usd=max_budget_usd, permission_mode=permission_mode, agents=dict(workers),
        mcp_servers=channel.mcp_servers() if channel is not None else {},
        hooks=hooks, compact=compact, env=dict(env or {}), glance=glance,
        delegate_only=True, role="coordinator",
    )


def worker(description: str, prompt: str, *, tools: list[str] | None = None,
           model: str = "inherit", effort: str | int | None = None,
           max_turns: int | None = None, permission_mode: str | None = None,
           skills: list[str] | None = None, discipline: bool = True,
           isolate: bool = False) -> AgentDefinition:
    """A subagent the coordinator can dispatch; ``description`` is how it gets picked.

    ``discipline`` appends the four-section reporting rules (the report lands in the
    coordinator's context). The artifacts path is deliberately not hard-coded: subagents do
    not see the workbench index, so the coordinator relays it in each task.
    """
    from claude_agent_sdk import AgentDefinition

    defn = AgentDefinition(
        description=description,
        prompt=f"{prompt}\n\n{WORKER_RULES}" if discipline else prompt,
        tools=list(tools) if tools is not None else list(WORKER_TOOLS),
        model=model, skills=skills, maxTurns=max_turns, effort=effort,
        permissionMode=permission_mode,
    )
    return isolated(defn) if isolate else defn


def clarify(name: str, channel: Any, *, instructions: str = "", can_read: bool = True,
            model: str | None = None, effort: str | None = None, max_turns: int | None = None,
            max_budget_usd: float | None = None) -> AgentSpec:
    """Asks until the requirement is clear; never works. Unlimited questions by default —
    ``max_turns`` caps them too (one question is one turn), so leave it unset."""
    tools = _channel_tools(channel, inbox=False) + (READ_TOOLS + WEB_TOOLS if can_read else [])
    return AgentSpec(
        name=name, instructions=_joined(CLARIFIER_RULES, instructions), allowed_tools=tools,
        model=model, effort=effort, max_turns=max_turns, max_budget_usd=max_budget_usd,
        mcp_servers=channel.mcp_servers() if channel is not None else {},
        permission_mode="default", workbench=False, role="clarifier",
    )


def judge(name: str, channel: Any, *, instructions: str = "", can_run: bool = False,
          model: str | None = None, effort: str | None = None, max_turns: int | None = None,
          max_budget_usd: float | None = None) -> AgentSpec:
    """Sets goals and judges rounds by inspecting the scene. ``can_run`` adds Bash: harder
    verdicts (it can run the artifact), at the price of a judge that could change things."""
    tools = _channel_tools(channel, inbox=False) + READ_TOOLS + (["Bash"] if can_run else [])
    return AgentSpec(
        name=name, instructions=_joined(JUDGE_RULES, instructions), allowed_tools=tools,
        model=model, effort=effort, max_turns=max_turns, max_budget_usd=max_budget_usd,
        mcp_servers=channel.mcp_servers() if channel is not None else {},
        permission_mode="default", workbench=False, role="judge",
    )


def oracle(name: str = "旁路问答", *, instructions: str = "", model: str | None = None,
           effort: str | None = None, max_turns: int | None = 12,
           max_budget_usd: float | None = 0.5) -> AgentSpec:
    """Answers a side question ("where are we?") without touching the run; braked by
    default (12 turns, $0.5). The only non-coordinator role that sees the workbench index."""
    return AgentSpec(
        name=name, instructions=_joined(ORACLE_RULES, instructions),
        allowed_tools=list(READ_TOOLS), model=model, effort=effort, max_turns=max_turns,
        max_budget_usd=max_budget_usd, workbench=True, role="oracle",
    )


def bequest(name: str = "收尾交接", *, instructions: str = "", model: str | None = None,
            effort: str | None = None, max_turns: int | None = 12,
            max_budget_usd: float | None = 0.5) -> AgentSpec:
    """Writes the handover for the next tool when a run ends (``flower.core.bequest``).

    Walled exactly like the oracle — its role kind *is* ``"oracle"``, so the guard's
    exclusive read-only wall refuses a Write, Edit or Bash it tries — because looking is
    all it needs, and a closing session that could still change files would change them
    after the judge's last look. Sees the workbench index; braked like the oracle.
    """
    return AgentSpec(
        name=name, instructions=_joined(BEQUEST_RULES, instructions),
        allowed_tools=list(READ_TOOLS), model=model, effort=effort, max_turns=max_turns,
        max_budget_usd=max_budget_usd, workbench=True, role="oracle",
    )
