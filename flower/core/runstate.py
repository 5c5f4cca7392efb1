"""The run's memory and the user's credentials out of every role's reach.

What flower trusts later lies in the run dir (``sessions.db`` and its ``-wal``/``-shm``,
``manifest.json``, ``lineage.json``, ``budget.json``, ``aside/``) and in the workspace's
spill dir (``.flower/spill/``: spill files, ``.memo``, ``.loadindex/``). An agent that
writes there forges what the next session is shown or what the run may spend. Three
layers keep every role of every sandbox mode out, strongest first:

1. the sandbox's ``filesystem.denyWrite`` (sandboxed Bash: looking roles, strict workers);
   the folders are made before the first attempt so bubblewrap can bind them read-only;
2. permission rules in the CLI settings of every attempt, wall ``off`` included: ``Edit``
   deny rules for the run state (the CLI applies them to Write/Edit/MultiEdit/NotebookEdit)
   and ``Read`` deny rules for the credentials (Read/Grep/Glob) — they hold for the whole
   CLI process, so a coordinator's subagents too;
3. PreToolUse hooks, which see subagents' calls as well: Read/Grep/Glob of a credential
   location are denied, and a Bash command that names the run state and is not a glance
   is refused — the only wall an unsandboxed Bash has (an ``auto`` worker, wall ``off``),
   so best effort: a command that spells a path in pieces gets past it.

The load index is sealed besides (``flower.stores.seal``), with a key under
``~/.local/state/flower`` that layers 1–3 hide like a credential.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flower import texts
from flower.core.privacy import NESTED, RECORDS
from flower.errors import FlowerError
from flower.shell import is_ephemeral
from flower.stores.seal import key_dir

log = logging.getLogger(__name__)

__all__ = ["RunDirRefused", "RunState", "check_state_paths", "guard_hooks", "of_runtime",
           "run_state", "secret_dirs"]

#: Names only flower's own state has: a Bash command naming one is about the run's memory.
#: (Not the record names: a project may well have a ``manifest.json`` of its own.)
STATE_NAMES = (".loadindex",)


class RunDirRefused(FlowerError):
    """The run dir or the spill dir is, or passes through, a symlink inside the workspace."""


@dataclass(frozen=True)
class RunState:
    """What no role may write: ``binds`` (existing folders/files for the sandbox's
    denyWrite) and ``rules`` (paths for the permission rules and the Bash hook; they may
    not exist yet), and ``workspace`` (to name them relative to it)."""

    workspace: Path
    binds: tuple[Path, ...] = ()
    rules: tuple[str, ...] = ()
    paths: tuple[Path, ...] = field(default=(), compare=False)
    spills: tuple[Path, ...] = field(default=(), compare=False)


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def run_state(run_dir: Path, workspace: Path, spill_dirs: Sequence[Path],
              writable: Sequence[Path] = ()) -> RunState:
    """The run state of one attempt, its folders made first (``mkdir -p``).

    The run dir is protected whole, unless something the agents must write lies in it (a
    workbench kept there, the workspace itself): then its records one by one — those that
    do not exist yet are held only by the rules and the hook, not by the sandbox.
    """
    ws = workspace.resolve()
    run = run_dir.resolve()
    open_inside = [w for w in (ws, *writable) if _inside(Path(w).resolve(), run)]
    paths: list[Path] = []
    rules: list[str] = []
    if open_inside:
        for name in RECORDS:
            paths.append(run / name)
            rules.append(_rule(run / name))
        for name in NESTED:
            paths.append(run / name)
            rules.append(_rule(run / name) + "/**")
        rules += [_rule(run / "crash-*.log"), _rule(run / "*.corrupt-*")]
    else:
        paths.append(run)
        rules.append(_rule(run) + "/**")
    spills = tuple(dict.fromkeys(Path(d).resolve() for d in spill_dirs))
    for spill in spills:
        with contextlib.suppress(OSError):
            spill.mkdir(parents=True, exist_ok=True)
        paths.append(spill)
        rules.append(_rule(spill) + "/**")
    binds = tuple(dict.fromkeys(p for p in paths if p.exists()))
    return RunState(workspace=ws, binds=binds,
                    rules=tuple(f"Edit({r})" for r in dict.fromkeys(rules)),
                    paths=tuple(dict.fromkeys(paths)), spills=spills)


def secret_dirs() -> list[Path]:
    """More places every role's tools must not read: the folder of the index key (made
    here, so the sandbox can hide it and the rule names a folder)."""
    folder = key_dir()
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return [folder]


def check_state_paths(workspace: Path, *paths: Path) -> None:
    """Refuse a run dir or spill dir inside the workspace that is, or passes through, a
    symlink: an agent may have planted it to point flower's records at a place it can
    write (or at one flower would then overwrite). A path outside the workspace is the
    user's own choice. Raises ``RunDirRefused``."""
    ws = Path(workspace).resolve()
    for given in paths:
        cur, chain = Path(given).expanduser().absolute(), []
        # up to the workspace's own folder (a link named ``runs`` pointing at the workspace
        # resolves to it as well: the top is where the parent no longer does)
        while not (cur.resolve() == ws and cur.parent.resolve() != ws):
            chain.append(cur)
            if cur.parent == cur:
                chain = []  # not inside the workspace
                break
            cur = cur.parent
        for link in reversed(chain):
            if link.is_symlink():
                raise RunDirRefused(texts.RUN_STATE_SYMLINK.format(
                    path=link, target=_target(link)))


def of_runtime(rt: Any) -> RunState:
    """The run state of ``rt`` (a ``Runtime``) for its next attempt: its run dir, the
    resume-time spill dir and its workbench's (checked for planted links first)."""
    from flower.stores.trimming import spill_dir

    spills = [rt.workspace / rt.trim_policy.spill_dirname]
    writable: list[Path] = []
    if rt.workbench is not None:
        spills.append(rt.workbench.spill)
        writable.append(rt.workbench.root)
    check_state_paths(rt.workspace, rt.run_dir, *spills)
    spills[0] = spill_dir(rt.workspace, rt.trim_policy)
    return run_state(rt.run_dir, rt.workspace, spills, writable)


def _target(link: Path) -> str:
    try:
        return str(link.readlink())
    except OSError:
        return "?"


# ------------------------------------------------------------------ permission rules


def _rule(path: Path | str) -> str:
    """A permission-rule path: ``//`` + absolute path (the CLI's syntax for "from /")."""
    text = str(path)
    return "/" + text if text.startswith("/") else text


def _pattern(rule: str) -> re.Pattern[str] | None:
    """The paths a ``Tool(//abs/glob)`` rule names, as a regex over absolute paths."""
    inner = rule[rule.find("(") + 1: -1] if rule.endswith(")") else ""
    if not inner.startswith("//"):
        return None
    glob, out, k = inner[1:], [], 0
    while k < len(glob):
        if glob.startswith("/**", k) and k + 3 == len(glob):
            out.append("(?:/.*)?")
            k += 3
        elif glob.startswith("**/", k):
            out.append("(?:.*/)?")
            k += 3
        elif glob.startswith("**", k):
            out.append(".*")
            k += 2
        elif glob[k] == "*":
            out.append("[^/]*")
            k += 1
        elif glob[k] == "?":
            out.append("[^/]")
            k += 1
        else:
            out.append(re.escape(glob[k]))
            k += 1
    return re.compile("".join(out) + r"\Z")


def _denied_dir(rule: str) -> str | None:
    """``/abs/dir`` of a ``Tool(//abs/dir/**)`` rule: a tree a search must not start in."""
    inner = rule[rule.find("(") + 1: -1]
    if inner.startswith("//") and inner.endswith("/**") and "*" not in inner[:-3]:
        return inner[1:-3]
    return None


# ------------------------------------------------------------------ the hooks


def _deny(reason: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                   "permissionDecision": "deny",
                                   "permissionDecisionReason": reason}}


def _candidates(value: str, cwd: str | None, workspace: Path) -> list[str]:
    """``value`` as an absolute path, before and after following symlinks."""
    base = Path(cwd) if cwd else workspace
    path = base / Path(value).expanduser()
    out = [str(Path(*path.parts))]
    with contextlib.suppress(OSError, RuntimeError):
        out.append(str(path.resolve()))
    return out


def _state_words(state: RunState) -> tuple[list[str], set[str]]:
    """What a Bash command names when it is about the run state: substrings (absolute
    paths, ``runs/``-like relative prefixes, the record names) and whole words (``runs``)."""
    subs: list[str] = [*STATE_NAMES]
    words: set[str] = set()
    for path in state.paths:
        subs.append(str(path))
        if path.is_relative_to(state.workspace) and path != state.workspace:
            rel = str(path.relative_to(state.workspace))
            subs.append(rel + "/")
            words.update({rel, f"./{rel}", f"{rel}/", f"./{rel}/"})
            first = Path(rel).parts[0]
            words.update({first, f"./{first}", f"{first}/", f"./{first}/"})
    return list(dict.fromkeys(subs)), words


def _names(command: str, subs: list[str], words: set[str]) -> bool:
    if any(s in command for s in subs):
        return True
    try:
        split = shlex.split(command, comments=True)
    except ValueError:
        split = command.split()
    return any(w.strip("'\"();&|<>") in words for w in split)


_SPILL_NAME = re.compile(r"[0-9a-f]{16}\.txt")


def _altered_spill(path: Path, spills: Sequence[Path]) -> bool:
    """Is ``path`` a spill file whose bytes no longer hash to its name? Then someone else
    wrote it: it is removed (the next resume writes it again from the stored rows, which
    are the record) and said in one line."""
    if path.parent not in spills or not _SPILL_NAME.fullmatch(path.name):
        return False
    try:
        data = path.read_bytes()
    except OSError:
        return False
    if hashlib.sha256(data).hexdigest()[:16] == path.stem:
        return False
    log.warning(texts.SPILL_ALTERED.format(path=path))
    with contextlib.suppress(OSError):
        path.unlink()
    return True


def guard_hooks(read_rules: Sequence[str], state: RunState | None) -> dict[str, list[Any]]:
    """The second layer (PreToolUse, main thread and subagents alike): Read/Grep/Glob of
    what ``read_rules`` deny, and Bash commands about the run state or the index key."""
    from claude_agent_sdk import HookMatcher

    patterns = [p for p in map(_pattern, read_rules) if p is not None]
    trees = [d for d in map(_denied_dir, read_rules) if d is not None]
    ws = state.workspace if state is not None else Path.cwd()
    secret = [str(d) for d in secret_dirs()]
    subs, words = _state_words(state) if state is not None else ([], set())

    def credential(value: str, cwd: str | None, *, search: bool) -> bool:
        for cand in _candidates(value, cwd, ws):
            if any(p.match(cand) for p in patterns):
                return True
            # a search that starts above a denied tree is left to the CLI's rules, which
            # skip the denied files inside; one that starts in it is refused here
            if search and any(cand == t or cand.startswith(t + "/") for t in trees):
                return True
        return False

    async def reads(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict:
        tool_input = data.get("tool_input") or {}
        tool = str(data.get("tool_name") or "")
        cwd = data.get("cwd")
        for key in ("file_path", "path", "notebook_path"):
            value = tool_input.get(key)
            if isinstance(value, str) and value and \
                    credential(value, cwd, search=tool in ("Grep", "Glob")):
                return _deny(texts.DENY_CREDENTIAL_READ.format(path=value))
        value = tool_input.get("file_path")
        if tool == "Read" and isinstance(value, str) and state is not None and \
                _altered_spill(Path(_candidates(value, cwd, ws)[-1]), state.spills):
            return _deny(texts.DENY_SPILL_ALTERED.format(path=value))
        return {}

    async def bash(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict:
        command = str((data.get("tool_input") or {}).get("command") or "")
        if any(s in command for s in secret) or "index.key" in command:
            return _deny(texts.DENY_STATE_KEY)
        if subs and _names(command, subs, words) and not is_ephemeral(command):
            return _deny(texts.DENY_RUN_STATE)
        return {}

    return {"PreToolUse": [HookMatcher(matcher="Read|Grep|Glob", hooks=[reads]),
                           HookMatcher(matcher="Bash", hooks=[bash])]}
