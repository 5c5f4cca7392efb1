"""What no role may write or read (flower/core/runstate.py): the paths, the rules, the hooks'
decisions. End to end, through the real CLI and bubblewrap: tests/e2e/test_walls.py."""

from __future__ import annotations

import string
from pathlib import Path

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from flower import texts
from flower.core import runstate
from flower.core.runstate import RunDirRefused, check_state_paths, guard_hooks, run_state
from flower.stores.seal import key_dir

segment = st.text(string.ascii_letters + string.digits + "._-", min_size=1, max_size=8) \
    .filter(lambda s: s not in (".", ".."))
rel_paths = st.lists(segment, min_size=1, max_size=5).map("/".join)


@given(rel_paths)
def test_a_tree_rule_names_everything_below_its_folder_and_nothing_beside_it(rel: str) -> None:
    tree = runstate._pattern("Read(//r/secret/**)")
    assert tree is not None
    assert tree.match(f"/r/secret/{rel}") and tree.match("/r/secret")
    assert not tree.match(f"/r/secretx/{rel}") and not tree.match(f"/r/{rel}x")


@given(rel_paths, segment)
def test_a_star_stays_in_one_folder_a_double_star_crosses_them(rel: str, name: str) -> None:
    one = runstate._pattern("Read(//w/*.env)")
    anywhere = runstate._pattern("Read(//w/**/.env*)")
    assert one is not None and anywhere is not None
    assert bool(one.match(f"/w/{rel}.env")) == ("/" not in rel)
    assert anywhere.match(f"/w/{rel}/.env{name}") and anywhere.match(f"/w/.env{name}")
    assert not anywhere.match(f"/w/{rel}/x.env")


def test_relative_rules_are_not_understood_as_paths() -> None:
    assert runstate._pattern("Read(~/.ssh/**)") is None and runstate._pattern("Bash") is None


# --- the run state ----------------------------------------------------------------------


def test_the_run_dir_is_protected_whole_and_the_spill_dir_is_made(tmp_path: Path) -> None:
    ws, runs = tmp_path / "ws", tmp_path / "ws" / "runs"
    runs.mkdir(parents=True)
    spill = ws / ".flower" / "spill"
    state = run_state(runs, ws, [spill])
    assert spill.is_dir()  # so bubblewrap can bind it read-only before anything spilled
    assert state.binds == (runs, spill)
    assert state.rules == (f"Edit(/{runs}/**)", f"Edit(/{spill}/**)")


def test_a_workbench_in_the_run_dir_stays_writable_its_records_do_not(tmp_path: Path) -> None:
    ws, runs = tmp_path / "ws", tmp_path / "runs"
    (runs / "workbench").mkdir(parents=True)
    (runs / "sessions.db").write_text("")
    state = run_state(runs, ws, [runs / "workbench" / "spill"], [runs / "workbench"])
    assert runs not in state.binds and runs / "workbench" not in state.binds
    assert runs / "sessions.db" in state.binds  # exists: bound
    assert runs / "budget.json" not in state.binds  # not yet: held by the rules only
    assert f"Edit(/{runs}/budget.json)" in state.rules
    assert f"Edit(/{runs}/sessions.db-wal)" in state.rules
    assert f"Edit(/{runs}/workbench/spill/**)" in state.rules
    assert not any(r == f"Edit(/{runs}/**)" for r in state.rules)


@pytest.mark.parametrize("planted", ["runs", ".flower", ".flower/spill"])
def test_a_planted_link_on_the_way_to_the_run_state_is_refused(tmp_path: Path,
                                                               planted: str) -> None:
    ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    (ws / planted).parent.mkdir(parents=True, exist_ok=True)
    elsewhere.mkdir()
    (ws / planted).symlink_to(elsewhere)
    with pytest.raises(RunDirRefused) as got:
        check_state_paths(ws, ws / "runs", ws / ".flower" / "spill")
    assert str(ws / planted) in str(got.value) and str(elsewhere) in str(got.value)
    assert "\n" not in str(got.value)


def test_links_outside_the_workspace_are_the_users_own(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "ws" / "runs").mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)  # the workspace reached through a link
    (tmp_path / "runs-link").symlink_to(real)
    check_state_paths(tmp_path / "link" / "ws", tmp_path / "link" / "ws" / "runs")
    check_state_paths(real / "ws", tmp_path / "runs-link")  # a --run-dir of one's own


def test_a_runs_link_to_the_workspace_itself_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "runs").symlink_to(ws)
    with pytest.raises(RunDirRefused):
        check_state_paths(ws, ws / "runs")


def test_runtime_refuses_a_planted_runs_link_before_writing_through_it(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from flower import Runtime

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-0000000000")
    ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    ws.mkdir()
    elsewhere.mkdir()
    (ws / "runs").symlink_to(elsewhere)
    with pytest.raises(RunDirRefused):
        Runtime(workspace=ws, run_dir=ws / "runs", sandbox="off")
    assert list(elsewhere.iterdir()) == []  # nothing made through the link


# --- the hooks --------------------------------------------------------------------------


def decide(hooks: dict, tool: str, tool_input: dict, cwd: Path, agent: bool = False) -> str:
    """The permission decision of the hook for ``tool`` ("" when it lets the call be)."""
    data = {"tool_name": tool, "tool_input": tool_input, "cwd": str(cwd)}
    if agent:
        data["agent_id"] = "a1"
    out = {}
    for matcher in hooks["PreToolUse"]:
        if tool in matcher.matcher.split("|"):
            out = anyio.run(matcher.hooks[0], data, "t1", None)
    return out.get("hookSpecificOutput", {}).get("permissionDecisionReason", "")


@pytest.fixture
def state(tmp_path: Path, home: Path) -> runstate.RunState:
    ws = tmp_path / "ws"
    (ws / "runs").mkdir(parents=True)
    return run_state(ws / "runs", ws, [ws / ".flower" / "spill"])


@pytest.mark.parametrize("command", [
    "rm -rf runs", "cd runs && sqlite3 sessions.db 'delete from entries'",
    "python3 -c \"open('runs/budget.json','w').write('{}')\"",
    "printf x > ./runs/lineage.json", "mv .flower/spill /tmp/x",
    "touch .flower/spill/.loadindex/x", "echo x | tee -a runs/manifest.json",
])
def test_bash_that_writes_the_run_state_is_refused(state: runstate.RunState,
                                                   command: str) -> None:
    hooks = guard_hooks([], state)
    assert decide(hooks, "Bash", {"command": command}, state.workspace) == texts.DENY_RUN_STATE
    assert decide(hooks, "Bash", {"command": command.replace("runs", str(
        state.workspace / "runs"))}, Path("/")) == texts.DENY_RUN_STATE
    assert decide(hooks, "Bash", {"command": command}, state.workspace, agent=True) \
        == texts.DENY_RUN_STATE  # a worker's call as well


@pytest.mark.parametrize("command", [
    "pytest tests/test_runs.py", "echo '{}' > public/manifest.json", "ls runs",
    "cat runs/manifest.json", "git status", "python3 .flower/scripts/check.py",
])
def test_bash_that_leaves_the_run_state_alone_runs(state: runstate.RunState,
                                                   command: str) -> None:
    assert decide(guard_hooks([], state), "Bash", {"command": command}, state.workspace) == ""


def test_the_index_key_is_nobodys_to_read(state: runstate.RunState) -> None:
    hooks = guard_hooks([], state)
    for command in (f"cat {key_dir()}/index.key", "ls ~/.local/state/flower/index.key"):
        assert decide(hooks, "Bash", {"command": command}, state.workspace) == \
            texts.DENY_STATE_KEY


def test_reads_of_a_credential_are_refused_through_links_and_relative_paths(
        state: runstate.RunState, home: Path) -> None:
    ws = state.workspace
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("k")
    (ws / "key").symlink_to(home / ".ssh" / "id_ed25519")
    (ws / "README.md").write_text("r")
    hooks = guard_hooks([f"Read(/{home}/.ssh/**)", f"Read(/{ws}/**/.env*)"], state)
    reason = texts.DENY_CREDENTIAL_READ.format
    assert decide(hooks, "Read", {"file_path": "key"}, ws) == reason(path="key")
    assert decide(hooks, "Read", {"file_path": "sub/.env.local"}, ws, agent=True) == \
        reason(path="sub/.env.local")
    assert decide(hooks, "Grep", {"pattern": "x", "path": str(home / ".ssh")}, ws) == \
        reason(path=str(home / ".ssh"))
    assert decide(hooks, "Read", {"file_path": "README.md"}, ws) == ""
    assert decide(hooks, "Grep", {"pattern": "x", "path": str(ws)}, ws) == ""
