"""Store URLs: which backend a URL names, where the configured one comes from, how to show it.

Precedence: ``Runtime(store=…)`` (a URL string or a store object) → ``flower --store URL``
(the CLI puts it in ``FLOWER_STORE_URL``) → ``FLOWER_STORE_URL`` from the environment or a
``.env`` file → ``<run_dir>/sessions.db``.

A URL is ``postgresql://…`` (or ``postgres://…``) for the PostgreSQL store, or a SQLite file:
``sqlite:///abs/path.db`` or a plain path. Pure string work — no driver is imported here, so
``flower worker --store sqlite:///x.db`` runs without the postgres extra.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

__all__ = ["ENV", "configured_url", "display_url", "is_postgres_url", "sqlite_path"]

ENV = "FLOWER_STORE_URL"
_PG = re.compile(r"^postgres(ql)?://", re.IGNORECASE)


def is_postgres_url(value: object) -> bool:
    return isinstance(value, str) and bool(_PG.match(value.strip()))


def configured_url(explicit: str | None = None, *, dotenv: bool = True,
                   env: Mapping[str, str] | None = None) -> str | None:
    """``explicit``, else ``FLOWER_STORE_URL`` (after reading ``.env`` files), else None.
    ``env``: settings the caller has already merged (the Runtime's), read as they are."""
    if explicit and explicit.strip():
        return explicit.strip()
    if env is not None:
        value = env.get(ENV, "").strip()
    elif dotenv:  # read .env without exporting it: credentials stay out of os.environ
        from flower.config import effective_env

        value = effective_env().get(ENV, "").strip()
    else:
        value = os.environ.get(ENV, "").strip()
    return value or None


def sqlite_path(spec: str) -> Path:
    path = spec[len("sqlite://"):] if spec.lower().startswith("sqlite://") else spec
    return Path(path).expanduser()


def display_url(url: str) -> str:
    """``url`` with any password replaced by ``***`` (safe for messages and logs) — also in
    a ``user:pw@host`` typed without a scheme."""
    if "://" in url:
        masked = re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)
    else:
        masked = re.sub(r"^(\s*[^:/@\s]*:)[^@/\s]*@", r"\1***@", url)
    return re.sub(r"(password=)[^&\s]*", r"\1***", masked, flags=re.IGNORECASE)
