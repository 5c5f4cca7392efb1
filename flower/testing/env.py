"""The environment the bundled ``claude`` CLI needs to talk to a ``FakeServer``, offline.

One definition shared by the test fixtures, the fixture recorder and ``flower demo``: a fake
key, no non-essential traffic, and bounded retries and timeouts, so nothing can wait minutes
on the CLI's own retry loop (1 + 10 attempts over ~190 s) or a stalled stream.

The mapping is layered over the caller's environment (the SDK starts the CLI with
``os.environ`` plus it), so a variable it does not set passes through: a real
``ANTHROPIC_AUTH_TOKEN`` or ``ANTHROPIC_CUSTOM_HEADERS`` would be sent to the fake along with
the test key. :func:`foreign_keys` names what to remove first.
"""

from __future__ import annotations

from collections.abc import Iterable

TEST_KEY = "sk-test-not-a-real-key-0000"

BOUNDED = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "CLAUDE_CODE_MAX_RETRIES": "0",
    "CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS": "10000",
    "API_TIMEOUT_MS": "10000",
    "IS_SANDBOX": "1",  # bypassPermissions refuses to run as root without it
    "DISABLE_AUTOUPDATER": "1",
}

#: Prefixes of the variables the CLI reads its endpoint, credentials and provider from
#: (``ANTHROPIC_*``, ``CLAUDE_CODE_OAUTH_TOKEN``, ``CLAUDE_CODE_USE_BEDROCK`` …).
CLI_PREFIXES = ("ANTHROPIC_", "CLAUDE")


def foreign_keys(keys: Iterable[str]) -> list[str]:
    """The keys among ``keys`` an offline CLI must not inherit: every ``ANTHROPIC_*`` and
    ``CLAUDE*`` variable, whichever credential, header or provider switch it carries."""
    return [k for k in keys if k.startswith(CLI_PREFIXES)]


def offline_env(base_url: str | None = None, *, home: str | None = None,
                config_dir: str | None = None, api_key: str = TEST_KEY,
                **overrides: str) -> dict[str, str]:
    """Env for the CLI pointed at ``base_url``. ``config_dir`` defaults to ``<home>/.claude``
    when ``home`` is given: the SDK's session mirror looks there, and a CLI writing under
    another home would lose every frame."""
    env = {"ANTHROPIC_API_KEY": api_key, **BOUNDED}
    if base_url:
        env["ANTHROPIC_BASE_URL"] = base_url
    if home:
        env["HOME"] = home
        env["CLAUDE_CONFIG_DIR"] = config_dir or f"{home}/.claude"
    elif config_dir:
        env["CLAUDE_CONFIG_DIR"] = config_dir
    env.update(overrides)
    return env
