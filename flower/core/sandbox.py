"""The operating system's wall: the bundled CLI's Bash sandbox, per role.

Hooks (``flower.core.guard``) decide which tool calls a role may make; a Bash command the
policy lets through still runs with the user's rights. The sandbox is the second layer: the
CLI runs each Bash command under bubblewrap (Linux) or Seatbelt (macOS) with the filesystem
and network rules flower computes here, so even a command the policy misjudged cannot write,
phone home or read a credential. Four walls:

* ``off`` — no sandbox (hands-on roles outside ``strict``; a platform without one);
* ``readonly`` — nothing writable but the CLI's own temp dir, no network (coordinator,
  clarifier, oracle, a judge that cannot run commands);
* ``workspace`` — the workspace writable too, still no network (a judge that runs builds
  and tests);
* ``workspace+net`` — the workspace writable, the network through the sandbox's proxy to an
  allowlist (workers and plain agents under ``strict``).

Every wall but ``off`` hides the credential locations from Bash and keeps the model
credential out of Bash's environment (the CLI gets it from an ``apiKeyHelper`` that reads
a file Bash cannot see). One CLI process runs a coordinator *and* its workers, with one
sandbox: outside ``strict`` the workers' Bash is let out of the coordinator's read-only
sandbox by :func:`escape_hooks` (workers are sandboxed only on request this round).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from flower import config, texts
from flower.core.env import is_secret
from flower.core.runstate import RunState, guard_hooks, secret_dirs
from flower.errors import SandboxUnavailable

__all__ = ["DEFAULT_DOMAINS", "MODES", "WALLS", "Plan", "Platform", "SandboxPolicy",
           "escape_hooks", "plan", "probe_platform", "sandbox_policy", "settings_for",
           "wall_for"]

MODES = ("auto", "on", "strict", "off")
OFF, READONLY, WORKSPACE, WORKER = "off", "readonly", "workspace", "workspace+net"
WALLS = (OFF, READONLY, WORKSPACE, WORKER)
#: Roles whose Bash only looks: sandboxed read-only wherever the platform has a sandbox.
LOOKING_ROLES = ("coordinator", "clarifier", "judge", "oracle")

#: Where ``strict`` lets a worker's Bash go by default: package registries and git hosts.
DEFAULT_DOMAINS = (
    "pypi.org", "files.pythonhosted.org",
    "registry.npmjs.org", "registry.yarnpkg.com",
    "github.com", "codeload.github.com", "objects.githubusercontent.com",
    "raw.githubusercontent.com",
    "gitlab.com", "bitbucket.org",
    "deb.debian.org", "security.debian.org", "archive.ubuntu.com", "security.ubuntu.com",
    "crates.io", "index.crates.io", "static.crates.io",
    "proxy.golang.org", "sum.golang.org",
    "rubygems.org", "repo.maven.apache.org",
)

#: Credential folders and files under HOME (the shell rc/profile files included: they often
#: export tokens, and a command that can read them can read those).
HOME_SECRET_DIRS = (".config/flower", ".claude", ".ssh", ".aws", ".kube", ".config/gh",
                    ".config/fish")
HOME_SECRET_FILES = (
    ".claude.json", ".netrc", ".docker/config.json", ".gitconfig", ".git-credentials",
    ".config/git/credentials",
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
    ".zshrc", ".zshenv", ".zprofile", ".zlogin",
)
#: ``.env`` files anywhere in the workspace (the CLI expands the globs to existing files).
WORKSPACE_SECRETS = ("**/.env", "**/*.env", "**/.env*")
#: git refuses to run when its global config exists but cannot be read, so a wall that hides
#: ``~/.gitconfig`` hands git a copy with only these keys (``GIT_CONFIG_GLOBAL``).
GIT_KEYS = ("user.name", "user.email", "init.defaultbranch", "safe.directory")
#: Files of the CLI's config folder that the Read tool must not open. Not the whole folder:
#: the CLI saves large tool results there and tells the model to Read them.
CONFIG_SECRETS = (".credentials.json", "settings.json", "settings.local.json", ".claude.json")
#: Under HOME, the bundled CLI (2.1.x) lets every sandboxed command write these two; a write
#: wall whose workspace lies inside HOME takes them back one by one.
CLI_HOME_WRITES = (".npm/_logs", ".claude/debug")
#: The model credential: moved from the CLI's environment into an ``apiKeyHelper``.
MODEL_KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


# ------------------------------------------------------------------ the platform


@dataclass(frozen=True)
class Platform:
    """Can this machine sandbox the CLI's Bash? ``weak``: only without a fresh ``/proc``
    (an unprivileged container), which the CLI calls ``enableWeakerNestedSandbox``."""

    ok: bool
    weak: bool = False
    why: str = ""
    how: str = ""


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

def in_container() -> bool:
    """Inside a container: flower's image says so (``FLOWER_IN_CONTAINER``), Docker and
    Podman leave a marker file. Only there is a sandbox without a fresh /proc accepted —
    the /proc it then shows is the container's, not the host's."""
    return bool(os.environ.get("FLOWER_IN_CONTAINER")) or any(
        Path(p).exists() for p in ("/.dockerenv", "/run/.containerenv"))


_PROBE = ("--new-session", "--die-with-parent", "--unshare-net", "--unshare-pid",
          "--unshare-user", "--ro-bind", "/", "/", "--dev", "/dev")


def _bwrap_runs(bwrap: str, *extra: str) -> str | None:
    """Run ``true`` under bwrap the way the CLI will; None when it worked, else why not."""
    try:
        done = subprocess.run([bwrap, *_PROBE, *extra, "--", "true"], capture_output=True,
                              text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    return (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]


@lru_cache(maxsize=8)
def _probe(path: str, system: str) -> Platform:
    if system == "darwin":  # Seatbelt (sandbox-exec) ships with macOS
        return Platform(ok=True)
    if not system.startswith("linux"):
        return Platform(ok=False, why=texts.SANDBOX_WHY_PLATFORM.format(platform=system),
                        how=texts.SANDBOX_HOW_OTHER)
    found = {name: shutil.which(name, path=path) for name in ("bwrap", "socat")}
    missing = [name for name, where in found.items() if where is None]
    if missing:
        return Platform(ok=False, why=texts.SANDBOX_WHY_MISSING.format(names=" ".join(missing)),
                        how=texts.SANDBOX_HOW_LINUX)
    bwrap = str(found["bwrap"])
    failed = _bwrap_runs(bwrap, "--proc", "/proc")
    if failed is None:
        return Platform(ok=True)
    if in_container() and _bwrap_runs(bwrap) is None:
        return Platform(ok=True, weak=True)
    return Platform(ok=False, why=texts.SANDBOX_WHY_BROKEN.format(detail=failed),
                    how=texts.SANDBOX_HOW_BROKEN)


def probe_platform(environ: Mapping[str, str] | None = None) -> Platform:
    """What the sandbox needs, checked once per PATH: macOS has it built in; Linux needs
    ``bwrap`` and ``socat`` on PATH, and bwrap must really start a sandbox here."""
    env = os.environ if environ is None else environ
    return _probe(env.get("PATH", os.defpath), sys.platform)


# ------------------------------------------------------------------ which wall


def wall_for(role: str, tools: Sequence[str], mode: str, available: bool) -> str:
    """The wall a role gets under ``mode`` (pure: the unit tests pin this table).

    ``auto``/``on`` wall the looking roles; ``strict`` also the hands-on ones (workers and
    plain agents). A coordinator under ``strict`` shares its workers' wall: they run in its
    CLI process, and one process has one sandbox. A coordinator without Bash (no glances)
    runs no command of its own, so outside ``strict`` its session is left unsandboxed: a
    sandbox there would only hold back its workers.
    """
    if mode not in MODES:
        raise ValueError(f"sandbox mode must be one of {', '.join(MODES)}, got {mode!r}")
    if mode == "off" or not available:
        return OFF
    if role not in LOOKING_ROLES or (role == "coordinator" and mode == "strict"):
        return WORKER if mode == "strict" else OFF
    if role == "coordinator" and "Bash" not in tools:
        return OFF
    if role == "judge" and "Bash" in tools:
        return WORKSPACE
    return READONLY


@dataclass
class SandboxPolicy:
    """``Runtime(sandbox=…)``: the mode and the allowlist of ``strict``.

    ``platform=None`` probes the machine at first use (:func:`probe_platform`).
    """

    mode: str = "auto"
    allow_domains: tuple[str, ...] = DEFAULT_DOMAINS
    platform: Platform | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"sandbox mode must be one of {', '.join(MODES)}, "
                             f"got {self.mode!r}")
        self.allow_domains = tuple(dict.fromkeys(d.strip() for d in self.allow_domains
                                                 if d and d.strip()))

    def machine(self) -> Platform:
        if self.platform is None:
            self.platform = probe_platform()
        return self.platform

    def problem(self, mode: str | None = None) -> str | None:
        """Why ``mode`` (default: this policy's) cannot be had here; None if it can."""
        mode = mode or self.mode
        if mode in ("on", "strict") and not self.machine().ok:
            m = self.machine()
            return texts.SANDBOX_UNAVAILABLE.format(mode=mode, why=m.why, how=m.how)
        return None

    def notice(self) -> str | None:
        """The one line ``auto`` prints at start when the machine has no sandbox."""
        if self.mode == "auto" and not self.machine().ok:
            m = self.machine()
            return texts.SANDBOX_AUTO_OFF.format(why=m.why, how=m.how)
        return None

    def wall(self, role: str, tools: Sequence[str], override: str | None = None) -> str:
        """The wall of one spec (``override``: its ``AgentSpec.sandbox``)."""
        mode = override or self.mode
        return wall_for(role, tools, mode, mode != "off" and self.machine().ok)


def sandbox_policy(value: SandboxPolicy | str | bool | None) -> SandboxPolicy:
    """``Runtime(sandbox=…)`` coercion: a policy as is, a mode name, ``True`` = ``on``,
    ``False`` = ``off``, ``None`` = ``auto``."""
    if isinstance(value, SandboxPolicy):
        return value
    if value is None:
        return SandboxPolicy()
    if isinstance(value, bool):
        return SandboxPolicy(mode="on" if value else "off")
    return SandboxPolicy(mode=str(value))


# ------------------------------------------------------------------ the settings


def _rule(path: str) -> str:
    """A permission-rule path: ``//`` + absolute path (the CLI's syntax for "from /")."""
    return "/" + path if path.startswith("/") else path


def _inside(path: Path, root: Path) -> bool:
    try:
        return path.is_relative_to(root)
    except ValueError:
        return False


def _home_files(keep_gitconfig: bool) -> tuple[str, ...]:
    return tuple(f for f in HOME_SECRET_FILES if not (keep_gitconfig and f == ".gitconfig"))


def hidden_paths(*, workspace: Path, home: Path, config_dir: Path,
                 extra: Sequence[str | Path] = (), keep_gitconfig: bool = False) -> list[str]:
    """Every credential location Bash must not read, as absolute paths and globs."""
    out = [str(home / p) for p in (*HOME_SECRET_DIRS, *_home_files(keep_gitconfig))]
    out += [str(config_dir), str(config_dir.parent / ".claude.json")]
    out += [str(workspace / g) for g in WORKSPACE_SECRETS]
    out += [str(Path(p)) for p in extra]
    return list(dict.fromkeys(out))


def read_rules(*, workspace: Path, home: Path, config_dir: Path,
               extra: Sequence[str | Path] = ()) -> list[str]:
    """The same locations as ``Read(...)`` deny rules, for the Read/Grep/Glob tools."""
    # not the whole ~/.claude, only its secret files (CONFIG_SECRETS): tool results are read there
    rules = [_rule(str(home / d)) + "/**" for d in HOME_SECRET_DIRS if d != ".claude"]
    rules += [_rule(str(home / f)) for f in HOME_SECRET_FILES]
    for d in dict.fromkeys((config_dir, home / ".claude")):
        rules += [_rule(str(d / name)) for name in CONFIG_SECRETS]
    rules += [_rule(str(workspace / g)) for g in WORKSPACE_SECRETS]
    for p in extra:
        path = Path(p)
        rules.append(_rule(str(path)) + ("/**" if path.is_dir() else ""))
    return [f"Read({r})" for r in dict.fromkeys(rules)]


def settings_for(wall: str, *, workspace: str | Path, home: str | Path,
                 config_dir: str | Path, add_dirs: Sequence[str | Path] = (),
                 domains: Sequence[str] = (), weak: bool = False,
                 hide_env: Sequence[str] = (), hide_files: Sequence[str | Path] = (),
                 key_helper: str | None = None, escape: bool = False,
                 protect: Sequence[str | Path] = (),
                 deny_rules: Sequence[str] = ()) -> dict[str, Any]:
    """The CLI settings (``--settings`` JSON) that build ``wall``.

    Pure, so the unit tests can pin what each role gets. ``hide_env``: variables unset for
    sandboxed commands; ``hide_files``: more paths to hide (the ``.env`` files flower reads,
    the helper's key file); ``escape``: the coordinator's workers may leave the sandbox
    (:func:`escape_hooks` decides who actually does); ``protect``: the run state no
    sandboxed command may write (``flower.core.runstate``); ``deny_rules``: more permission
    rules (the run state's ``Edit`` rules). Every wall, ``off`` too, gets the ``Read`` deny
    rules of the credentials: they hold for every tool call of the CLI process, a
    coordinator's workers included.
    """
    if wall not in WALLS:
        raise ValueError(f"unknown sandbox wall {wall!r}")
    ws, home_p, cfg = Path(workspace), Path(home), Path(config_dir)
    permissions = {"deny": [*read_rules(workspace=ws, home=home_p, config_dir=cfg,
                                        extra=hide_files), *deny_rules]}
    if wall == OFF:
        return {"permissions": permissions}
    writes = wall in (WORKSPACE, WORKER)
    fs: dict[str, Any] = {
        # a coordinator's workers leave its sandbox but share its environment: git's global
        # config stays readable there (git cannot run without it and no copy can be swapped in)
        "denyRead": hidden_paths(workspace=ws, home=home_p, config_dir=cfg, extra=hide_files,
                                 keep_gitconfig=escape),
    }
    if not writes:
        # the CLI makes cwd (and a little of HOME) writable by default: take it all back;
        # its own temp dir stays writable (it tracks the shell's cwd there after each command)
        fs["denyWrite"] = list(dict.fromkeys([str(ws), str(home_p), *map(str, add_dirs)]))
    else:
        fs["allowWrite"] = [str(ws)] + ([str(d) for d in add_dirs] if wall == WORKER else [])
        # denyWrite wins over allowWrite: HOME as a whole only when nothing allowed is in it
        fs["denyWrite"] = [str(home_p / p) for p in CLI_HOME_WRITES] \
            if any(_inside(Path(p), home_p) for p in fs["allowWrite"]) else [str(home_p)]
        if wall == WORKSPACE and add_dirs:
            fs["denyWrite"] += [str(d) for d in add_dirs if not _inside(Path(d), ws)]
    fs["denyWrite"] = list(dict.fromkeys([*fs["denyWrite"], *map(str, protect)]))
    sandbox: dict[str, Any] = {
        "enabled": True,
        "failIfUnavailable": True,  # never silently unsandboxed once flower asked for it
        "autoAllowBashIfSandboxed": False,  # the role's permissions decide, as without
        "allowUnsandboxedCommands": bool(escape),
        "network": {"allowedDomains": list(domains) if wall == WORKER else [],
                    "strictAllowlist": True},
        "filesystem": fs,
    }
    if hide_env:
        # the CLI rejects the whole settings object for a name a shell could not export
        # (a .env line like "bad-key=…"); such a variable cannot reach Bash by name anyway
        names = [n for n in dict.fromkeys(hide_env) if _ENV_NAME.fullmatch(n)]
        sandbox["credentials"] = {"envVars": [{"name": n, "mode": "deny"} for n in names]}
    if weak:
        sandbox["enableWeakerNestedSandbox"] = True
    out: dict[str, Any] = {"sandbox": sandbox, "permissions": permissions}
    if key_helper:
        out["apiKeyHelper"] = key_helper
    return out


# ------------------------------------------------------------------ the model credential


_PRIVATE: dict[str, Path] = {}


def key_root() -> Path:
    """The one folder (per user) under which every flower process keeps its key files, so a
    sandbox hides them all — another run's, and one a killed process left behind. Refused
    (a folder of our own instead) when someone else owns it or others may enter it."""
    root = Path(tempfile.gettempdir()) / f"flower-keys-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        root.mkdir(mode=0o700)
    info = root.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return Path(tempfile.mkdtemp(prefix="flower-keys-"))
    return root


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, but not ours to signal
        return True
    return True


def _sweep(root: Path) -> None:
    """Remove the key folders of flower processes that are gone (killed before atexit)."""
    for folder in root.glob("*-*"):
        pid = folder.name.split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _private(kind: str) -> Path:
    """One private folder per process and kind, removed at exit: ``key`` (under
    :func:`key_root`, hidden from Bash) and ``git`` (read by it)."""
    if kind not in _PRIVATE:
        if kind == "key":
            root = key_root()
            _sweep(root)
            path = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=root))
        else:
            path = Path(tempfile.mkdtemp(prefix=f"flower-{kind}-"))
        atexit.register(shutil.rmtree, path, True)
        _PRIVATE[kind] = path
    return _PRIVATE[kind]


def _write_once(folder: Path, body: str, suffix: str) -> Path:
    path = folder / (hashlib.sha256(body.encode()).hexdigest()[:16] + suffix)
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(body)
    return path


def key_file(value: str) -> Path:
    """A file holding ``value`` (mode 0600) for ``apiKeyHelper`` to print."""
    return _write_once(_private("key"), value, ".key")


def git_copy(gitconfig: Path) -> Path | None:
    """A global git config with only ``GIT_KEYS`` of ``gitconfig`` (who commits, which
    folders are safe); None without git or without such a file."""
    git = shutil.which("git")
    if git is None or not gitconfig.is_file():
        return None
    try:
        listed = subprocess.run([git, "config", "--file", str(gitconfig), "--null", "--list"],
                                capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = []
    for entry in listed.stdout.split("\0"):
        key, _, value = entry.partition("\n")
        if key.lower() in GIT_KEYS and "\n" not in value:
            section, _, name = key.rpartition(".")
            lines.append(f"[{section}]\n\t{name} = {json.dumps(value, ensure_ascii=False)}\n")
    return _write_once(_private("git"), "".join(lines), ".gitconfig")


def move_key(env: dict[str, str], *, parent: Mapping[str, str] | None = None
             ) -> tuple[str, Path] | None:
    """Take the model credential out of the CLI's environment: ``(helper command, file)``,
    with ``env`` blanked for it; None (``env`` untouched) when there is nothing to move or
    two different values (the helper can answer only one; both stay, unset for Bash)."""
    merged = {**(os.environ if parent is None else parent), **env}
    values = {merged[k] for k in MODEL_KEYS if merged.get(k)}
    if len(values) != 1:
        return None
    path = key_file(values.pop())
    for k in MODEL_KEYS:
        env[k] = ""  # empty, not absent: the SDK layers env over the parent's variables
    return f"cat {shlex.quote(str(path))}", path


def secret_names(environ: Mapping[str, str]) -> list[str]:
    """Variables that look like credentials (``is_secret``: KEY, TOKEN, SECRET, PASSWORD in
    the name) and can be named in the CLI's settings, plus the model keys."""
    names = [k for k in environ if is_secret(k) and k.replace("_", "a").isalnum()
             and not k[:1].isdigit()]
    return sorted(set(names) | set(MODEL_KEYS))


def flower_env_files() -> list[Path]:
    """The ``.env`` files flower itself reads credentials from (``flower.config``)."""
    out = [config.user_env_path()]
    if os.environ.get("FLOWER_ENV"):
        out.append(Path(os.environ["FLOWER_ENV"]).expanduser())
    repo = config.source_env_path()
    if repo is not None:
        out.append(repo)
    return out


# ------------------------------------------------------------------ workers out of the wall


def _pre_tool(data: dict[str, Any], tool_use_id: str | None, context: Any) -> Any:
    tool_input = dict(data.get("tool_input") or {})
    if data.get("agent_id"):  # a worker: out of the coordinator's read-only sandbox
        if tool_input.get("dangerouslyDisableSandbox") is True:
            return {}
        tool_input["dangerouslyDisableSandbox"] = True
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                       "updatedInput": tool_input}}
    if tool_input.get("dangerouslyDisableSandbox"):
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                       "permissionDecision": "deny",
                                       "permissionDecisionReason": texts.SANDBOX_NO_ESCAPE}}
    return {}


def _permission(data: dict[str, Any], tool_use_id: str | None, context: Any) -> Any:
    tool_input = data.get("tool_input") or {}
    if data.get("agent_id") and tool_input.get("dangerouslyDisableSandbox") is True:
        return {"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                                       "decision": {"behavior": "allow"}}}
    return {}


def escape_hooks() -> dict[str, list[Any]]:
    """Hooks that let a coordinator's workers run Bash outside its read-only sandbox.

    PreToolUse marks a subagent's Bash call ``dangerouslyDisableSandbox`` (the CLI's own
    switch; it then asks for a permission) and denies the switch on the main thread;
    PermissionRequest grants exactly those marked subagent calls. The walled coordinator
    pre-approves plain ``Bash`` (its glances), and under that approval the CLI asks about
    none of a worker's commands — so a worker runs what it would run without the sandbox.
    """
    from claude_agent_sdk import HookMatcher

    async def pre(data: dict[str, Any], tool_use_id: str | None, context: Any) -> Any:
        return _pre_tool(data, tool_use_id, context)

    async def permission(data: dict[str, Any], tool_use_id: str | None, context: Any) -> Any:
        return _permission(data, tool_use_id, context)

    return {"PreToolUse": [HookMatcher(matcher="Bash", hooks=[pre])],
            "PermissionRequest": [HookMatcher(matcher="Bash", hooks=[permission])]}


# ------------------------------------------------------------------ one attempt's plan


@dataclass
class Plan:
    """What ``build_options`` adds for one spec: the CLI settings, hooks, the env changes."""

    wall: str = OFF
    settings: dict[str, Any] | None = None
    hooks: dict[str, list[Any]] = field(default_factory=dict)

    def settings_json(self) -> str | None:
        return json.dumps(self.settings, ensure_ascii=False) if self.settings else None


def plan(policy: SandboxPolicy, *, role: str, tools: Sequence[str], override: str | None,
         env: dict[str, str], cwd: str | Path, home: str | Path, config_dir: str | Path,
         add_dirs: Sequence[str | Path] = (), can_dispatch: bool = False,
         hide: Sequence[str] = (), state: RunState | None = None) -> Plan:
    """The sandbox of one attempt; blanks the model credential in ``env`` when it moves it.

    ``hide``: more variables to unset for Bash (flower's own layer: what ``.env`` files
    gave the agent — they come from files Bash may not read). ``state``: the run state no
    role may write (``flower.core.runstate``). Every wall, ``off`` too, gets the permission
    rules and the hooks of ``runstate.guard_hooks``.

    Raises ``SandboxUnavailable`` when the spec asks for ``on``/``strict`` on a machine
    without a sandbox (the Runtime checks its own mode before any model call).
    """
    mode = override or policy.mode
    problem = policy.problem(mode)
    if problem:
        raise SandboxUnavailable(problem)
    wall = policy.wall(role, tools, override)
    hide_files: list[str | Path] = [*flower_env_files(), *secret_dirs()]
    walls: dict[str, Any] = {
        "workspace": Path(cwd).resolve(), "home": Path(home), "config_dir": Path(config_dir),
        "hide_files": hide_files, "protect": state.binds if state else (),
        "deny_rules": state.rules if state else ()}
    if wall == OFF:
        settings = settings_for(OFF, **walls)
        return Plan(wall=OFF, settings=settings, hooks=_guards(settings, state))
    escape = wall == READONLY and can_dispatch
    hide_env = [*secret_names({**os.environ, **env}), *hide]
    moved = move_key(env)
    if moved is not None:
        hide_files.append(moved[1].parent.parent)  # every flower process's keys
    if not escape and not {**os.environ, **env}.get("GIT_CONFIG_GLOBAL"):
        copy = git_copy(Path(home) / ".gitconfig")
        if copy is not None:
            env["GIT_CONFIG_GLOBAL"] = str(copy)
    settings = settings_for(
        wall, add_dirs=[Path(d) for d in add_dirs], domains=policy.allow_domains,
        weak=policy.machine().weak, hide_env=hide_env,
        key_helper=moved[0] if moved else None, escape=escape, **walls)
    hooks = _guards(settings, state)
    if escape:
        for event, matchers in escape_hooks().items():
            hooks.setdefault(event, []).extend(matchers)
    return Plan(wall=wall, settings=settings, hooks=hooks)


def _guards(settings: dict[str, Any], state: RunState | None) -> dict[str, list[Any]]:
    """The hooks behind the settings' own rules, made from those very rules."""
    rules = [r for r in settings["permissions"]["deny"] if r.startswith("Read(")]
    return guard_hooks(rules, state)

