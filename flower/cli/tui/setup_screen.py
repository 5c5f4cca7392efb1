"""The credential screens: ``flower setup``, the first-run screen, the probe, and re-entry
after a step failed on a bad credential.

Two gates stand before a run (:func:`ensure_credentials`):

1. *present?* — ``check_credentials(effective_env())``: ``.env`` files count, but nothing is
   exported into ``os.environ`` (the Runtime hands them to the agent subprocess itself).
   Missing and interactive → the screen; missing and not interactive → the "where I looked,
   how to fix it" message.
2. *usable?* — one real ``POST /v1/messages`` (``probe_credentials``). ``auth``/``config`` get
   one reconfigure chance; ``net`` never does (the resilience layer waits out outages). Skipped
   when the caller says ``probe=False``, when ``FLOWER_NO_PROBE`` is set, or when not
   interactive (an unattended run must not stall on a screen nobody sees).

The screen asks four things (token, gateway root, model, context window — optional: the
model-name guess stands unless a number is given, and the handoff thresholds follow it) and
writes
``${XDG_CONFIG_HOME:-~/.config}/flower/.env`` atomically with mode 0600, keeping the other keys
already in that file. The token is read hidden on a terminal and only ever shown masked.

Input comes from ``read_line(prompt) -> str`` so tests (and callers with their own prompt
machinery) can feed answers; the default reads stdin (``getpass`` for the token on a TTY).
No SDK import here; rich is imported by whoever builds the console.
"""

from __future__ import annotations

import getpass
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from flower import config, texts
from flower.cli.exitcodes import ExitCode
from flower.core import env as envmod
from flower.errors import one_line
from flower.stores.url import display_url

if TYPE_CHECKING:
    from rich.console import Console

ReadLine = Callable[[str], str]

API_KEY = "ANTHROPIC_API_KEY"
AUTH_TOKEN = "ANTHROPIC_AUTH_TOKEN"
BASE_URL = "ANTHROPIC_BASE_URL"
MODEL_KEYS = ("ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL")
WINDOW = "FLOWER_WINDOW"
PROBE_TIMEOUT = 20.0  # seconds: long enough for a slow gateway, short enough to wait for
RULE_WIDTH = 110  # output width cap: lines stay readable on a wide terminal

# "the step failed because of the credential" (post-failure reconfigure). A bare 401 must stand
# alone ("401ms", "v1.401" are not it); the words cover Anthropic, common gateways, Chinese ones.
_CRED_WORDS = (
    "invalid api key", "invalid x-api-key", "invalid_api_key", "incorrect api key",
    "api key is invalid", "api key not valid", "invalid token", "invalid bearer token",
    "invalid authentication", "authenticat", "unauthorized", "unauthorised",
    "oauth token has expired", "token has expired", "token expired",
    "认证失败", "鉴权失败", "身份验证失败", "未授权", "未认证",
)
_CRED_RES = (
    re.compile(r"(?<![\w.])401(?!\w)(?!\.\d)"),
    re.compile(r"无效的?\s*(?:api[\s_-]*)?(?:key|token|密钥|令牌|秘钥)", re.IGNORECASE),
    re.compile(r"(?:api[\s_-]*)?(?:key|token|密钥|令牌|秘钥)\s*(?:已)?(?:无效|错误|不正确|不对|过期|失效)",
               re.IGNORECASE),
)


# --- input ------------------------------------------------------------------------------------

def read_stdin_line(prompt: str, *, secret: bool = False) -> str:
    """One answer from stdin. On a TTY: ``getpass`` when ``secret`` (nothing echoed), else
    ``input``. Not a TTY (piped): a plain line, no prompt (the question was already printed).
    EOF or a closed stdin counts as a blank answer."""
    stdin = sys.stdin
    try:
        tty = stdin is not None and stdin.isatty()
    except (ValueError, OSError):
        return ""
    try:
        if tty:
            return getpass.getpass(prompt) if secret else input(prompt)
        return stdin.readline().rstrip("\r\n") if stdin is not None else ""
    except (EOFError, ValueError, OSError):
        return ""


def _ask(read_line: ReadLine | None, *, secret: bool = False) -> str:
    if read_line is None:
        answer = read_stdin_line(texts.SETUP_INPUT, secret=secret)
    else:
        answer = read_line(texts.SETUP_INPUT)
    return _unquote(answer or "")


def _unquote(value: str) -> str:
    return value.strip().strip("'\"").strip()


# --- output helpers -----------------------------------------------------------------------------

def _say(console: Console, text: str, style: str = "") -> None:
    from rich.text import Text

    from flower.cli.tui.render import clean

    console.print(Text(clean(text), style=style), soft_wrap=False, overflow="fold")


def _header(console: Console) -> None:
    from rich.cells import cell_len

    head = f"== {texts.SETUP_TITLE} "
    width = max(40, min(console.width, RULE_WIDTH))
    _say(console, head + "=" * max(4, width - cell_len(head)), "bold blue")


# --- normalising answers ----------------------------------------------------------------------

def _token_from(answer: str) -> str:
    """The token itself, also when a whole ``KEY=value`` line was pasted."""
    m = re.fullmatch(r"(?:export\s+)?(?:ANTHROPIC_API_KEY|ANTHROPIC_AUTH_TOKEN)\s*=\s*(.*)",
                     answer)
    return _unquote(m.group(1)) if m else answer


def normalize_base_url(url: str) -> tuple[str, str]:
    """``(root, stripped_tail)``: trailing slashes and a pasted ``/v1`` or ``/v1/messages``
    removed (flower appends ``/v1/messages`` itself). ``stripped_tail`` is "" when nothing
    but slashes went."""
    root = url.strip().rstrip("/")
    tail = ""
    for suffix in ("/v1/messages", "/v1"):
        if root.lower().endswith(suffix):
            tail = root[-len(suffix):]
            root = root[: -len(suffix)].rstrip("/")
            break
    return root, tail


_WINDOW_RE = re.compile(r"(\d+(?:\.\d+)?)\s*([km]?)", re.IGNORECASE)


def parse_window(answer: str) -> int | None:
    """A context window typed by a person: ``1000000``, ``1_000_000``, ``1,000,000``,
    ``1m``, ``200k``, ``1.5m``. ``None`` for anything else, including 0."""
    m = _WINDOW_RE.fullmatch(answer.strip().replace("_", "").replace(",", ""))
    if m is None:
        return None
    scale = {"": 1, "k": 1_000, "m": 1_000_000}[m.group(2).lower()]
    value = int(float(m.group(1)) * scale)
    return value if value > 0 else None


def _tokens(n: int) -> str:
    """``1000000`` → ``1M``, ``200000`` → ``200K`` (what the window question shows)."""
    for unit, size in (("M", 1_000_000), ("K", 1_000)):
        if n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


def _read_user_file(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    out: dict[str, str] = {}
    for key, value in envmod.parse_dotenv(text):
        out.setdefault(key, value)  # the parser's first-wins rule, as load_dotenv reads it
    return out


def _shadow(key: str, new: str, before: str | None, old_file: dict[str, str]) -> str | None:
    """Where a different value that will beat the user file on the next start comes from, if
    anywhere: ``$FLOWER_ENV`` or ``./.env`` setting ``key``, or an exported variable (a value
    present before we touched ``os.environ`` that no file accounts for)."""
    higher = []
    if os.environ.get("FLOWER_ENV"):
        higher.append(Path(os.environ["FLOWER_ENV"]).expanduser())
    higher.append(Path.cwd() / ".env")
    mine = envmod.user_env_path().resolve()
    for path in higher:
        if path.resolve() == mine:
            continue
        for k, v in config.read_dotenv(path):
            if k == key:  # the first occurrence is the one load_dotenv takes
                if v != new and (v or new):
                    return str(path)
                break
    if not before or before == new:
        return None
    known = [old_file.get(key)]
    repo = config.source_env_path()
    if repo is not None:
        known += [v for k, v in config.read_dotenv(repo) if k == key]
    for settings in envmod.claude_settings_paths():
        known += [v for k, v in config.read_claude_settings(settings) if k == key]
    return None if before in known else texts.SETUP_SHADOW_PROCESS


# --- the screen ---------------------------------------------------------------------------------

def configure(console: Console, *, reason: str, read_line: ReadLine | None = None) -> bool:
    """The interactive screen. True when the user file was written (and ``os.environ``
    updated); False when cancelled (blank token, Ctrl-C) or the file could not be written —
    then nothing on disk or in the environment has changed."""
    try:
        return _configure(console, reason, read_line)
    except KeyboardInterrupt:
        console.print()
        _say(console, texts.SETUP_CANCELLED, "red")
        return False


def _configure(console: Console, reason: str, read_line: ReadLine | None) -> bool:
    path = envmod.user_env_path()
    old = _read_user_file(path)
    _header(console)
    _say(console, reason)
    _say(console, texts.SETUP_SAVE_TO.format(path=path), "dim")

    # 1. token
    _say(console, texts.SETUP_ASK_TOKEN, "bold")
    token = _token_from(_ask(read_line, secret=True))
    if not token:
        _say(console, texts.SETUP_NO_TOKEN, "red")
        return False
    key, other = (API_KEY, AUTH_TOKEN) if token.startswith("sk-ant-") else (AUTH_TOKEN, API_KEY)

    # 2. gateway root
    current_url = old.get(BASE_URL, "")
    if current_url:
        _say(console, texts.SETUP_ASK_URL_KEEP.format(current=display_url(current_url),
                                                       default=envmod.DEFAULT_BASE_URL), "bold")
    else:
        _say(console, texts.SETUP_ASK_URL.format(default=envmod.DEFAULT_BASE_URL), "bold")
    chosen: dict[str, str] = {key: token}  # only what this screen decides; "" = drop it
    answer = _ask(read_line)
    if answer == texts.SETUP_CLEAR:
        chosen[BASE_URL] = ""
    elif answer:  # blank keeps what the file has (nothing there = the official endpoint)
        url, tail = normalize_base_url(answer)
        if tail:
            _say(console, texts.SETUP_URL_STRIPPED.format(tail=tail), "dim")
        if url and not re.match(r"https?://", url, re.IGNORECASE):
            _say(console, texts.SETUP_URL_NO_SCHEME.format(url=display_url(url)), "yellow")
        chosen[BASE_URL] = url

    # 3. model, fanned out to the three model keys
    current_model = old.get(MODEL_KEYS[0], "")
    if current_model:
        _say(console, texts.SETUP_ASK_MODEL_KEEP.format(current=current_model), "bold")
    else:
        _say(console, texts.SETUP_ASK_MODEL, "bold")
    answer = _ask(read_line)
    if answer:  # blank keeps what the file has (nothing there = the default model)
        chosen.update(dict.fromkeys(MODEL_KEYS, "" if answer == texts.SETUP_CLEAR else answer))

    # 4. context window (optional): the handoff thresholds follow it
    _ask_window(console, read_line, chosen, old)

    # The file: our answers first, then every other key already there — minus the credential
    # of the other kind (an API key beats a token, so a stale one would shadow the new one).
    chosen[other] = ""
    values = dict(chosen)
    for k, v in old.items():
        values.setdefault(k, v)
    dropped = [k for k, v in chosen.items() if not v and old.get(k)]

    try:
        written = envmod.write_user_env(values)
    except (OSError, ValueError) as err:
        _say(console, texts.SETUP_SAVE_FAILED.format(path=path, error=envmod.redact(
            str(err), [token])), "bold red")
        return False

    before = {k: os.environ.get(k) for k in chosen}
    for k, v in chosen.items():
        if v:
            os.environ[k] = v
        elif k == other or k in old:  # dropped on purpose: it must not linger here either
            os.environ.pop(k, None)

    _say(console, texts.SETUP_SAVED.format(path=written), "green")
    for k, v in chosen.items():
        if v:
            shown = envmod.mask(v) if envmod.is_secret(k) else display_url(v)
            _say(console, texts.SETUP_SAVED_KEY.format(key=k, value=shown), "dim")
    for k in dropped:
        _say(console, texts.SETUP_SAVED_DROPPED.format(key=k), "dim")
    for k, v in chosen.items():
        where = _shadow(k, v, before[k], old)
        if where and k == other:
            _say(console, texts.SETUP_SHADOWED_STALE.format(key=k, where=where, new=key),
                 "yellow")
        elif where:
            _say(console, texts.SETUP_SHADOWED.format(key=k, where=where), "yellow")
    return True


def _ask_window(console: Console, read_line: ReadLine | None, chosen: dict[str, str],
                old: dict[str, str]) -> None:
    """Blank keeps what the file has (nothing there: the model-name guess, shown for the
    model this screen leaves in place); ``-`` drops it; a number becomes ``FLOWER_WINDOW``."""
    from flower.core.agent import guess_window

    current = old.get(WINDOW, "")
    if current:
        _say(console, texts.SETUP_ASK_WINDOW_KEEP.format(current=current), "bold")
    else:
        model = chosen.get(MODEL_KEYS[0], old.get(MODEL_KEYS[0], os.environ.get(MODEL_KEYS[0],
                                                                                "")))
        guess = guess_window({MODEL_KEYS[0]: model})
        _say(console, texts.SETUP_ASK_WINDOW.format(guess=_tokens(guess)), "bold")
    answer = _ask(read_line)
    if not answer:
        return
    if answer == texts.SETUP_CLEAR:
        chosen[WINDOW] = ""
        return
    window = parse_window(answer)
    if window is None:
        _say(console, texts.SETUP_WINDOW_BAD.format(answer=answer), "yellow")
        return
    chosen[WINDOW] = str(window)


# --- the two gates --------------------------------------------------------------------------------

def _probe_disabled(probe: bool) -> bool:
    return not probe or bool(envmod.effective_env().get("FLOWER_NO_PROBE"))


def _run_probe(console: Console) -> tuple[str, str]:
    _say(console, texts.SETUP_PROBING, "dim")
    verdict, detail = envmod.probe_credentials(PROBE_TIMEOUT, environ=envmod.effective_env())
    return verdict, envmod.redact(" ".join(detail.split()))


def _net_detail(detail: str) -> str:
    return one_line(detail, 80)  # between words, never mid-word


def _say_rejected(console: Console, verdict: str, detail: str) -> None:
    line = texts.SETUP_PROBE_AUTH if verdict == envmod.PROBE_AUTH else texts.SETUP_PROBE_CONFIG
    _say(console, line.format(detail=detail), "bold yellow")


def ensure_credentials(console: Console, *, interactive: bool, probe: bool = True,
                       read_line: ReadLine | None = None) -> bool:
    """Gate 1 (present?) and gate 2 (usable?) before a run. True = go ahead."""
    missing = envmod.check_credentials(envmod.effective_env())
    if missing:
        if not interactive:
            _say(console, missing, "yellow")
            return False
        if not configure(console, reason=texts.SETUP_REASON_FIRST, read_line=read_line):
            return False
    if _probe_disabled(probe) or not interactive:
        return True
    for attempt in (1, 2):
        verdict, detail = _run_probe(console)
        if verdict == envmod.PROBE_NET:
            _say(console, texts.SETUP_PROBE_NET.format(detail=_net_detail(detail)), "dim")
            return True
        if verdict not in (envmod.PROBE_AUTH, envmod.PROBE_CONFIG):
            _say(console, texts.SETUP_PROBE_OK, "green")  # the probe line gets its answer
            return True
        _say_rejected(console, verdict, detail)
        if attempt == 2:
            _say(console, texts.SETUP_GIVE_UP.format(path=envmod.user_env_path()), "red")
            return False
        if not configure(console, reason=texts.SETUP_REASON_AGAIN, read_line=read_line):
            return False
    return False  # pragma: no cover - the loop always returns


def looks_like_credential_error(text: str | None) -> bool:
    """Does a failed step's error read like a bad credential (401, invalid key, …)?"""
    if not text:
        return False
    low = text.lower()
    return any(w in low for w in _CRED_WORDS) or any(r.search(text) for r in _CRED_RES)


def reconfigure_after_failure(console: Console, error: str, *, interactive: bool,
                              read_line: ReadLine | None = None) -> bool:
    """After a failed step: if the error looks like a credential problem and someone is at the
    terminal, show the screen. True when the screen was shown (saved or cancelled); the caller
    exits 1 either way — the run resumes in the same directory next time."""
    if not interactive or not looks_like_credential_error(error):
        return False
    shown = one_line(envmod.redact(error or ""), 120)  # redact first, then cut
    _say(console, texts.SETUP_FAILED_CRED.format(error=shown), "bold yellow")
    if configure(console, reason=texts.SETUP_REASON_AGAIN, read_line=read_line):
        _say(console, texts.SETUP_RERUN, "green")
    return True


def run_setup(console: Console, *, read_line: ReadLine | None = None,
              probe: bool = True) -> ExitCode:
    """The body of ``flower setup``: the screen, then the probe. 0 = saved (also when the probe
    could not get through); 1 = cancelled, or saved but the probe says auth/config."""
    reason = (texts.SETUP_REASON_AGAIN if envmod.user_env_path().exists()
              else texts.SETUP_REASON_FIRST)
    if not configure(console, reason=reason, read_line=read_line):
        return ExitCode.FAILED
    if _probe_disabled(probe):
        return ExitCode.OK
    verdict, detail = _run_probe(console)
    if verdict == envmod.PROBE_NET:
        _say(console, texts.SETUP_PROBE_NET_SAVED.format(detail=_net_detail(detail)), "dim")
        return ExitCode.OK
    if verdict in (envmod.PROBE_AUTH, envmod.PROBE_CONFIG):
        _say_rejected(console, verdict, detail)
        _say(console, texts.SETUP_RETRY_HINT, "red")
        return ExitCode.FAILED
    _say(console, texts.SETUP_PROBE_OK, "green")
    return ExitCode.OK


def describe_config(console: Console) -> None:
    """What ``-v`` prints before starting: endpoint, model and the credential (masked), plus
    any other of the nine known keys that is set."""
    env = envmod.effective_env()
    info = envmod.describe(env)
    creds = [k for k in envmod.REQUIRED_ANY if env.get(k)] or [envmod.REQUIRED_ANY[0]]
    keys = [BASE_URL, MODEL_KEYS[0], *creds]
    keys += [k for k in envmod.KNOWN if k not in keys and env.get(k)]
    _say(console, texts.SETUP_DESCRIBE_HEAD, "dim")
    for key in keys:
        _say(console, texts.SETUP_DESCRIBE_LINE.format(key=key, value=info[key]), "dim")
