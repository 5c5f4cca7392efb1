"""The hook layer, called directly: every hook is ``hook(data, tool_use_id, context) -> dict``.

Hook payloads are hand-built the way the CLI sends them (sdk-notes §8): ``tool_name`` and
``tool_input``; ``agent_id`` only when a subagent makes the call; ``tool_response`` for
PostToolUse. The real-CLI versions of the important cases live in ``tests/e2e/test_roles.py``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import subprocess
from pathlib import Path
from typing import Any

import pytest

# The glance tables are the ones the predicate itself is tested with: one predicate, one list.
# (``tests/`` is on sys.path: it holds the root conftest and has no ``__init__.py``.)
from stores.test_ephemeral import ALLOWED, DENIED, MUTATING, SEPARATORS

from flower import texts
from flower.core.agent import AgentSpec
from flower.core.guard import (
    BULKY,
    DISPATCH,
    EXCLUSIVE_ROLES,
    HANDS_ON,
    HARMLESS,
    ISOLATE_ATTR,
    SPILL_HEAD,
    WRITE_ONLY,
    can_dispatch,
    delegate_guard,
    dispatch_guard,
    index_guard,
    isolate_guard,
    isolated,
    merge_hooks,
    role_hooks,
    spill_guard,
    wants_isolation,
    whitelist_guard,
    workbench_hooks,
)
from flower.core.roles import clarify, coordinator, judge, oracle, worker
from flower.core.workbench import Workbench
from flower.shell import TOOL_TIMEOUT_MS, is_ephemeral, unwrap

GUARDED = HANDS_ON.split("|") + DISPATCH.split("|")
SUB = "a1b2c3"  # any agent_id: the call comes from a subagent


def call(matcher: Any, tool: str, tool_input: dict | None = None, *,
         agent_id: str | None = None, response: Any = None) -> dict:
    data: dict[str, Any] = {"tool_name": tool, "tool_input": tool_input or {}}
    if agent_id:
        data["agent_id"] = agent_id
    if response is not None:
        data["tool_response"] = response
    return asyncio.run(matcher.hooks[0](data, None, None))


def decision(out: dict) -> str | None:
    return (out.get("hookSpecificOutput") or {}).get("permissionDecision")


def reason(out: dict) -> str:
    assert decision(out) == "deny", out
    return out["hookSpecificOutput"]["permissionDecisionReason"]


def denied(out: dict) -> bool:
    return decision(out) == "deny"


def bash(cmd: str, **extra: Any) -> dict:
    return {"command": cmd, **extra}


def glanced(out: dict, cmd: str) -> dict:
    """The hook let glance ``cmd`` run — bounded, in the foreground, as a rewrite of ``cmd``
    that is itself a glance (so expiry agrees whichever form a transcript keeps)."""
    assert decision(out) == "allow", out
    new = out["hookSpecificOutput"]["updatedInput"]
    inner = unwrap(new["command"])
    assert inner is not None and is_ephemeral(new["command"]) and is_ephemeral(inner), new
    assert new["timeout"] == TOOL_TIMEOUT_MS and new["run_in_background"] is False
    assert cmd.split()[0] in inner
    return new


@pytest.fixture(autouse=True)
def in_a_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every hook call runs in a scratch git repository (glances of git need one)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.chdir(repo)
    return repo


@pytest.fixture
def wb(tmp_path: Path) -> Workbench:
    ws = tmp_path / "ws"
    ws.mkdir()
    return Workbench(ws).ensure()


# ------------------------------------------------------------------ whitelist_guard


@pytest.mark.parametrize("tool", GUARDED)
def test_whitelist_denies_main_thread_guarded_tools_not_allowed(tool: str) -> None:
    wall = whitelist_guard(["Read"], role="读者")
    assert denied(call(wall, tool))
    assert tool in wall.matcher.split("|")


def test_whitelist_allows_what_was_given() -> None:
    wall = whitelist_guard(["Read", "Bash", "Agent"], role="r")
    assert call(wall, "Bash", bash("rm -rf x")) == {}
    assert call(wall, "Agent") == {}
    assert denied(call(wall, "Write"))
    assert {"Bash", "Agent"}.isdisjoint(wall.matcher.split("|"))


@pytest.mark.parametrize("tool", ["Read", "Skill", "WebFetch", "mcp__other__x", "Glob"])
def test_plain_whitelist_guards_only_hands_on_and_dispatch(tool: str) -> None:
    """Not exclusive: a plain agent keeps every non-hands-on tool the CLI offers."""
    assert call(whitelist_guard(["Read"]), tool) == {}


@pytest.mark.parametrize("kind", ["", *EXCLUSIVE_ROLES])
def test_whitelist_lets_every_subagent_call_through(kind: str) -> None:
    wall = whitelist_guard([], kind=kind)
    for tool in [*GUARDED, "Skill", "mcp__other__x"]:
        assert call(wall, tool, agent_id=SUB) == {}, tool


def test_whitelist_is_none_when_nothing_is_banned() -> None:
    assert whitelist_guard(GUARDED) is None
    assert whitelist_guard([*GUARDED, "Read"], kind="coordinator") is None
    assert whitelist_guard(None) is not None  # None means "nothing allowed"


@pytest.mark.parametrize("kind", EXCLUSIVE_ROLES)
@pytest.mark.parametrize("tool", ["Skill", "WebFetch", "WebSearch", "mcp__other__x", "Bash",
                                  "Write", "Agent", "Glob", "ListAgents", "ScheduleWakeup"])
def test_exclusive_roles_are_walled_to_exactly_their_tools(kind: str, tool: str) -> None:
    wall = whitelist_guard(["Read", "mcp__human__ask"], role="R", kind=kind)
    assert wall.matcher is None  # sees every tool
    assert denied(call(wall, tool))


@pytest.mark.parametrize("kind", EXCLUSIVE_ROLES)
def test_exclusive_roles_keep_their_tools_and_the_harmless_ones(kind: str) -> None:
    wall = whitelist_guard(["Read", "mcp__human__ask"], kind=kind)
    for tool in ["Read", "mcp__human__ask", *HARMLESS]:
        assert call(wall, tool) == {}, tool


def test_exclusive_can_be_forced_either_way() -> None:
    assert call(whitelist_guard(["Read"], kind="judge", exclusive=False), "Skill") == {}
    forced = whitelist_guard(["Read"], exclusive=True)
    assert denied(call(forced, "Skill")) and call(forced, "TodoWrite") == {}


@pytest.mark.parametrize("kind", ["", *EXCLUSIVE_ROLES])
def test_deny_reason_names_role_and_tool_and_says_what_to_do(kind: str) -> None:
    why = reason(call(whitelist_guard(["Read"], role="判定者甲", kind=kind), "Write"))
    assert "判定者甲" in why and "Write" in why
    assert texts.DENY_HINTS[kind] in why


def test_unknown_kind_gets_the_generic_hint() -> None:
    why = reason(call(whitelist_guard(["Read"], kind="gardener"), "Bash"))
    assert texts.DENY_HINTS[""] in why


# ------------------------------------------------------------------ delegate_guard


@pytest.mark.parametrize("tool", [*HANDS_ON.split("|"), "Workflow"])
def test_delegate_denies_hands_on_with_directions_to_dispatch(tool: str) -> None:
    why = reason(call(delegate_guard(), tool, {"file_path": "/x", "command": "ls"}))
    assert why == texts.DENY_DELEGATE.format(tool=tool, artifacts="", glance="")
    assert "Agent" in why and "artifacts" not in why
    assert "Bash" not in why.split(tool, 1)[1]  # no glance offered when glancing is off


def test_delegate_reason_points_at_the_artifacts_folder(wb: Workbench) -> None:
    why = reason(call(delegate_guard(workbench=wb), "Write", {"file_path": "/x"}))
    assert wb.show(wb.artifacts) + "/" in why and "Agent" in why


@pytest.mark.parametrize("tool", ["Agent", "Read", "TodoWrite", "WebFetch", "mcp__human__ask"])
def test_delegate_leaves_dispatch_and_reading_alone(tool: str) -> None:
    assert call(delegate_guard(), tool) == {}


@pytest.mark.parametrize("tool", [*HANDS_ON.split("|"), "Workflow"])
def test_delegate_lets_subagents_work(tool: str) -> None:
    assert call(delegate_guard(), tool, bash("rm -rf ."), agent_id=SUB) == {}


@pytest.mark.parametrize("cmd", ALLOWED)
def test_glance_runs_every_read_only_look(cmd: str) -> None:
    glanced(call(delegate_guard(allow_glance=True), "Bash", bash(cmd)), cmd)


@pytest.mark.parametrize("cmd", DENIED + MUTATING)
def test_glance_denies_everything_that_could_change_state(cmd: str) -> None:
    why = reason(call(delegate_guard(allow_glance=True), "Bash", bash(cmd)))
    assert why == texts.DENY_DELEGATE.format(tool="Bash", artifacts="",
                                             glance=texts.DENY_DELEGATE_GLANCE)


@pytest.mark.parametrize("sep", SEPARATORS)
def test_glance_denies_a_mutating_command_chained_to_a_look(sep: str) -> None:
    guard = delegate_guard(allow_glance=True)
    for bad in MUTATING:
        for cmd in ("git branch" + sep + bad, bad + sep + "ls -la"):
            assert denied(call(guard, "Bash", bash(cmd))), cmd


def test_glance_in_the_background_is_denied() -> None:
    guard = delegate_guard(allow_glance=True)
    assert reason(call(guard, "Bash", bash("git branch", run_in_background=True))) \
        == texts.DENY_GLANCE_BACKGROUND
    glanced(call(guard, "Bash", bash("git branch", run_in_background=False)), "git branch")


def test_glance_is_checked_again_on_the_real_file_system(in_a_repo: Path,
                                                         tmp_path: Path) -> None:
    """The text says ``cat notes``; the file system says it is flower's credential file."""
    secret = tmp_path / "elsewhere" / ".config" / "flower" / ".env"
    secret.parent.mkdir(parents=True)
    secret.write_text("ANTHROPIC_API_KEY=sk-ant-planted\n")
    (in_a_repo / "notes").symlink_to(secret)
    (in_a_repo / "plain.txt").write_text("hello\n")
    guard = delegate_guard(allow_glance=True)
    assert is_ephemeral("cat notes")
    assert reason(call(guard, "Bash", bash("cat notes"))) == texts.DENY_DELEGATE.format(
        tool="Bash", artifacts="", glance=texts.DENY_DELEGATE_GLANCE)
    glanced(call(guard, "Bash", bash("cat plain.txt")), "cat plain.txt")


def test_a_glance_cannot_switch_the_sandbox_off() -> None:
    new = glanced(call(delegate_guard(allow_glance=True), "Bash",
                       bash("ls", dangerouslyDisableSandbox=True, description="look")), "ls")
    assert "dangerouslyDisableSandbox" not in new and new["description"] == "look"


@pytest.mark.parametrize("cmd", ["ls", "git branch", "pwd"])
def test_without_glance_even_ls_is_denied(cmd: str) -> None:
    assert denied(call(delegate_guard(), "Bash", bash(cmd)))


@pytest.mark.parametrize("tool_input", [{}, {"command": None}, {"command": ""}])
def test_glance_without_a_command_is_denied(tool_input: dict) -> None:
    assert denied(call(delegate_guard(allow_glance=True), "Bash", tool_input))


def test_glance_only_applies_to_bash() -> None:
    """A Write whose input happens to hold a harmless-looking command is still a Write."""
    assert denied(call(delegate_guard(allow_glance=True), "Write", bash("ls")))


# ------------------------------------------------------------------ dispatch_guard


def agent_call(**extra: Any) -> dict:
    return {"description": "implement it", "prompt": "do x", "subagent_type": "coder", **extra}


def updated(out: dict) -> dict:
    assert decision(out) == "allow", out
    return out["hookSpecificOutput"]["updatedInput"]


@pytest.mark.parametrize("background", [None, True, "yes"])
def test_dispatch_runs_in_the_foreground(background: Any) -> None:
    given = agent_call() if background is None else agent_call(run_in_background=background)
    snapshot = dict(given)
    new = updated(call(dispatch_guard({}), "Agent", given))
    assert new["run_in_background"] is False
    assert given == snapshot  # the model's input is copied, never mutated
    assert {k: v for k, v in new.items() if k != "run_in_background"} == \
        {k: v for k, v in snapshot.items() if k != "run_in_background"}
    assert "isolation" not in new


def test_dispatch_already_in_the_foreground_is_left_alone() -> None:
    assert call(dispatch_guard({}), "Agent", agent_call(run_in_background=False)) == {}


def test_dispatch_handles_the_legacy_task_name() -> None:
    marked = {"coder": isolated(worker("c", "p"))}
    new = updated(call(dispatch_guard(marked), "Task", agent_call()))
    assert new["run_in_background"] is False and new["isolation"] == "worktree"
    assert dispatch_guard().matcher == "Agent|Task"


@pytest.mark.parametrize("tool", ["Bash", "Write", "SendMessage", "Workflow"])
def test_dispatch_ignores_other_tools(tool: str) -> None:
    assert call(dispatch_guard({"coder": isolated(worker("c", "p"))}), tool, agent_call()) == {}


def test_isolation_injected_for_marked_roles_only() -> None:
    seen: list[tuple[str, str]] = []
    agents = {"coder": isolated(worker("c", "p")), "reader": worker("r", "p")}
    guard = dispatch_guard(agents, on_inject=lambda kind, desc: seen.append((kind, desc)))
    given = agent_call()
    new = updated(call(guard, "Agent", given))
    assert new["isolation"] == "worktree" and "isolation" not in given
    assert seen == [("coder", "implement it")]
    new = updated(call(guard, "Agent", agent_call(subagent_type="reader")))
    assert "isolation" not in new
    new = updated(call(guard, "Agent", agent_call(subagent_type="general-purpose")))
    assert "isolation" not in new
    assert seen == [("coder", "implement it")]


def test_isolation_injected_even_when_already_foreground() -> None:
    guard = dispatch_guard({"coder": isolated(worker("c", "p"))})
    new = updated(call(guard, "Agent", agent_call(run_in_background=False)))
    assert new["isolation"] == "worktree" and new["run_in_background"] is False


@pytest.mark.parametrize("choice", [{"cwd": "/elsewhere"}, {"isolation": "remote"},
                                    {"isolation": "worktree"}])
def test_the_models_own_cwd_or_isolation_wins(choice: dict) -> None:
    seen: list[Any] = []
    guard = dispatch_guard({"coder": isolated(worker("c", "p"))},
                           on_inject=lambda *a: seen.append(a))
    new = updated(call(guard, "Agent", agent_call(**choice)))
    assert {k: new.get(k) for k in ("cwd", "isolation") if k in new} == choice
    assert seen == []
    assert call(guard, "Agent", agent_call(run_in_background=False, **choice)) == {}


def test_foreground_off_keeps_background_but_still_isolates() -> None:
    guard = dispatch_guard({"coder": isolated(worker("c", "p"))}, foreground=False)
    assert call(guard, "Agent", agent_call(subagent_type="x", run_in_background=True)) == {}
    new = updated(call(guard, "Agent", agent_call(run_in_background=True)))
    assert new["run_in_background"] is True and new["isolation"] == "worktree"


def test_isolate_guard_is_the_dispatch_guard() -> None:
    seen: list[Any] = []
    guard = isolate_guard({"coder": isolated(worker("c", "p"))},
                          on_inject=lambda *a: seen.append(a))
    new = updated(call(guard, "Agent", agent_call()))
    assert new["isolation"] == "worktree" and new["run_in_background"] is False
    assert seen == [("coder", "implement it")]


def test_dispatch_applies_to_subagent_calls_too() -> None:
    assert updated(call(dispatch_guard(), "Agent", agent_call(), agent_id=SUB))[
        "run_in_background"] is False


# ------------------------------------------------------------------ isolated / wants_isolation


def test_isolated_marks_and_clears_the_same_object() -> None:
    d = worker("c", "p")
    assert not wants_isolation(d)
    assert isolated(d) is d and wants_isolation(d)
    assert isolated(d, False) is d and not wants_isolation(d)
    assert isolated(d, True) is d and wants_isolation(d)


def test_wants_isolation_of_none_is_false() -> None:
    assert wants_isolation(None) is False
    assert wants_isolation(object()) is False


def test_marker_is_not_serialised() -> None:
    d = isolated(worker("c", "p"))
    assert ISOLATE_ATTR not in dataclasses.asdict(d)


def test_known_limitation_dataclasses_replace_drops_the_marker() -> None:
    """Documented in ``isolated``: mark the final object, after any ``replace``."""
    d = isolated(worker("c", "p"))
    assert not wants_isolation(dataclasses.replace(d, model="opus"))


# ------------------------------------------------------------------ spill_guard


def long_text(n: int, tag: str = "") -> str:
    return "".join(f"{tag}row {i:05d}\n" for i in range(n // 10 + 1))[:n]


def spill_file(wb: Workbench, content: str) -> Path:
    return wb.spill / (hashlib.sha256(content.encode()).hexdigest()[:16] + ".txt")


def shrunk(out: dict) -> Any:
    assert out["hookSpecificOutput"]["hookEventName"] == "PostToolUse", out
    return out["hookSpecificOutput"]["updatedToolOutput"]


def test_spill_a_long_string_result(wb: Workbench) -> None:
    body = long_text(5000)
    pointer = shrunk(call(spill_guard(wb), "Bash", bash("cat x"), response=body))
    target = spill_file(wb, body)
    assert target.read_text() == body  # the full text, content-addressed
    assert pointer == texts.SPILL_NOTE.format(n=len(body), path=target, head=body[:SPILL_HEAD])
    assert body[:SPILL_HEAD] in pointer and body[SPILL_HEAD:SPILL_HEAD + 20] not in pointer
    assert len(pointer) < 1000
    assert list(wb.spill.iterdir()) == [target]


def test_spill_threshold_is_inclusive(wb: Workbench) -> None:
    guard = spill_guard(wb, threshold=100)
    assert call(guard, "Read", {}, response=long_text(99)) == {}
    assert isinstance(shrunk(call(guard, "Read", {}, response=long_text(100))), str)
    assert call(spill_guard(wb), "Grep", {}, response=long_text(3999)) == {}  # default 4000


def test_below_threshold_nothing_is_written(wb: Workbench) -> None:
    assert call(spill_guard(wb, threshold=100), "Bash", bash("ls"), response="short") == {}
    assert list(wb.spill.iterdir()) == []


def test_bash_shaped_result_keeps_its_structure(wb: Workbench) -> None:
    out = long_text(300)
    response = {"stdout": out, "stderr": "a warning", "interrupted": False, "isImage": False}
    new = shrunk(call(spill_guard(wb, threshold=100), "Bash", bash("x"), response=response))
    assert set(new) == set(response)
    assert new["stderr"] == "a warning" and new["interrupted"] is False
    assert new["isImage"] is False
    assert new["stdout"] != out and str(spill_file(wb, out)) in new["stdout"]
    assert response["stdout"] == out  # the hook input is not mutated


def test_read_shaped_result_spills_the_nested_content(wb: Workbench) -> None:
    body = long_text(300)
    response = {"type": "text", "file": {"filePath": "/ws/big.txt", "content": body,
                                         "numLines": 30, "startLine": 1, "totalLines": 30}}
    new = shrunk(call(spill_guard(wb, threshold=100), "Read", {"file_path": "/ws/big.txt"},
                      response=response))
    assert new["type"] == "text"
    assert {k: v for k, v in new["file"].items() if k != "content"} == \
        {k: v for k, v in response["file"].items() if k != "content"}
    assert str(spill_file(wb, body)) in new["file"]["content"]


@pytest.mark.parametrize("response", [
    [{"type": "text", "text": "x" * 500}],
    {"type": "image", "blocks": [{"type": "text", "text": "x" * 500}], "n": 1},
])
def test_lists_are_never_touched(wb: Workbench, response: Any) -> None:
    assert call(spill_guard(wb, threshold=100), "Read", {}, response=response) == {}
    assert list(wb.spill.iterdir()) == []


def test_reading_a_spill_file_is_not_spilled_again(wb: Workbench) -> None:
    body = long_text(500)
    guard = spill_guard(wb, threshold=100)
    shrunk(call(guard, "Bash", bash("cat x"), response=body))
    target = spill_file(wb, body)
    again = call(guard, "Read", {"file_path": str(target)},
                 response={"type": "text", "file": {"filePath": str(target), "content": body}})
    assert again == {}
    assert list(wb.spill.iterdir()) == [target]


def test_every_way_of_looking_into_the_spill_passes_through(wb: Workbench) -> None:
    """The pointer says "Read or Grep this file"; a ``cat`` of it used to come back as a
    pointer to the very same file (the reference's measured "spill read loops back" trap)."""
    body = long_text(500)
    guard = spill_guard(wb, threshold=100)
    shrunk(call(guard, "Bash", bash("cat x"), response=body))
    target = spill_file(wb, body)
    rel = wb.show(target)
    assert not Path(rel).is_absolute()
    looks = [
        ("Bash", bash(f"cat {target}")),
        ("Bash", bash(f"sed -n 1,400p '{target}'")),
        ("Bash", bash(f"cat {rel}")),
        ("Bash", bash(f"cat ./{rel}")),
        ("Grep", {"pattern": "row", "path": str(target), "output_mode": "content"}),
        ("Grep", {"pattern": "row", "path": str(wb.spill)}),
        ("Grep", {"pattern": "row", "path": wb.show(wb.spill)}),
        ("Glob", {"pattern": "*.txt", "path": str(wb.spill)}),
        ("Read", {"file_path": rel}),
    ]
    for tool, tool_input in looks:
        assert call(guard, tool, tool_input, response=body) == {}, (tool, tool_input)
        assert call(guard, tool, tool_input, response={"stdout": body}) == {}, tool_input
    assert list(wb.spill.iterdir()) == [target]
    # looking elsewhere still spills
    assert isinstance(shrunk(call(guard, "Grep", {"pattern": "spill", "path": str(wb.notes)},
                                  response=long_text(500, "n"))), str)


def test_the_word_spill_alone_does_not_exempt(tmp_path: Path) -> None:
    """A workbench rooted at the workspace itself shows its spill dir as plain "spill"."""
    bare = Workbench(tmp_path, dirname="").ensure()
    assert bare.show(bare.spill) == "spill"
    guard = spill_guard(bare, threshold=100)
    assert isinstance(shrunk(call(guard, "Bash", bash("grep -rn spill src"),
                                  response=long_text(500))), str)
    assert call(guard, "Grep", {"pattern": "x", "path": "spill"}, response=long_text(600)) == {}


def test_main_only_leaves_subagent_results_alone(wb: Workbench) -> None:
    body = long_text(500)
    only_main = spill_guard(wb, threshold=100, main_only=True)
    assert call(only_main, "Bash", bash("x"), agent_id=SUB, response=body) == {}
    assert list(wb.spill.iterdir()) == []
    assert isinstance(shrunk(call(only_main, "Bash", bash("x"), response=body)), str)
    # the default spills subagent results too
    assert isinstance(shrunk(call(spill_guard(wb, threshold=100), "Bash", bash("x"),
                                  agent_id=SUB, response=long_text(600, "b"))), str)


def test_same_content_twice_is_one_file(wb: Workbench) -> None:
    body = long_text(500)
    guard = spill_guard(wb, threshold=100)
    first = shrunk(call(guard, "Bash", bash("cat a"), response=body))
    second = shrunk(call(guard, "Grep", {"pattern": "row"}, response=body))
    assert first == second
    assert list(wb.spill.iterdir()) == [spill_file(wb, body)]


def test_unwritable_spill_dir_keeps_the_result(wb: Workbench) -> None:
    wb.spill.rmdir()
    wb.spill.write_text("not a directory")  # refuses writes even for root
    assert call(spill_guard(wb, threshold=100), "Bash", bash("x"), response=long_text(500)) == {}


@pytest.mark.parametrize("tool", ["Write", "Edit", "Agent", "mcp__x__y"])
def test_spill_only_watches_bulky_tools(wb: Workbench, tool: str) -> None:
    assert call(spill_guard(wb, threshold=100), tool, {}, response=long_text(500)) == {}


def test_spill_tools_are_configurable(wb: Workbench) -> None:
    guard = spill_guard(wb, threshold=100, tools="mcp__x__y")
    assert guard.matcher == "mcp__x__y"
    assert call(guard, "Bash", bash("x"), response=long_text(500)) == {}
    assert isinstance(shrunk(call(guard, "mcp__x__y", {}, response=long_text(500))), str)


# ------------------------------------------------------------------ index_guard


def test_a_write_inside_the_workbench_refreshes_the_index(wb: Workbench) -> None:
    script = wb.scripts / "check.sh"
    script.write_text("# desc: checks the build\nmake check\n")  # the Write already happened
    assert "check.sh" not in wb.index_path.read_text()
    assert call(index_guard(wb), "Write", {"file_path": str(script)}) == {}
    index = wb.index_path.read_text()
    assert "check.sh" in index and "checks the build" in index


def test_a_notebook_edit_inside_refreshes_too(wb: Workbench) -> None:
    nb = wb.artifacts / "analysis.ipynb"
    nb.write_text("{}")
    call(index_guard(wb), "NotebookEdit", {"notebook_path": str(nb)})
    assert "analysis.ipynb" in wb.index_path.read_text()


def test_a_write_outside_leaves_the_index_alone(wb: Workbench, tmp_path: Path) -> None:
    (wb.notes / "decision.md").write_text("# use sqlite\n")
    before = wb.index_path.read_text()
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("x")
    for tool_input in ({"file_path": str(outside)}, {"file_path": str(wb.workspace / "a.py")},
                       {}, {"file_path": None}):
        assert call(index_guard(wb), "Write", tool_input) == {}
    assert wb.index_path.read_text() == before
    assert index_guard(wb).matcher == WRITE_ONLY


# ------------------------------------------------------------------ assembly


def matchers(hooks: dict, event: str) -> list[str | None]:
    return [m.matcher for m in hooks.get(event, [])]


DELEGATE = delegate_guard().matcher
SPILL = BULKY


def test_merge_hooks_concatenates_per_event_without_dedup() -> None:
    a, b, c = object(), object(), object()
    g1 = {"PreToolUse": [a]}
    g2 = {"PreToolUse": [b], "PostToolUse": [c]}
    assert merge_hooks(g1, None, g2) == {"PreToolUse": [a, b], "PostToolUse": [c]}
    assert merge_hooks(g1, g1) == {"PreToolUse": [a, a]}
    assert g1 == {"PreToolUse": [a]}  # inputs untouched
    assert merge_hooks() == {} and merge_hooks(None, {}) == {}


def test_workbench_hooks_default_shape(wb: Workbench) -> None:
    hooks = workbench_hooks(wb)
    assert matchers(hooks, "PreToolUse") == [DELEGATE]
    assert matchers(hooks, "PostToolUse") == [WRITE_ONLY, SPILL]


def test_workbench_hooks_omit_empty_events(wb: Workbench) -> None:
    hooks = workbench_hooks(wb, delegate_only=False)
    assert "PreToolUse" not in hooks
    assert matchers(hooks, "PostToolUse") == [WRITE_ONLY, SPILL]
    for off in (None, 0):
        assert matchers(workbench_hooks(wb, spill_threshold=off), "PostToolUse") == [WRITE_ONLY]


def test_workbench_hooks_isolate_only_for_marked_agents(wb: Workbench) -> None:
    plain = {"coder": worker("c", "p")}
    assert matchers(workbench_hooks(wb, agents=plain), "PreToolUse") == [DELEGATE]
    marked = {"coder": isolated(worker("c", "p"))}
    assert matchers(workbench_hooks(wb, agents=marked), "PreToolUse") == [DELEGATE, "Agent|Task"]


def test_workbench_hooks_pass_glance_and_threshold_through(wb: Workbench) -> None:
    hooks = workbench_hooks(wb, allow_glance=True, spill_threshold=100)
    glanced(call(hooks["PreToolUse"][0], "Bash", bash("git branch")), "git branch")
    assert "artifacts" in reason(call(hooks["PreToolUse"][0], "Write", {}))
    assert call(workbench_hooks(wb)["PreToolUse"][0], "Bash", bash("git branch")) != {}
    assert isinstance(shrunk(call(hooks["PostToolUse"][1], "Bash", bash("x"),
                                  response=long_text(150))), str)


def pre(spec: AgentSpec, **kw: Any) -> list[Any]:
    return role_hooks(spec, **kw).get("PreToolUse", [])


@pytest.mark.parametrize("with_wb", [False, True])
def test_coordinator_gets_delegate_and_dispatch_never_whitelist(wb: Workbench,
                                                                with_wb: bool) -> None:
    workers = {"coder": isolated(worker("c", "p"))}
    hooks = role_hooks(coordinator("协调者", "", workers), workbench=wb if with_wb else None)
    assert matchers(hooks, "PreToolUse") == [DELEGATE, "Agent|Task"]  # one dispatch hook
    assert matchers(hooks, "PostToolUse") == ([WRITE_ONLY, SPILL] if with_wb else [])
    wall, dispatch = hooks["PreToolUse"]
    assert denied(call(wall, "Write", {"file_path": "/x"}))  # walled with or without bench
    glanced(call(wall, "Bash", bash("git branch")), "git branch")  # glance is on by default
    assert updated(call(dispatch, "Agent", agent_call()))["isolation"] == "worktree"
    assert ("artifacts" in reason(call(wall, "Edit", {}))) is with_wb


def test_coordinator_without_glance_cannot_even_ls() -> None:
    wall = pre(coordinator("协调者", "", {}, glance=False))[0]
    assert denied(call(wall, "Bash", bash("ls")))


@pytest.mark.parametrize("can_run", [False, True])
def test_judge_is_walled_exclusively_and_cannot_dispatch(can_run: bool) -> None:
    [wall] = pre(judge("判定", None, can_run=can_run))
    assert wall.matcher is None
    assert denied(call(wall, "Agent", agent_call()))
    assert denied(call(wall, "Write", {})) and denied(call(wall, "Skill", {}))
    assert call(wall, "Read", {}) == {}
    out = call(wall, "Bash", bash("file a.out"))
    if can_run:
        assert out == {}
    else:
        assert texts.DENY_HINTS["judge"] in reason(out) and "判定" in reason(out)


@pytest.mark.parametrize("spec", [clarify("确认", None), oracle()])
def test_clarifier_and_oracle_are_walled_exclusively(spec: AgentSpec) -> None:
    [wall] = pre(spec)
    assert wall.matcher is None
    assert denied(call(wall, "WebFetch" if spec.role == "oracle" else "Bash", {}))
    assert texts.DENY_HINTS[spec.role] in reason(call(wall, "Write", {}))


def test_plain_spec_gets_a_non_exclusive_wall() -> None:
    spec = AgentSpec(name="查资料", instructions="", allowed_tools=["Read"])
    [wall] = pre(spec)
    assert wall.matcher is not None
    assert call(wall, "Skill", {}) == {}
    assert "查资料" in reason(call(wall, "Write", {}))
    assert denied(call(wall, "Agent", agent_call()))


def test_a_spec_allowed_to_dispatch_gets_the_dispatch_guard() -> None:
    spec = AgentSpec(name="a", instructions="", allowed_tools=["Read", "Agent"])
    wall, dispatch = pre(spec)
    assert call(wall, "Agent", agent_call()) == {}
    assert updated(call(dispatch, "Agent", agent_call()))["run_in_background"] is False


def test_a_spec_with_every_guarded_tool_gets_no_wall_only_dispatch() -> None:
    assert matchers(role_hooks(AgentSpec(name="a", instructions="", allowed_tools=GUARDED)),
                    "PreToolUse") == ["Agent|Task"]


def test_a_hands_on_spec_is_still_walled_from_dispatch() -> None:
    spec = AgentSpec(name="a", instructions="", allowed_tools=HANDS_ON.split("|"))
    [wall] = pre(spec)
    assert wall.matcher == DISPATCH and not can_dispatch(spec)
    assert denied(call(wall, "Agent", {})) and call(wall, "Bash", bash("make")) == {}


def test_role_hooks_spill_threshold(wb: Workbench) -> None:
    spec = AgentSpec(name="a", instructions="")
    assert matchers(role_hooks(spec, workbench=wb, spill_threshold=None), "PostToolUse") == \
        [WRITE_ONLY]
    assert matchers(role_hooks(spec, workbench=wb), "PostToolUse") == [WRITE_ONLY, SPILL]


def test_can_dispatch() -> None:
    assert can_dispatch(coordinator("c", "", {}))
    assert can_dispatch(AgentSpec(name="a", instructions="", agents={"x": worker("x", "p")}))
    assert can_dispatch(AgentSpec(name="a", instructions="", allowed_tools=["Agent"]))
    assert not can_dispatch(AgentSpec(name="a", instructions=""))
    assert not can_dispatch(judge("j", None, can_run=True))


@pytest.mark.parametrize("tool", ["Read", "Glob", "Grep"])
def test_a_coordinator_that_cannot_read_is_walled_from_reading(tool: str) -> None:
    """``coordinator(can_read=False)`` only dropped Read from the pre-approved list; the CLI
    offers it anyway, so the wall must deny it (found by reading the code)."""
    blind = role_hooks(coordinator("c", "", {}, can_read=False))["PreToolUse"][0]
    assert denied(call(blind, tool, {"file_path": "/etc/hosts", "pattern": "x"}))
    seeing = role_hooks(coordinator("c", "", {}))["PreToolUse"][0]
    assert call(seeing, tool, {"file_path": "/etc/hosts", "pattern": "x"}) == {}
