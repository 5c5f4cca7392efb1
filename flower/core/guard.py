"""The hook layer: roles are enforced by the SDK's tool hooks, not by politeness.

``allowed_tools`` only pre-approves; the bundled CLI offers *every* tool to every agent,
so a judge "without Bash" once ran Bash eleven times. What a role may do
is decided here, in PreToolUse hooks that the Runtime installs from the spec on every
attempt:

* ``whitelist_guard`` — a non-delegating role may use its own tools only. Hands-on tools
  (and dispatch, which is hands-on by proxy) outside ``allowed_tools`` are denied; roles
  that only ask or inspect (clarifier, judge, oracle) are walled exclusively: any tool they
  were not given is denied, with a reason that says what to do instead.
* ``delegate_guard`` — a coordinator dispatches, it does not work. Its own hands-on calls
  are denied, except a *glance*: a Bash command that ``is_ephemeral`` accepts — the very
  predicate the store uses to expire such results, so what may run is exactly what goes
  stale. A glance does not run as written: ``flower.shell.prepare_glance`` checks its
  paths on the real file system, switches off what the repository could make git run, and
  bounds it (killed after a few seconds, output capped, never backgrounded).
* ``dispatch_guard`` — every ``Agent`` call runs in the foreground (the CLI backgrounds
  subagents by default, which would end a coordinator's step before its workers report),
  and isolated roles get ``isolation="worktree"``. One hook does both, because two hooks
  each rewriting the same call's input race (matchers of one event run concurrently).
* ``spill_guard`` / ``index_guard`` — PostToolUse housekeeping for the workbench.

Main thread vs subagent: subagent hook payloads carry ``agent_id``; the main thread's do
not. Role walls apply to the main thread only — subagents get their tools from their own
``AgentDefinition``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flower import texts
from flower.shell import TOOL_TIMEOUT_MS, Refused, is_ephemeral, prepare_glance

if TYPE_CHECKING:
    from claude_agent_sdk import HookMatcher

    from flower.core.agent import AgentSpec
    from flower.core.workbench import Workbench

log = logging.getLogger(__name__)
Hook = Callable[[dict[str, Any], "str | None", Any], Any]
HookMap = dict[str, list[Any]]

#: Tools that change the workspace directly.
HANDS_ON = "Bash|Write|Edit|MultiEdit|NotebookEdit"
WRITE_ONLY = "Write|Edit|MultiEdit|NotebookEdit"
#: Tools that start other agents — each of which may hold every hands-on tool.
DISPATCH = "Agent|Task|Workflow|SendMessage"
#: Tools whose results can be large enough to spill.
BULKY = "Bash|Read|Grep|Glob|WebFetch|WebSearch"
#: What ``coordinator(can_read=False)`` gives up (allowed_tools alone cannot take it away).
READ_TOOLS = ("Read", "Glob", "Grep")
#: Bookkeeping tools an exclusively walled role may still use.
HARMLESS = ("ToolSearch", "TodoWrite")
#: Roles that only ask or inspect: walled to exactly their own tools.
EXCLUSIVE_ROLES = ("clarifier", "judge", "oracle")
ISOLATE_ATTR = "_flower_isolate"
SPILL_HEAD = 400


def _names(group: str) -> tuple[str, ...]:
    return tuple(group.split("|"))


def is_main_thread(data: dict[str, Any]) -> bool:
    """The single test for "this tool call is the role's own, not a subagent's"."""
    return not data.get("agent_id")


def _matcher(matcher: str | None, hook: Hook) -> HookMatcher:
    from claude_agent_sdk import HookMatcher

    return HookMatcher(matcher=matcher, hooks=[hook])


def _deny(reason: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                   "permissionDecision": "deny",
                                   "permissionDecisionReason": reason}}


# ------------------------------------------------------------------ role walls


def whitelist_guard(allowed: list[str] | None, *, role: str = "这个角色", kind: str = "",
                    exclusive: bool | None = None) -> HookMatcher | None:
    """Deny the main thread any guarded tool it was not given; ``None`` if nothing is banned.

    Guarded are the hands-on tools and the dispatch tools. ``exclusive`` (default: on for
    the ask-or-inspect roles in ``EXCLUSIVE_ROLES``) widens the wall to every tool outside
    ``allowed`` and ``HARMLESS``. ``kind`` picks the "do this instead" hint of the reason.
    """
    allowed_set = set(allowed or ())
    if exclusive is None:
        exclusive = kind in EXCLUSIVE_ROLES
    if exclusive:
        permitted = allowed_set | set(HARMLESS)
        banned: Callable[[str], bool] = lambda tool: tool not in permitted  # noqa: E731
        matcher = None
    else:
        guarded = [t for t in _names(HANDS_ON) + _names(DISPATCH) if t not in allowed_set]
        if not guarded:
            return None
        banned = lambda tool: tool in guarded  # noqa: E731
        matcher = "|".join(guarded)
    hint = texts.DENY_HINTS.get(kind, texts.DENY_HINTS[""])

    async def hook(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict:
        tool = str(data.get("tool_name") or "")
        if is_main_thread(data) and banned(tool):
            return _deny(texts.DENY_ROLE.format(role=role, tool=tool, hint=hint))
        return {}

    return _matcher(matcher, hook)


def delegate_guard(*, tools: str = HANDS_ON, allow_glance: bool = False,
                   workbench: Workbench | None = None,
                   also: tuple[str, ...] = ()) -> HookMatcher:
    """A coordinator's wall: its own hands-on calls are denied with directions to dispatch.

    With ``allow_glance`` a Bash command that ``is_ephemeral`` accepts passes — in the
    foreground only (a backgrounded glance would report after the step moved on), and
    rewritten by ``glance_input``. ``also`` walls more tools the same way (the read tools of
    a ``coordinator(can_read=False)``).
    """
    guarded = set(_names(tools)) | {"Workflow"} | set(also)
    glance = texts.DENY_DELEGATE_GLANCE if allow_glance else ""
    artifacts = ""
    if workbench is not None:
        artifacts = texts.DENY_DELEGATE_ARTIFACTS.format(
            artifacts=workbench.show(workbench.artifacts) + "/")

    async def hook(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict:
        tool = str(data.get("tool_name") or "")
        if not is_main_thread(data) or tool not in guarded:
            return {}
        tool_input = data.get("tool_input") or {}
        if allow_glance and tool == "Bash" and is_ephemeral(str(tool_input.get("command", ""))):
            if tool_input.get("run_in_background"):
                return _deny(texts.DENY_GLANCE_BACKGROUND)
            updated = glance_input(tool_input, data.get("cwd"))
            if updated is not None:
                return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                               "permissionDecision": "allow",
                                               "updatedInput": updated}}
        return _deny(texts.DENY_DELEGATE.format(tool=tool, artifacts=artifacts, glance=glance))

    return _matcher("|".join(sorted(guarded)), hook)


def glance_input(tool_input: dict[str, Any], cwd: str | None) -> dict[str, Any] | None:
    """The Bash input a glance really runs with, or None if the real file system shows it
    is not one after all (a symlink into ``~/.config``, ``../../proc``, a dotfiles repo).

    The command is bounded and hardened (``prepare_glance``); the tool's own ``timeout``
    is set well after the command's own kill, so the CLI never moves a glance to the
    background; the sandbox cannot be switched off for it.
    """
    try:
        command = prepare_glance(str(tool_input.get("command", "")), cwd)
    except Refused as exc:
        log.info("glance refused at run time: %s", exc)
        return None
    updated = {k: v for k, v in tool_input.items() if k != "dangerouslyDisableSandbox"}
    updated.update(command=command, timeout=TOOL_TIMEOUT_MS, run_in_background=False)
    return updated


# ------------------------------------------------------------------ dispatch


def isolated(agent: Any, flag: bool = True) -> Any:
    """Mark a worker definition for its own git worktree; returns the same object.

    A plain attribute, not a dataclass field, so the SDK never serialises it — and so
    ``dataclasses.replace`` drops it: mark the final object.
    """
    object.__setattr__(agent, ISOLATE_ATTR, bool(flag))
    return agent


def wants_isolation(agent: Any) -> bool:
    """Was ``agent`` marked by ``isolated``? (``None`` → False)"""
    return agent is not None and bool(getattr(agent, ISOLATE_ATTR, False))


def dispatch_guard(agents: dict[str, Any] | None = None, *, foreground: bool = True,
                   on_inject: Callable[[str, str], Any] | None = None) -> HookMatcher:
    """The one PreToolUse hook on ``Agent``: foreground dispatch and worktree isolation.

    Foreground: the CLI runs subagents in the background by default; the coordinator then
    ends its turn "waiting", the step returns with its workers still running and their
    reports are lost. Setting ``run_in_background: false`` makes the
    ``Agent`` call return the worker's report, so a step ends only when its work is done.
    Isolation: a marked role gets ``isolation="worktree"`` unless the model chose a
    ``cwd`` or an ``isolation`` itself (the two are mutually exclusive; the model wins).
    """
    roles = agents or {}

    async def hook(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict:
        if data.get("tool_name") not in ("Agent", "Task"):
            return {}
        tool_input = dict(data.get("tool_input") or {})
        changed = False
        if foreground and tool_input.get("run_in_background") is not False:
            tool_input["run_in_background"] = False
            changed = True
        kind = str(tool_input.get("subagent_type") or "")
        if "cwd" not in tool_input and "isolation" not in tool_input and \
                wants_isolation(roles.get(kind)):
            tool_input["isolation"] = "worktree"
            changed = True
            if on_inject is not None:
                on_inject(kind, str(tool_input.get("description") or ""))
        if not changed:
            return {}
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                       "permissionDecision": "allow",
                                       "updatedInput": tool_input}}

    return _matcher("Agent|Task", hook)


def isolate_guard(agents: dict[str, Any], *,
                  on_inject: Callable[[str, str], Any] | None = None) -> HookMatcher:
    """Worktree isolation for marked roles (with foreground dispatch: see ``dispatch_guard``)."""
    return dispatch_guard(agents, on_inject=on_inject)


# ------------------------------------------------------------------ workbench housekeeping


def _inside(path: str | Path, root: Path) -> bool:
    try:
        return Path(path).expanduser().resolve().is_relative_to(root.resolve())
    except (OSError, ValueError):
        return False


def index_guard(workbench: Workbench) -> HookMatcher:
    """Refresh ``INDEX.md`` whenever a write lands inside the workbench."""

    async def hook(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict:
        tool_input = data.get("tool_input") or {}
        path = tool_input.get("file_path") or tool_input.get("notebook_path")
        if isinstance(path, str) and _inside(path, workbench.root):
            workbench.refresh()
        return {}

    return _matcher(WRITE_ONLY, hook)


def spill(workbench: Workbench, content: str, *, threshold: int) -> str:
    """``content`` itself if short, else a pointer to its content-addressed spill file
    (the same file the resume-time trim would write for it)."""
    if len(content) < threshold:
        return content
    from flower.stores.trimming import write_spill

    path = write_spill(content, str(workbench.spill))
    if path is None:  # the disk refused: keep the result rather than lose it
        return content
    return texts.SPILL_NOTE.format(n=len(content), path=path, head=content[:SPILL_HEAD])


def _shrunk(value: Any, workbench: Workbench, threshold: int) -> Any:
    """``value`` with over-long strings spilled; structure kept (lists are never touched:
    they may hold image blocks, and a misshapen output is silently dropped by the CLI)."""
    if isinstance(value, str):
        return spill(workbench, value, threshold=threshold)
    if isinstance(value, dict):
        return {k: _shrunk(v, workbench, threshold) for k, v in value.items()}
    return value


def _about_spill(tool_input: dict[str, Any], workbench: Workbench) -> bool:
    """Does this call look into the spill dir? ``Read``'s ``file_path``, ``Grep``/``Glob``'s
    ``path`` (relative ones taken from the workspace), or any input string — a Bash command —
    naming the spill dir: absolutely (as the pointer shows it) or as ``.flower/spill``."""
    spill = workbench.spill
    names = {str(spill)}
    with contextlib.suppress(OSError):
        names.add(str(spill.resolve()))
    shown = workbench.show(spill)
    if "/" in shown:  # a bare "spill" (root == workspace) would match every mention of the word
        names.add(shown)
    for key, value in tool_input.items():
        if not isinstance(value, str):
            continue
        if key in ("file_path", "path", "notebook_path") and \
                _inside(workbench.workspace / Path(value).expanduser(), spill):
            return True
        if any(name in value for name in names):
            return True
    return False


def spill_guard(workbench: Workbench, *, threshold: int = 4000, tools: str = BULKY,
                main_only: bool = False) -> HookMatcher:
    """Move tool results of ``threshold`` chars or more to ``<workbench>/spill/``.

    The model keeps a pointer and the first 400 chars. A call that looks into the spill dir
    (Read or Grep of a spill file — what the pointer tells the model to do — or a Bash
    ``cat`` of one) passes through untouched: otherwise the spill would come back as a
    pointer to itself, forever.
    """
    names = set(_names(tools))

    async def hook(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict:
        if data.get("tool_name") not in names or (main_only and not is_main_thread(data)):
            return {}
        tool_input = data.get("tool_input") or {}
        if _about_spill(tool_input, workbench):
            return {}
        response = data.get("tool_response")
        shrunk = _shrunk(response, workbench, threshold)
        if shrunk == response:
            return {}
        return {"hookSpecificOutput": {"hookEventName": "PostToolUse",
                                       "updatedToolOutput": shrunk}}

    return _matcher(tools, hook)


def report_guard(take: Callable[[], Awaitable[None]]) -> HookMatcher:
    """After a worker's report reaches the coordinator (its ``Agent``/``Task`` call
    returns), snapshot the project: what that worker left is a checkpoint of its own."""

    async def hook(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict:
        if data.get("tool_name") in ("Agent", "Task") and is_main_thread(data):
            await take()
        return {}

    return _matcher("Agent|Task", hook)


# ------------------------------------------------------------------ assembly


def workbench_hooks(workbench: Workbench, *, delegate_only: bool = True,
                    spill_threshold: int | None = 4000, agents: dict[str, Any] | None = None,
                    allow_glance: bool = False) -> HookMap:
    """The workbench's hooks for one role; event keys with nothing to install are omitted."""
    pre: list[Any] = []
    if delegate_only:
        pre.append(delegate_guard(allow_glance=allow_glance, workbench=workbench))
    if agents and any(wants_isolation(a) for a in agents.values()):
        pre.append(dispatch_guard(agents))
    post: list[Any] = [index_guard(workbench)]
    if spill_threshold:
        post.append(spill_guard(workbench, threshold=spill_threshold))
    out: HookMap = {"PostToolUse": post}
    if pre:
        out["PreToolUse"] = pre
    return out


def merge_hooks(*groups: HookMap | None) -> HookMap:
    """Concatenate hook lists per event; ``None`` groups are skipped, nothing deduplicated."""
    out: HookMap = {}
    for group in groups:
        for event, matchers in (group or {}).items():
            out.setdefault(event, []).extend(matchers)
    return out


def can_dispatch(spec: AgentSpec) -> bool:
    """Whether ``spec``'s main thread is allowed to start subagents at all."""
    return spec.delegate_only or bool(spec.agents) or "Agent" in spec.allowed_tools


def role_hooks(spec: AgentSpec, *, workbench: Workbench | None = None,
               spill_threshold: int | None = 4000) -> HookMap:
    """Every hook the Runtime installs for ``spec`` on an attempt, from its flags.

    A coordinator is walled even when there is no workbench (the original flower walled it
    only through the workbench hooks, and without one it silently did all the work itself).
    """
    pre: list[Any] = []
    if spec.delegate_only:
        blind = tuple(t for t in READ_TOOLS if "Read" not in spec.allowed_tools)
        pre.append(delegate_guard(allow_glance=spec.glance, workbench=workbench, also=blind))
    else:
        wall = whitelist_guard(spec.allowed_tools, role=spec.name, kind=spec.role)
        if wall is not None:
            pre.append(wall)
    if can_dispatch(spec):
        pre.append(dispatch_guard(spec.agents))
    hooks: HookMap = {"PreToolUse": pre} if pre else {}
    if workbench is not None:
        hooks = merge_hooks(hooks, workbench_hooks(
            workbench, delegate_only=False, spill_threshold=spill_threshold))
    return hooks
