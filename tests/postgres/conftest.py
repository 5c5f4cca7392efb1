"""A throwaway PostgreSQL server for the whole session (initdb + pg_ctl on a free port, as
the ``postgres`` user when root). Tests here skip only when no PostgreSQL binaries exist."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from flower.testing.postgres import TempPostgres, find_bin

pytest.importorskip("psycopg", reason="pip install 'flower[postgres]'")

_schemas = itertools.count()


@pytest.fixture(scope="session")
def pg() -> Iterator[TempPostgres]:
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
