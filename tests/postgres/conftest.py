"""PostgreSQL tests: the throwaway server fixtures (``pg``, ``pg_url``, ``schema``) live in
``tests/conftest.py`` (the distributed tests use them too). Tests here skip only when no
PostgreSQL binaries exist or psycopg is not installed."""

from __future__ import annotations

import pytest

pytest.importorskip("psycopg", reason="pip install 'flower[postgres]'")
