"""Open the store a URL names, and wrap it in the load layers a Runtime reads through.

Whatever the backend, Runtime gets it with the load layers (trim/expire/prune) around it.

Resuming on another machine or folder: the SDK loads a resumed session under the project
key of the CURRENT workspace path, so a workspace copy at another path does not see it.
The rule: when a session is asked for (``Runtime.has_session`` / a ``resume``) and this
project key does not hold it, a shared store that holds it under exactly one other
project key *adopts* it — copies it under this key (the original stays) — and the resume
goes ahead. Session ids are uuids, so the match is unambiguous; two owners mean no
adoption (and a fresh session, as without the store).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flower.errors import StoreUnavailable
from flower.stores.url import configured_url, is_postgres_url, sqlite_path

__all__ = ["backend_for", "layered_store"]


def backend_for(spec: str) -> Any:
    """The bare store for a URL or path (no layers): Postgres or SQLite."""
    if is_postgres_url(spec):
        try:
            from flower.stores.postgres import PostgresSessionStore
        except ImportError as exc:
            from flower import texts

            raise StoreUnavailable(texts.STORE_NO_DRIVER) from exc
        return PostgresSessionStore(spec)
    from flower.stores.sqlite import SqliteSessionStore

    return SqliteSessionStore(sqlite_path(spec))


def layered_store(store: Any, *, run_dir: Path, workspace: Path, policy: Any, prune: Any,
                  ephemeral: Any, env: Mapping[str, str] | None = None) -> Any:
    """Runtime's store: the layers around whatever ``store`` (or the environment) names.

    ``store`` None and no ``FLOWER_STORE_URL``: ``PruningSessionStore`` on
    ``<run_dir>/sessions.db``, exactly as before. A store object that already has the
    layers (``layers`` attribute) is used as given.
    """
    from flower.stores.layered import LayeredSessionStore, PruningSessionStore

    if store is None:
        store = configured_url(env=env)  # the environment, or a .env file (not exported)
    if store is None:
        return PruningSessionStore(run_dir / "sessions.db", workspace=workspace, policy=policy,
                                   prune=prune, ephemeral=ephemeral)
    if isinstance(store, (str, os.PathLike)):
        spec = os.fspath(store)
        if not is_postgres_url(spec):
            return PruningSessionStore(sqlite_path(spec), workspace=workspace, policy=policy,
                                       prune=prune, ephemeral=ephemeral)
        store = backend_for(spec)
    if hasattr(store, "layers"):
        return store
    return LayeredSessionStore(store, workspace, policy=policy, prune=prune,
                               ephemeral=ephemeral)
