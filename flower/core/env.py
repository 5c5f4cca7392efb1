"""Credentials: check them, describe them masked, probe them against the gateway, save them.

Where settings come from (the process environment plus ``.env`` files) is ``flower.config``;
its readers are re-exported here because scripts import them from ``flower.core.env``.
Secrets are only ever printed through :func:`mask` / :func:`redact`. No SDK import here.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from flower import config, texts
from flower.config import (  # re-exported: flower.core.env is where scripts import them
    KNOWN,
    REQUIRED_ANY,
    claude_settings_paths,
    effective_env,
    load_dotenv,
    parse_dotenv,
    source_env_path,
    user_env_path,
)
from flower.core.paths import atomic_write
from flower.core.resilience import in_words, misconfigured
from flower.errors import one_line
from flower.stores.url import display_url

__all__ = ["KNOWN", "PROBE_AUTH", "PROBE_CONFIG", "PROBE_MAX_TOKENS", "PROBE_NET", "PROBE_OK",
           "REQUIRED_ANY", "ca_bundle", "check_credentials", "claude_settings_paths", "describe",
           "effective_env", "load_dotenv", "mask", "parse_dotenv", "probe_credentials",
           "redact", "redact_keys", "secret_values", "source_env_path", "user_env_path",
           "write_user_env"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
# Used by the probe when no model is configured; an alias the official API serves.
DEFAULT_PROBE_MODEL = "claude-haiku-4-5"
ANTHROPIC_VERSION = "2023-06-01"
# The probe's verdicts (the first item of what probe_credentials returns), under the names the
# original flower gives them: the credential works (or it cannot tell), it is refused, the
# endpoint or model is wrong, the endpoint cannot be reached.
PROBE_OK = "ok"
PROBE_AUTH = "auth"
PROBE_CONFIG = "config"
PROBE_NET = "net"
# max_tokens of the probe request: 16, not 1 — a forced-thinking model cannot fit its thinking
# into 1 token and the server stalls for ~30 s.
PROBE_MAX_TOKENS = 16
_SECRET_RE = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)


# --- checking and describing --------------------------------------------------------------

def _places() -> list[str]:
    flower_env = os.environ.get("FLOWER_ENV")
    places = [
        texts.CRED_PLACE_PROCESS,
        texts.CRED_PLACE_FLOWER_ENV.format(path=flower_env) if flower_env
        else texts.CRED_PLACE_FLOWER_ENV_UNSET,
        texts.CRED_PLACE_CWD.format(path=Path.cwd() / ".env"),
        texts.CRED_PLACE_USER.format(path=user_env_path()),
    ]
    repo = config.source_env_path()  # looked up at call time (tests point it elsewhere)
    if repo is not None:
        places.append(texts.CRED_PLACE_REPO.format(path=repo))
    places.append(texts.CRED_PLACE_CLAUDE.format(path=claude_settings_paths()[0]))
    return places


def check_credentials(environ: Mapping[str, str] | None = None) -> str | None:
    """None when a credential is set (non-empty) in ``environ`` (default: ``os.environ``;
    pass :func:`effective_env` to count ``.env`` files without exporting them); else a
    message a person can act on."""
    env = os.environ if environ is None else environ
    if any(env.get(k) for k in REQUIRED_ANY):
        return None
    places = "\n".join(texts.CRED_PLACE.format(n=i, what=w)
                       for i, w in enumerate(_places(), start=1))
    msg = texts.CRED_MISSING.format(places=places, user_env=user_env_path())
    empty = [k for k in REQUIRED_ANY if k in env]
    notes = [texts.CRED_EMPTY_KEY.format(key=k) for k in empty]
    return "\n".join([msg, *notes])


def is_secret(key: str) -> bool:
    return bool(_SECRET_RE.search(key))


def mask(value: str | None) -> str:
    """First 4 characters and the length; short values show only the length."""
    if not value:
        return ""
    if len(value) < 12:
        return texts.MASKED_SHORT.format(n=len(value))
    return texts.MASKED.format(head=value[:4], n=len(value))


def secret_values(environ: Mapping[str, str]) -> list[str]:
    """The values of secret-looking variables in ``environ``, longest first."""
    vals = {v for k, v in environ.items() if is_secret(k) and v and len(v) >= 6}
    return sorted(vals, key=len, reverse=True)


def _forms(value: str) -> list[tuple[str, str]]:
    """``(form, its mask)`` for each way ``value`` can appear in text: as is, and escaped
    inside a JSON string (with and without ``ensure_ascii``) — manifest rows and event
    texts often carry JSON, where a ``"``, ``\\`` or non-ASCII secret is not verbatim."""
    masked = mask(value)
    forms = [(value, masked)]
    for ascii_only in (False, True):
        escaped = json.dumps(value, ensure_ascii=ascii_only)[1:-1]
        if all(escaped != f for f, _ in forms):
            forms.append((escaped, json.dumps(masked, ensure_ascii=ascii_only)[1:-1]))
    return forms


def redact(text: str, secrets: Iterable[str] | None = None) -> str:
    """Replace every secret value (default: the secret-looking env vars) with its mask —
    also where it appears JSON-escaped."""
    if secrets is None:
        values = secret_values(os.environ)
    else:
        values = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)
    for value in values:
        for form, masked in _forms(value):
            if form in text:
                text = text.replace(form, masked)
    return text


#: What an Anthropic API key looks like (``sk-ant-api03-…``, ``sk-ant-admin01-…``).
ANTHROPIC_KEY = re.compile(r"sk-ant-[A-Za-z0-9_-]{8,}")


def redact_keys(text: str, secrets: Iterable[str] = ()) -> str:
    """:func:`redact` with ``secrets``, then every Anthropic-shaped key masked too — for
    text flower did not write (a tool's output can show a key flower never resolved)."""
    text = redact(text, secrets)
    return ANTHROPIC_KEY.sub(lambda m: mask(m.group(0)), text)


def describe(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The effective ``KNOWN`` settings for ``-v``, secrets masked — and a password inside
    a URL (``http://user:pw@gateway``), with the rule store URLs are shown by."""
    env = os.environ if environ is None else environ
    out: dict[str, str] = {}
    for key in KNOWN:
        value = env.get(key)
        if key == "ANTHROPIC_BASE_URL" and not value:
            out[key] = texts.DESCRIBE_DEFAULT.format(value=DEFAULT_BASE_URL)
        elif value is None:
            out[key] = texts.DESCRIBE_UNSET
        else:
            out[key] = mask(value) if is_secret(key) else display_url(value)
    return out


# --- the credential probe -----------------------------------------------------------------

_NOT_FOUND_WORDS = ("not_found", "not found", "does not exist", "unknown model",
                    "no such model", "invalid model")


def probe_model(environ: Mapping[str, str] | None = None) -> str:
    """The model the probe asks for; the CLI's ``[1m]``-style suffix is not an API name."""
    env = os.environ if environ is None else environ
    for key in ("ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL"):
        name = re.sub(r"\[[^\]]*\]$", "", env.get(key, "").strip())
        if name:
            return name
    return DEFAULT_PROBE_MODEL


def _verdict(status: int, body: str) -> str:
    if status < 400:
        return PROBE_OK
    if status in (401, 403):
        return PROBE_AUTH
    if status == 404:
        return PROBE_CONFIG
    if status == 400 and any(w in body.lower() for w in _NOT_FOUND_WORDS):
        return PROBE_CONFIG
    if status >= 500:
        return PROBE_NET
    return PROBE_OK  # 429 and other undecidable 4xx: the credential itself was accepted


def ca_bundle(environ: Mapping[str, str] | None = None) -> str | None:
    """The CA bundle HTTPS to the gateway must trust, or None for the system's.

    Behind a TLS-intercepting proxy the probe needs the proxy's CA. It is named the way pip,
    requests and curl users already name it: ``REQUESTS_CA_BUNDLE``, else ``SSL_CERT_FILE``
    (install.sh hands the same choice to pip). Read from the merged settings, so a line in
    ``~/.config/flower/.env`` works too — OpenSSL itself sees only the process environment.
    """
    env = os.environ if environ is None else environ
    return env.get("REQUESTS_CA_BUNDLE") or env.get("SSL_CERT_FILE") or None


def _tls_context(environ: Mapping[str, str]) -> tuple[Any, str]:
    """``(ssl context or None, error detail)`` for :func:`ca_bundle`; the bundle replaces the
    system store, as it does for OpenSSL, requests and curl."""
    import ssl

    cafile = ca_bundle(environ)
    if not cafile:
        return None, ""
    if not Path(cafile).is_file():
        return None, texts.PROBE_CA_MISSING.format(path=cafile)
    try:
        return ssl.create_default_context(cafile=cafile), ""
    except (ssl.SSLError, OSError) as err:
        return None, texts.PROBE_CA_BAD.format(path=cafile, reason=one_line(err))


def probe_credentials(timeout: float = 20.0,
                      environ: Mapping[str, str] | None = None) -> tuple[str, str]:
    """One real ``POST /v1/messages`` (max_tokens=``PROBE_MAX_TOKENS``) → ``(verdict, detail)``.

    verdict is ``PROBE_AUTH`` | ``PROBE_CONFIG`` | ``PROBE_NET`` | ``PROBE_OK``; unclear cases
    are ``PROBE_OK`` so a flaky probe never blocks a run. Blocking (stdlib only);
    async callers run it in a thread. ``detail`` never contains the unmasked secret.
    """
    import urllib.error  # lazy: only `flower setup`/start-up probes need HTTP
    import urllib.request
    from http.client import HTTPException, InvalidURL

    env = os.environ if environ is None else environ
    api_key = env.get("ANTHROPIC_API_KEY", "")
    token = env.get("ANTHROPIC_AUTH_TOKEN", "")
    if not (api_key or token):
        return PROBE_AUTH, texts.PROBE_NO_CREDS
    secrets = [api_key, token]
    base = (env.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL).strip().rstrip("/")
    url = base + "/v1/messages"
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError for a non-numeric or out-of-range port
        ok_url = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        ok_url = False
    shown = display_url(base)  # a gateway password never reaches a message
    if not ok_url:
        return PROBE_CONFIG, redact(texts.PROBE_BAD_URL.format(url=shown), secrets)
    headers = {"content-type": "application/json", "anthropic-version": ANTHROPIC_VERSION,
               "user-agent": "flower-probe"}
    if api_key:
        headers["x-api-key"] = api_key
    else:
        headers["authorization"] = f"Bearer {token}"
    body = json.dumps({"model": probe_model(env), "max_tokens": PROBE_MAX_TOKENS,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    context = None
    if parts.scheme == "https":
        context, bad_ca = _tls_context(env)
        if bad_ca:
            return PROBE_CONFIG, redact(bad_ca, secrets)
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as resp:
            status = resp.status
            text = resp.read(2000).decode("utf-8", "replace")
    except urllib.error.HTTPError as err:
        status = err.code
        try:
            text = err.read(2000).decode("utf-8", "replace")
        except (OSError, HTTPException):
            text = ""
    except InvalidURL as err:
        return PROBE_CONFIG, redact(texts.PROBE_BAD_URL.format(url=f"{shown} ({err})"), secrets)
    except (urllib.error.URLError, OSError, HTTPException) as err:
        reason = getattr(err, "reason", None) or err
        # nothing listening on this machine, or a name that cannot resolve while others do,
        # is a wrong setting, not an outage: the same rule the Runtime stops a run by
        wrong = misconfigured(base) if isinstance(reason, OSError) else None
        if wrong is not None:
            line = texts.PROBE_REFUSED if wrong == "refused" else texts.PROBE_NO_HOST
            return PROBE_CONFIG, redact(line.format(url=shown), secrets)
        detail = texts.PROBE_NET.format(url=display_url(url), reason=in_words(reason))
        return PROBE_NET, redact(detail, secrets)
    except ValueError as err:  # e.g. a URL urllib cannot even parse
        return PROBE_CONFIG, redact(texts.PROBE_BAD_URL.format(url=f"{shown} ({err})"), secrets)
    verdict = _verdict(status, text)
    snippet = one_line(text, 160)
    return verdict, redact(texts.PROBE_HTTP.format(status=status, body=snippet), secrets)


# --- writing the user file ----------------------------------------------------------------

def write_user_env(values: Mapping[str, str]) -> Path:
    """Replace ``user_env_path()`` atomically with mode 0600; empty values are skipped.

    A crash mid-write leaves the old file intact (temp file + ``os.replace``), and the file
    is never readable by others, not even for a moment (created 0600, not chmod-ed later).
    """
    lines = [texts.USER_ENV_HEADER]
    for key, value in values.items():
        if not value:
            continue
        if not key or any(c in key for c in "=\n\r#") or any(c in value for c in "\n\r\0"):
            raise ValueError(f"cannot write {key!r} to a .env file")
        lines.append(f"{key}={value}")
    path = user_env_path()
    atomic_write(path, "\n".join(lines) + "\n", mode=0o600)
    return path


def project_env_lines(workspace: Path) -> list[str]:
    """Before agents run in ``workspace``: note its ``.env`` (config.mark_env) and return
    the lines to tell the user — a project ``.env`` not read because agents changed it, a
    command setting ignored in it."""
    lines = []
    skipped = config.untrusted_env()
    if skipped is not None:
        lines.append(texts.ENV_UNTRUSTED.format(path=skipped))
    project = Path.cwd() / ".env"
    if skipped is None and any(k in config.USER_ONLY for k, _ in config.read_dotenv(project)):
        lines.append(texts.ENV_USER_ONLY.format(path=project, keys="、".join(config.USER_ONLY),
                                                user=config.user_env_path()))
    config.mark_env(workspace, agents_done=False)
    return lines
