"""The remote run book: a run's lineage and manifest rows, mirrored into a shared store.

``lineage.json`` and ``manifest.json`` stay files in the run dir, unchanged and
authoritative on this machine. A run whose session store is shared (PostgreSQL) also
records them in the store under a *run name*, so another machine can wake a run it never
saw: ``flower --store URL --run NAME`` in an empty folder finds the lineage there and
resumes (the sessions are adopted under the new workspace path, see ``select.py``).

The run name is ``--run NAME`` (the CLI puts it in ``FLOWER_RUN``), else ``FLOWER_RUN``,
else the workspace folder's name.

A store without a book (SQLite) gives ``None``: nothing is mirrored, nothing is paid.
Every mirror write is best effort — it never raises and never blocks the run; a failure
is one warning and the next write carries the whole state again.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

__all__ = ["RUN_ENV", "RemoteBook", "configured_book", "remote_book", "run_name"]

log = logging.getLogger("flower.stores")

RUN_ENV = "FLOWER_RUN"


class RemoteBook(Protocol):
    """What Lineage and Manifest need from a shared store."""

    name: str

    def lineage(self) -> dict[str, Any] | None:
        """The run's lineage document (``{"workspace", "woke", "steps"}``) or None.
        May raise when the store cannot be read (callers treat that as "none")."""

    def put_lineage(self, doc: dict[str, Any]) -> None:
        """Record the whole lineage document (latest wins). Never raises, never blocks."""

    def put_manifest(self, run_id: str, rows: list[dict[str, Any]]) -> None:
        """Replace the rows of ``run_id`` under this run name. Never raises, never blocks."""


def run_name(workspace: str | Path, explicit: str | None = None) -> str:
    """``explicit``, else ``FLOWER_RUN``, else the workspace folder's name."""
    for value in (explicit, os.environ.get(RUN_ENV)):
        if value and value.strip():
            return value.strip()
    return Path(workspace).expanduser().resolve().name or "run"


def remote_book(store: Any, name: str) -> RemoteBook | None:
    """``store``'s book for run ``name``; None for a store without one (SQLite) or when
    it cannot be made (a warning: continuity across machines is a bonus)."""
    make = getattr(store, "book", None)
    if make is None:
        return None
    try:
        return make(name)
    except Exception as exc:
        log.warning("flower: no run book in the session store: %s", exc)
        return None


@contextlib.contextmanager
def configured_book(workspace: str | Path, run: str | None = None) -> Iterator[RemoteBook | None]:
    """The book of the configured store (``FLOWER_STORE_URL``) for code that runs before
    any Runtime exists (``--new`` resets the remote lineage too); None without PostgreSQL
    or when the server cannot be reached. Closed (flushed) on exit."""
    from flower.stores.url import configured_url, is_postgres_url

    url = configured_url()
    if not is_postgres_url(url):
        yield None
        return
    try:
        from flower.stores.postgres import PostgresSessionStore

        store = PostgresSessionStore(url or "")
    except Exception as exc:
        log.warning("flower: no run book in the session store: %s", exc)
        yield None
        return
    try:
        yield remote_book(store, run_name(workspace, run))
    finally:
        store.close()
