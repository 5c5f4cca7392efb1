"""Shared fixtures: a scratch HOME, workspace and run dir, a running fake model server, and
the environment the bundled ``claude`` CLI needs to talk to it with bounded retries/timeouts."""

from __future__ import annotations

import itertools
import os
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from homes import point_home_at

from flower.testing.env import offline_env

if TYPE_CHECKING:
    from flower.testing import FakeServer
    from flower.testing.postgres import TempPostgres

# Variables from the developer's shell that would leak a real endpoint/credential into a test.
_SCRUB = (
    "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL", "CLAUDE_CODE_SUBAGENT_MODEL", "CLAUDE_CODE_EFFORT_LEVEL",
    "CLAUDE_CONFIG_DIR", "FLOWER_ENV", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "CLAUDECODE",
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch HOME with CLAUDE_CONFIG_DIR set explicitly (sdk-notes §0.1: without it the
    store mirror silently drops every entry)."""
    h = tmp_path / "home"
    (h / ".claude").mkdir(parents=True)
    for key in _SCRUB:
        monkeypatch.delenv(key, raising=False)
    point_home_at(monkeypatch, h)
    return h


@pytest.fixture
def workspace(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project folder; the test's cwd is set to it (``runs/`` resolves beside it)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    return ws


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    d = tmp_path / "runs"
    d.mkdir()
    return d


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    """A running scripted fake Anthropic API on a free loopback port (docs/testing.md).
    Unexpected server-side errors (a bug in the fake, a raising callable step or predicate)
    never reach the CLI as tracebacks; they are surfaced here as a warning at teardown."""
    from flower.testing import FakeServer

    with FakeServer() as server:
        yield server
    if server.errors:
        warnings.warn(f"fake server errors: {server.errors}", stacklevel=1)


@pytest.fixture
def cli_env(home: Path, fake, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Environment for the bundled CLI, pointed at ``fake``. Also exported into os.environ so
    code that reads the process environment (Runtime, load_dotenv) sees the same values."""
    # bounded retries/timeouts; tests that exercise retries override CLAUDE_CODE_MAX_RETRIES
    env = offline_env(fake.url, home=str(home), FLOWER_NO_UPDATE="1")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return env


@pytest.fixture
def make_options(workspace: Path, cli_env: dict[str, str]) -> Callable[..., Any]:
    """``make_options(**overrides)`` → ClaudeAgentOptions for the CLI in ``workspace`` talking
    to ``fake`` (no settings files, bypassPermissions, near-empty system prompt)."""
    from flower.testing.sdk import options

    return lambda **overrides: options(workspace, cli_env, **overrides)


# --- a throwaway PostgreSQL server (tests/postgres, tests/distributed) -----------------------

_schemas = itertools.count()


@pytest.fixture(scope="session")
def pg() -> Iterator[TempPostgres]:
    """One scratch PostgreSQL server for the whole session (initdb + pg_ctl on a free port,
    as the ``postgres`` user when root); skips when psycopg or the binaries are missing."""
    from flower.testing.postgres import TempPostgres, find_bin

    pytest.importorskip("psycopg", reason="pip install 'flower[postgres]'")
    if find_bin() is None:
        pytest.skip("no PostgreSQL binaries (initdb/pg_ctl) on PATH or in /usr/lib/postgresql")
    server = TempPostgres()
    server.start()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture
def pg_url(pg: TempPostgres) -> str:
    return pg.url


@pytest.fixture
def schema() -> str:
    """A fresh schema name per test: tests share one server but never each other's rows."""
    return f"t{next(_schemas)}"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything under tests/e2e/ is an end-to-end test (marked, but run by default)."""
    for item in items:
        if f"{os.sep}e2e{os.sep}" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)
