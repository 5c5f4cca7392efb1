"""The sandbox settings each role gets under each mode (pure functions), the platform probe,
and how ``build_options`` and ``Runtime`` apply them. End to end: tests/e2e/test_sandbox.py."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import anyio
import pytest

from flower import Runtime, clarify, coordinator, judge, oracle, worker
from flower.core import sandbox as sb
from flower.core.agent import AgentSpec, build_options
from flower.core.sandbox import (
    DEFAULT_DOMAINS,
    Platform,
    SandboxPolicy,
    sandbox_policy,
    settings_for,
    wall_for,
)
from flower.errors import SandboxUnavailable

WS, HOME, CFG = Path("/w/proj"), Path("/h/me"), Path("/h/me/.claude")
HAS = Platform(ok=True)
HAS_NOT = Platform(ok=False, why="PATH 里找不到 bwrap", how="apt install bubblewrap socat")


def policy(mode: str = "auto", machine: Platform = HAS, **kw) -> SandboxPolicy:
    return SandboxPolicy(mode=mode, platform=machine, **kw)


# --- which wall ---------------------------------------------------------------------------


@pytest.mark.parametrize("role,tools,mode,want", [
    ("coordinator", ["Agent", "Bash"], "auto", "readonly"),
    ("coordinator", ["Agent", "Bash"], "on", "readonly"),
    ("coordinator", ["Agent", "Bash"], "strict", "workspace+net"),  # shares its workers' wall
    ("clarifier", ["Read"], "auto", "readonly"),
    ("oracle", ["Read"], "strict", "readonly"),
    ("judge", ["Read"], "on", "readonly"),
    ("judge", ["Read", "Bash"], "auto", "workspace"),  # it runs builds and tests
    ("judge", ["Read", "Bash"], "strict", "workspace"),
    ("", ["Read", "Bash"], "auto", "off"),  # hands-on: walled only under strict
    ("", ["Read", "Bash"], "on", "off"),
    ("", ["Read", "Bash"], "strict", "workspace+net"),
    ("coordinator", ["Agent"], "auto", "off"),  # no glances: nothing of its own to wall
    ("coordinator", ["Agent"], "strict", "workspace+net"),
    ("coordinator", ["Agent"], "off", "off"),
    ("judge", ["Read"], "off", "off"),
])
def test_the_wall_of_each_role(role: str, tools: list[str], mode: str, want: str) -> None:
    assert wall_for(role, tools, mode, available=True) == want


@pytest.mark.parametrize("mode", ["auto", "on", "strict"])
def test_no_sandbox_on_the_machine_means_no_wall(mode: str) -> None:
    assert wall_for("coordinator", ["Bash"], mode, available=False) == "off"


def test_a_spec_overrides_the_runtime_mode() -> None:
    p = policy("auto")
    assert p.wall("judge", ["Read"], override="off") == "off"
    assert p.wall("", ["Bash"], override="strict") == "workspace+net"
    with pytest.raises(ValueError):
        p.wall("judge", ["Read"], override="sometimes")


# --- the settings -------------------------------------------------------------------------


def build(wall: str, **kw) -> dict:
    out = settings_for(wall, workspace=WS, home=HOME, config_dir=CFG, **kw)
    assert out is not None
    return out


def test_off_builds_no_sandbox_but_keeps_the_credential_and_run_state_rules() -> None:
    """Wall ``off`` (a worker under ``auto``, ``--sandbox off``): no sandbox, but the same
    Read deny rules as every wall, and the run state's Edit rules."""
    s = settings_for("off", workspace=WS, home=HOME, config_dir=CFG,
                     deny_rules=["Edit(//w/proj/runs/**)"], protect=["/w/proj/runs"])
    assert set(s) == {"permissions"}
    rules = s["permissions"]["deny"]
    assert rules == [*build("readonly")["permissions"]["deny"], "Edit(//w/proj/runs/**)"]
    assert f"Read(/{HOME}/.ssh/**)" in rules and f"Read(/{WS}/**/.env)" in rules
    assert f"Read(/{HOME}/.claude.json)" in rules and f"Read(/{CFG}/.credentials.json)" in rules
    with pytest.raises(ValueError):
        settings_for("half", workspace=WS, home=HOME, config_dir=CFG)


def test_readonly_writes_nowhere_reaches_no_host_and_hides_the_credentials() -> None:
    s = build("readonly", add_dirs=["/r/workbench"])
    box = s["sandbox"]
    assert box["enabled"] and box["failIfUnavailable"]
    assert box["allowUnsandboxedCommands"] is False and box["autoAllowBashIfSandboxed"] is False
    assert box["network"] == {"allowedDomains": [], "strictAllowlist": True}
    fs = box["filesystem"]
    assert "allowWrite" not in fs
    assert fs["denyWrite"] == [str(WS), str(HOME), "/r/workbench"]
    hidden = set(fs["denyRead"])
    for rel in (".config/flower", ".claude", ".claude.json", ".ssh", ".aws", ".netrc",
                ".docker/config.json", ".kube", ".config/gh", ".gitconfig",
                ".git-credentials", ".bashrc", ".profile", ".zshrc"):
        assert str(HOME / rel) in hidden, rel
    assert {f"{WS}/**/.env", f"{WS}/**/*.env", f"{WS}/**/.env*"} <= hidden
    rules = set(s["permissions"]["deny"])  # the same places for the Read/Grep/Glob tools
    assert f"Read(/{HOME}/.ssh/**)" in rules and f"Read(/{HOME}/.gitconfig)" in rules
    assert f"Read(/{WS}/**/.env*)" in rules and f"Read(/{CFG}/.credentials.json)" in rules
    assert f"Read(/{CFG}/**)" not in rules  # the CLI's saved tool results stay readable
    assert "enableWeakerNestedSandbox" not in box and "apiKeyHelper" not in s


def test_a_coordinator_lets_workers_out_but_not_at_the_credentials() -> None:
    s = build("readonly", escape=True)
    assert s["sandbox"]["allowUnsandboxedCommands"] is True
    # the rules hold for the whole CLI process: the coordinator's and its workers' tools
    assert s["permissions"] == build("readonly")["permissions"]
    hidden = s["sandbox"]["filesystem"]["denyRead"]
    assert str(HOME / ".gitconfig") not in hidden  # git refuses to run without it
    assert str(HOME / ".git-credentials") in hidden and str(HOME / ".ssh") in hidden


def test_a_judge_that_runs_writes_the_workspace_only_and_no_network() -> None:
    fs = build("workspace", add_dirs=["/r/workbench"])["sandbox"]["filesystem"]
    assert fs["allowWrite"] == [str(WS)]
    assert fs["denyWrite"] == [str(HOME), "/r/workbench"]
    assert build("workspace")["sandbox"]["network"]["allowedDomains"] == []


def test_a_strict_worker_writes_the_workspace_and_reaches_the_allowlist() -> None:
    s = build("workspace+net", add_dirs=["/r/workbench"], domains=["pypi.org", "x.test"])
    box = s["sandbox"]
    assert box["network"] == {"allowedDomains": ["pypi.org", "x.test"], "strictAllowlist": True}
    assert box["filesystem"]["allowWrite"] == [str(WS), "/r/workbench"]
    assert box["filesystem"]["denyWrite"] == [str(HOME)]  # never ~
    assert box["allowUnsandboxedCommands"] is False and "permissions" in s


def test_a_workspace_inside_home_takes_back_what_the_cli_opens_there() -> None:
    inside = settings_for("workspace+net", workspace=HOME / "proj", home=HOME, config_dir=CFG)
    assert inside is not None
    fs = inside["sandbox"]["filesystem"]
    assert fs["allowWrite"] == [str(HOME / "proj")]
    assert fs["denyWrite"] == [str(HOME / ".npm/_logs"), str(HOME / ".claude/debug")]


def test_environment_key_helper_and_nested_sandbox() -> None:
    s = build("readonly", hide_env=["ANTHROPIC_API_KEY", "GH_TOKEN", "GH_TOKEN"], weak=True,
              key_helper="cat /k/x.key", hide_files=["/k"])
    assert s["sandbox"]["credentials"]["envVars"] == [
        {"name": "ANTHROPIC_API_KEY", "mode": "deny"}, {"name": "GH_TOKEN", "mode": "deny"}]
    assert s["sandbox"]["enableWeakerNestedSandbox"] is True
    assert s["apiKeyHelper"] == "cat /k/x.key"
    assert "/k" in s["sandbox"]["filesystem"]["denyRead"]


def test_secret_names() -> None:
    names = sb.secret_names({"GH_TOKEN": "x", "DB_PASSWORD": "y", "PATH": "/bin",
                             "MY-KEY": "z", "API_KEY_2": "w"})
    assert names == ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "API_KEY_2", "DB_PASSWORD",
                     "GH_TOKEN"]


# --- the platform -------------------------------------------------------------------------


def fake_bin(tmp_path: Path, name: str, *, bwrap: str | None) -> str:
    """A PATH folder with ``socat`` and (unless None) a ``bwrap`` running ``bwrap``'s body."""
    folder = tmp_path / name
    folder.mkdir()
    scripts = {"socat": "exit 0"}
    if bwrap is not None:
        scripts["bwrap"] = bwrap
    for tool, body in scripts.items():
        path = folder / tool
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(folder)


def test_linux_needs_bwrap_and_socat_on_path(tmp_path: Path) -> None:
    got = sb.probe_platform({"PATH": fake_bin(tmp_path, "none", bwrap=None)})
    assert not got.ok and "bwrap" in got.why and "apt install bubblewrap socat" in got.how
    assert sb.probe_platform({"PATH": fake_bin(tmp_path, "ok", bwrap="exit 0")}).ok


def test_a_bwrap_that_cannot_start_a_sandbox_is_no_sandbox(tmp_path: Path) -> None:
    got = sb.probe_platform({"PATH": fake_bin(
        tmp_path, "broken", bwrap='echo "bwrap: No permissions to create new namespace" >&2\n'
                                  "exit 1")})
    assert not got.ok and "No permissions to create new namespace" in got.why


PROC_FAILS = 'for a in "$@"; do [ "$a" = --proc ] && { echo "bwrap: Can\'t mount proc" >&2; ' \
             'exit 1; }; done; exit 0'


def test_without_a_fresh_proc_only_a_container_gets_the_weaker_sandbox(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sb, "in_container", lambda: True)
    got = sb.probe_platform({"PATH": fake_bin(tmp_path, "box", bwrap=PROC_FAILS)})
    assert got.ok and got.weak
    monkeypatch.setattr(sb, "in_container", lambda: False)
    got = sb.probe_platform({"PATH": fake_bin(tmp_path, "host", bwrap=PROC_FAILS)})
    assert not got.ok and "mount proc" in got.why


def test_flowers_image_says_it_is_a_container(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWER_IN_CONTAINER", "1")
    assert sb.in_container()


def test_other_platforms() -> None:
    assert sb._probe("/nowhere", "darwin").ok  # Seatbelt is built in
    assert not sb._probe("/nowhere", "win32").ok


# --- the policy ---------------------------------------------------------------------------


def test_on_and_strict_need_a_sandbox_auto_says_what_it_costs() -> None:
    assert policy("on", HAS_NOT).problem() is not None
    assert "--sandbox strict" in str(policy("strict", HAS_NOT).problem())
    assert policy("auto", HAS_NOT).problem() is None and policy("off", HAS_NOT).problem() is None
    notice = policy("auto", HAS_NOT).notice()
    assert notice is not None and "apt install bubblewrap socat" in notice
    assert policy("auto", HAS).notice() is None and policy("off", HAS_NOT).notice() is None
    with pytest.raises(ValueError):
        SandboxPolicy(mode="sometimes")


def test_policy_coercion() -> None:
    assert sandbox_policy(None).mode == "auto" and sandbox_policy("strict").mode == "strict"
    assert sandbox_policy(True).mode == "on" and sandbox_policy(False).mode == "off"
    p = policy("on")
    assert sandbox_policy(p) is p
    assert SandboxPolicy(allow_domains=("a.test", " a.test ", "")).allow_domains == ("a.test",)
    assert SandboxPolicy().allow_domains == DEFAULT_DOMAINS


# --- the model credential -----------------------------------------------------------------


def test_the_key_moves_into_a_file_only_the_helper_reads(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "tok-123456789012")
    env: dict[str, str] = {}
    moved = sb.move_key(env)
    assert moved is not None
    helper, path = moved
    assert env == {"ANTHROPIC_API_KEY": "", "ANTHROPIC_AUTH_TOKEN": ""}
    assert path.read_text() == "tok-123456789012" and helper == f"cat {path}"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_key_folders_of_gone_processes_are_swept(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "keys"
    root.mkdir(mode=0o700)
    gone, alive = root / "999999999-x", root / f"{os.getppid()}-y"
    for folder in (gone, alive):
        folder.mkdir()
    sb._sweep(root)
    assert not gone.exists() and alive.exists()


def test_a_key_root_others_can_enter_is_not_used(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sb.tempfile, "tempdir", str(tmp_path))
    shared = tmp_path / f"flower-keys-{os.getuid()}"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    assert sb.key_root() != shared
    shared.chmod(0o700)
    assert sb.key_root() == shared


def test_two_different_keys_stay_where_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"ANTHROPIC_API_KEY": "sk-a-1234567890", "ANTHROPIC_AUTH_TOKEN": "tok-b-1234567890"}
    assert sb.move_key(dict(env)) is None
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    assert sb.move_key({}) is None  # nothing to move


def test_git_gets_a_copy_of_its_config_without_the_secrets(tmp_path: Path) -> None:
    config = tmp_path / ".gitconfig"
    config.write_text('[user]\n\tname = Jane Doe\n\temail = j@example.com\n'
                      '[credential]\n\thelper = store\n'
                      '[url "https://user:s3cret@git.example/"]\n\tinsteadOf = https://git.example/\n'
                      '[safe]\n\tdirectory = /srv/a\n')
    copy = sb.git_copy(config)
    assert copy is not None
    text = copy.read_text()
    assert "Jane Doe" in text and "j@example.com" in text and "/srv/a" in text
    assert "s3cret" not in text and "helper" not in text
    assert sb.git_copy(tmp_path / "missing") is None


# --- the escape hooks ---------------------------------------------------------------------


def test_workers_leave_the_coordinators_sandbox_the_coordinator_does_not() -> None:
    sub = {"agent_id": "a1", "tool_name": "Bash", "tool_input": {"command": "make"}}
    out = sb._pre_tool(sub, None, None)["hookSpecificOutput"]
    assert out["updatedInput"] == {"command": "make", "dangerouslyDisableSandbox": True}
    assert "permissionDecision" not in out  # the role's other hooks still decide
    main = {"tool_name": "Bash", "tool_input": {"command": "ls"}}
    assert sb._pre_tool(main, None, None) == {}
    main["tool_input"]["dangerouslyDisableSandbox"] = True
    denied = sb._pre_tool(main, None, None)["hookSpecificOutput"]
    assert denied["permissionDecision"] == "deny"
    assert sb._permission(main, None, None) == {}  # nobody grants the main thread's request
    flagged = {**sub, "tool_input": {"command": "make", "dangerouslyDisableSandbox": True}}
    granted = sb._permission(flagged, None, None)["hookSpecificOutput"]
    assert granted["decision"] == {"behavior": "allow"}
    assert sb._permission(sub, None, None) == {}  # a plain ask is not ours to grant


# --- build_options and the Runtime --------------------------------------------------------


def settings_of(options) -> dict:
    return json.loads(options.settings) if options.settings else {}


def test_build_options_walls_each_role(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-1234567890")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    p = policy("auto")
    j = build_options(judge("判定", None), cwd=tmp_path, sandbox=p,
                      extra_env={"PROJECT_NOTE": "from .env", "PATH": "/bin"})
    s = settings_of(j)
    assert s["sandbox"]["filesystem"]["denyWrite"][0] == str(tmp_path.resolve())
    assert s["apiKeyHelper"].startswith("cat ")
    assert j.env["ANTHROPIC_API_KEY"] == ""  # the CLI gets it from the helper
    hidden = [v["name"] for v in s["sandbox"]["credentials"]["envVars"]]
    assert "PROJECT_NOTE" in hidden and "ANTHROPIC_API_KEY" in hidden and "PATH" not in hidden
    c = build_options(coordinator("协调者", "", {"w": worker("d", "p")}), cwd=tmp_path,
                      sandbox=p)
    assert settings_of(c)["sandbox"]["allowUnsandboxedCommands"] is True
    assert set(c.hooks) == {"PreToolUse", "PermissionRequest"}
    for spec in (clarify("澄清", None), oracle()):
        assert settings_of(build_options(spec, cwd=tmp_path, sandbox=p))["sandbox"]["enabled"]
    plain = AgentSpec(name="x", instructions="", allowed_tools=["Bash"])
    unwalled = build_options(plain, cwd=tmp_path, sandbox=p)
    assert set(settings_of(unwalled)) == {"permissions"}  # no sandbox, the rules still
    assert set(unwalled.hooks) == {"PreToolUse"}  # and the second layer behind them
    assert settings_of(build_options(plain, cwd=tmp_path, sandbox=policy("strict")))
    assert build_options(judge("判定", None), cwd=tmp_path).settings is None  # no policy
    off = build_options(AgentSpec(name="j", instructions="", role="judge", sandbox="off"),
                        cwd=tmp_path, sandbox=p)
    assert set(settings_of(off)) == {"permissions"}
    assert off.env.get("ANTHROPIC_API_KEY") is None  # the key moves only into a sandbox


def test_a_spec_asking_for_a_sandbox_the_machine_lacks_fails(tmp_path: Path) -> None:
    spec = AgentSpec(name="j", instructions="", role="judge", sandbox="on")
    with pytest.raises(SandboxUnavailable):
        build_options(spec, cwd=tmp_path, sandbox=policy("auto", HAS_NOT))


def test_runtime_refuses_on_without_a_sandbox_before_anything_else(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-0000000000")
    with pytest.raises(SandboxUnavailable) as err:
        Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs",
                sandbox=policy("on", HAS_NOT))
    assert "--sandbox on" in str(err.value) and not (tmp_path / "ws").exists()
    rt = Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs", sandbox="off")
    try:
        assert rt.sandbox.mode == "off"
    finally:
        rt.close()


def test_the_step_records_its_wall(home: Path, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The wall is decided per step, before any attempt: the manifest row records it and
    ``-v`` hears it as a system event (the attempt itself is stubbed out here)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-0000000000")
    rt = Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs", resilience=False,
                 sandbox=policy("auto"))
    seen: list = []
    try:
        spec = judge("判定", None)
        rt._attempt = _no_cli  # type: ignore[method-assign]
        result = anyio.run(lambda: rt.run(spec, "x", on_event=seen.append))
    finally:
        rt.close()
    assert result.sandbox == "readonly"
    [row] = json.loads((tmp_path / "runs" / "manifest.json").read_text())
    assert row["sandbox"] == "readonly"
    assert [e.payload["sandbox"] for e in seen if e.kind == "system"] == ["readonly"]


async def _no_cli(spec, prompt, result, **kw) -> None:
    result.ok, result.text = True, "stand-in for the CLI"
