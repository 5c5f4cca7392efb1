"""What an agent is (``AgentSpec``) and how it becomes SDK options (``build_options``).

An ``AgentSpec`` is plain data a workflow author writes; ``build_options`` is the single
place that knows how the SDK and the bundled CLI must be configured so that flower's
promises hold: instructions are *appended* to the Claude Code preset (specialisation never
costs general ability), runs are portable (no user or project settings leak in), the shipped
plugin is loaded, and the transcript mirror always lands in the store.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

# The self-calibration file lives with the handoff document code; scripts written for the
# original flower import these three from here, so they are re-exported (one definition).
from flower.core.handoff import calibrated_window as calibrated_window
from flower.core.handoff import remember_overflow as remember_overflow
from flower.core.handoff import windows_path

#: The calibration file's path under the original flower's name (the same function).
calib_path = windows_path

if TYPE_CHECKING:  # the SDK is imported lazily: `flower --help` must not pay for it
    from claude_agent_sdk import ClaudeAgentOptions, SessionStore

    from flower.core.runstate import RunState
    from flower.core.sandbox import SandboxPolicy

#: Domain skills and agents shipped *inside* the installed package (kept at the
#: repo root they would be missing from a pip-installed copy, which then silently runs without).
PLUGIN_DIR = Path(__file__).resolve().parent.parent / "plugins"

_COMPACT_MODES = ("auto", "no_summary", "off")
#: Variables a sandboxed Bash keeps even when a ``.env`` file set them (it needs them to run).
_KEEP_FOR_BASH = frozenset({"PATH", "HOME", "USER", "SHELL", "LANG", "LC_ALL", "TERM",
                            "TMPDIR"})


@dataclass
class CompactPolicy:
    """How the CLI's built-in auto-compact may behave, expressed as subprocess env.

    ``no_summary`` is what handoff needs: flower writes its own handoff document, so the
    CLI must not silently summarise the conversation behind its back.
    """

    mode: str = "auto"
    window: int | None = None

    def env(self) -> dict[str, str]:
        """The variables to hand the CLI; raises ``ValueError`` for an unknown mode."""
        if self.mode not in _COMPACT_MODES:
            raise ValueError(
                f"CompactPolicy.mode must be one of {', '.join(_COMPACT_MODES)}, got {self.mode!r}"
            )
        out: dict[str, str] = {}
        if self.mode == "no_summary":
            out["DISABLE_AUTO_COMPACT"] = "1"
        elif self.mode == "off":
            out["DISABLE_COMPACT"] = "1"
        if self.window is not None:
            out["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = str(self.window)
        return out


_ONE_M = re.compile(r"(?:^|[^a-z0-9])1m(?:[^a-z0-9]|$)")


def guess_window(environ: Mapping[str, str] | None = None) -> int:
    """The context window the configured model's *name* suggests (``ANTHROPIC_MODEL``, else
    ``ANTHROPIC_DEFAULT_OPUS_MODEL``): a standalone ``1m`` → 1M, ``haiku`` → 200K, anything
    else 1M. Over-estimates are safe: an overflow error triggers an immediate (degraded)
    handoff and calibrates the window.
    """
    model = configured_model(environ).lower()
    if _ONE_M.search(model):
        return 1_000_000
    if "haiku" in model:
        return 200_000
    return 1_000_000


#: Names the CLI resolves itself (to whatever the gateway serves for them): a served name
#: never "differs" from these.
_MODEL_ALIASES = frozenset({"default", "best", "opus", "sonnet", "haiku", "opusplan"})
_WINDOW_HINT = re.compile(r"\[[^\]]*\]$")  # "[1m]": read by the CLI, not sent to the API
_SNAPSHOT = re.compile(r"-\d{8}$")  # "-20251001": the dated snapshot an alias is served as


def configured_model(environ: Mapping[str, str] | None = None) -> str:
    """The main model the settings name (``ANTHROPIC_MODEL``, else
    ``ANTHROPIC_DEFAULT_OPUS_MODEL``): the name the window guess and the calibration key
    are made from; "" when neither is set."""
    env = os.environ if environ is None else environ
    return (env.get("ANTHROPIC_MODEL") or env.get("ANTHROPIC_DEFAULT_OPUS_MODEL") or "").strip()


def served_differs(configured: str, served: str) -> bool:
    """Does the gateway answer with another model than the one configured? Case is ignored,
    and so are a trailing window hint (``claude-x[1m]`` is sent as ``claude-x``) and the
    date of a snapshot (``claude-x`` may be answered as ``claude-x-20251001``). A bare alias
    (``opus``) or nothing configured never differs: there is no name to compare."""
    want = _WINDOW_HINT.sub("", configured.strip().lower()).strip()
    got = _WINDOW_HINT.sub("", served.strip().lower()).strip()
    if not want or not got or want in _MODEL_ALIASES:
        return False
    return _SNAPSHOT.sub("", got) != _SNAPSHOT.sub("", want)


#: The automatic room (``headroom=0``): at least this many tokens ...
HEADROOM_FLOOR = 50_000
#: ... or this share of the window, whichever is larger.
HEADROOM_FRACTION = 0.25
#: Floor of the handoff line: below it a handoff cannot even be written.
AT_FLOOR = 10_000


def env_window(environ: Mapping[str, str] | None = None) -> int | None:
    """``FLOWER_WINDOW`` as a positive int (it may come from ``~/.config/flower/.env`` via
    ``load_dotenv``); anything else — unset, not a number, 0, negative — is ignored."""
    env = os.environ if environ is None else environ
    raw = (env.get("FLOWER_WINDOW") or "").strip().replace("_", "")
    try:
        value = int(raw)
    except ValueError:
        return None
    return value if value > 0 else None


def default_window(environ: Mapping[str, str] | None = None) -> int:
    """The window when none is given explicitly: ``FLOWER_WINDOW`` > the self-calibration
    file (where this endpoint+model really overflowed) > the name-based guess
    (:func:`guess_window`). ``environ``: the settings to read (default ``os.environ``)."""
    return env_window(environ) or calibrated_window(environ) or guess_window(environ)


def resolve_window(explicit: int | None = None,
                   environ: Mapping[str, str] | None = None) -> int:
    """The window handoff works against: an explicit value (``--window``,
    ``HandoffPolicy(window=...)``; 0/None mean "not given"), else :func:`default_window`."""
    if explicit:
        return int(explicit)
    return default_window(environ)


class DefaultWindow(int):
    """A window nobody gave: :func:`default_window` when the policy was made. The type says
    so (and survives ``dataclasses.replace``), so the policy keeps following the settings it
    runs with instead of pinning the value of its construction."""


@dataclass
class HandoffPolicy:
    """When a session is retired for a fresh one that continues from a handoff document.

    ``window`` not given (``None`` or 0) becomes :func:`default_window` at construction (a
    :class:`DefaultWindow`), so it always reads as a number, as in the original flower. Such
    a policy still follows the settings it runs with: :meth:`resolved` (once per step, with
    the Runtime's ``.env`` values) and :attr:`effective_window` re-read them, and an
    overflow's calibration applies at once. A window given explicitly is kept as given.
    ``headroom=0`` means automatic room (:attr:`room`).
    """

    #: The automatic room is at least this many tokens ...
    HEADROOM_FLOOR: ClassVar[int] = HEADROOM_FLOOR
    #: ... or this share of the window, whichever is larger.
    HEADROOM_FRACTION: ClassVar[float] = HEADROOM_FRACTION

    enabled: bool = True
    window: int | None = None
    headroom: int = 0
    max_generations: int = 8

    def __post_init__(self) -> None:
        if not self.window:
            self.window = DefaultWindow(default_window())

    @property
    def _given(self) -> int | None:
        return None if isinstance(self.window, DefaultWindow) else self.window

    @property
    def effective_window(self) -> int:
        """The window in force now: the one given, or the default as the settings say now."""
        return resolve_window(self._given)

    @property
    def room(self) -> int:
        """Tokens kept free below the window: the explicit ``headroom`` if > 0, else
        ``max(50_000, 25 % of the window)`` — a fixed 50k on a 1M window leaves no room
        for the writing round, and every handoff degrades."""
        if self.headroom > 0:
            return self.headroom
        return max(HEADROOM_FLOOR, int(self.effective_window * HEADROOM_FRACTION))

    @property
    def at(self) -> int:
        """Context size at which the step hands off (never below 10k)."""
        return max(AT_FLOOR, self.effective_window - self.room)

    @property
    def warn_at(self) -> int:
        """Context size of the one early warning per generation."""
        return max(1_000, self.at - 20_000)

    def resolved(self, environ: Mapping[str, str] | None = None) -> HandoffPolicy:
        """A copy with the window fixed (env and calibration file read once, not at every
        message boundary). ``environ``: the settings to read (default ``os.environ``)."""
        return replace(self, window=resolve_window(self._given, environ))


def handoff_setting(window: int | None, *, enabled: bool = True) -> HandoffPolicy | bool:
    """What ``Runtime(handoff=…)`` gets from ``--window N`` / ``--no-handoff`` (the local CLI
    and a Temporal worker build it from the same two values, so they hand off alike)."""
    if not enabled:
        return HandoffPolicy(enabled=False)
    return HandoffPolicy(window=window) if window and window > 0 else True


@dataclass
class AgentSpec:
    """One agent role: instructions, tools, limits. Plain data; compiled by ``build_options``."""

    name: str
    instructions: str
    allowed_tools: list[str] = field(default_factory=lambda: ["Read", "Glob", "Grep"])
    disallowed_tools: list[str] = field(default_factory=list)
    model: str | None = None
    effort: str | None = None
    max_turns: int | None = None
    max_budget_usd: float | None = None
    permission_mode: str = "default"
    agents: dict[str, Any] | None = None
    mcp_servers: dict[str, Any] = field(default_factory=dict)
    hooks: dict[str, Any] | None = None
    compact: CompactPolicy | None = None
    env: dict[str, str] = field(default_factory=dict)
    glance: bool = False
    workbench: bool = True
    delegate_only: bool = False
    #: Which built-in role this is ("coordinator", "clarifier", "judge", "oracle" or "" for
    #: a plain agent): decides how the Runtime walls it and what its deny reasons say.
    role: str = ""
    #: This spec's sandbox mode ("auto", "on", "strict", "off"), overriding the Runtime's;
    #: None follows the Runtime (flower/core/sandbox.py says what each role gets).
    sandbox: str | None = None


def config_dir_for(env: dict[str, str]) -> str:
    """The CLAUDE_CONFIG_DIR the CLI will use, made explicit.

    The SDK resolves transcript-mirror frames against ``options.env["CLAUDE_CONFIG_DIR"]``,
    else the parent's variable, else ``~/.claude``. If a spec overrides only ``HOME`` the CLI
    writes under the new home while the SDK looks under the old one and silently drops every
    frame — so flower always pins the variable.
    """
    if env.get("CLAUDE_CONFIG_DIR"):
        return env["CLAUDE_CONFIG_DIR"]
    if env.get("HOME"):  # a spec that moves HOME means "a different user's config"
        return str(Path(env["HOME"]) / ".claude")
    if os.environ.get("CLAUDE_CONFIG_DIR"):
        return os.environ["CLAUDE_CONFIG_DIR"]
    return str(Path.home() / ".claude")


def build_options(
    spec: AgentSpec,
    *,
    cwd: str | Path | None = None,
    session_store: SessionStore | None = None,
    resume: str | None = None,
    fork: bool = False,
    resume_at: str | None = None,
    use_plugin: bool = True,
    portable: bool = True,
    add_dirs: list[str] | None = None,
    flush: str = "eager",
    prelude: str = "",
    extra_env: dict[str, str] | None = None,
    sandbox: SandboxPolicy | None = None,
    state: RunState | None = None,
) -> ClaudeAgentOptions:
    """Compile ``spec`` into ``ClaudeAgentOptions``.

    ``fork`` and ``resume_at`` only mean something together with ``resume``. ``extra_env``
    is layered *under* the spec's own env (flower's defaults never override the author).
    ``sandbox`` walls the spec's Bash as its role and the policy say (None: no sandbox, as
    before there was one); it may move the model credential out of the env into an
    ``apiKeyHelper`` and add hooks after the spec's own. ``state``: the run state no role
    may write (``flower.core.runstate``; with ``sandbox`` only).
    """
    from claude_agent_sdk import ClaudeAgentOptions

    append = spec.instructions if not prelude else f"{spec.instructions}\n\n{prelude}"
    env: dict[str, str] = dict(extra_env or {})
    env.update(spec.env)
    if spec.compact is not None:
        env.update(spec.compact.env())
    env["CLAUDE_CONFIG_DIR"] = config_dir_for(env)
    hooks = spec.hooks
    settings: str | None = None
    if sandbox is not None:
        from flower.core.sandbox import plan

        walled = plan(sandbox, role=spec.role, tools=spec.allowed_tools, override=spec.sandbox,
                      env=env, cwd=cwd or os.getcwd(),
                      home=env.get("HOME") or os.environ.get("HOME") or str(Path.home()),
                      config_dir=env["CLAUDE_CONFIG_DIR"], add_dirs=add_dirs or (),
                      can_dispatch=spec.delegate_only or bool(spec.agents),
                      hide=[k for k in extra_env or {} if k not in spec.env
                            and k not in _KEEP_FOR_BASH], state=state)
        settings = walled.settings_json()
        if walled.hooks:
            hooks = {k: list(v) for k, v in (hooks or {}).items()}
            for event, matchers in walled.hooks.items():
                hooks.setdefault(event, []).extend(matchers)

    kw: dict[str, Any] = {
        "system_prompt": {"type": "preset", "preset": "claude_code", "append": append},
        "allowed_tools": list(spec.allowed_tools),
        "disallowed_tools": list(spec.disallowed_tools),
        "permission_mode": spec.permission_mode,
        "setting_sources": [] if portable else ["project"],
        "env": env,
    }
    if use_plugin and PLUGIN_DIR.is_dir():
        kw["plugins"] = [{"type": "local", "path": str(PLUGIN_DIR)}]
    if cwd:
        kw["cwd"] = str(cwd)
    if add_dirs:
        kw["add_dirs"] = list(add_dirs)
    if session_store is not None:
        kw["session_store"] = session_store
        kw["session_store_flush"] = flush
    if settings:
        kw["settings"] = settings
    for name in ("model", "effort", "max_turns", "max_budget_usd", "agents", "mcp_servers"):
        value = getattr(spec, name)
        if value:
            kw[name] = value
    if hooks:
        kw["hooks"] = hooks
    if resume:
        kw["resume"] = resume
        if fork:
            kw["fork_session"] = True
        if resume_at:
            kw["resume_session_at"] = resume_at
    return ClaudeAgentOptions(**kw)
