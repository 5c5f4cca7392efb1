"""``flower store copy SRC DST``: one line saying what was copied, or why not."""

from __future__ import annotations

from flower import texts
from flower.cli.context import console, escape, fail
from flower.cli.exitcodes import ExitCode
from flower.errors import FlowerError


def copy_store(src: str, dst: str) -> ExitCode:
    """Copy every session from ``src`` to ``dst`` and verify it; exit 0, or 1 with the reason."""
    from flower.stores.transfer import copy_sessions
    from flower.stores.url import display_url, is_postgres_url

    out = console()

    def shown(spec: str) -> str:
        return display_url(spec) if is_postgres_url(spec) else spec

    try:
        result = copy_sessions(src, dst)
    except (FlowerError, OSError) as exc:  # CopyError, an unreachable or corrupt store
        return fail(out, str(exc))
    out.print(escape(texts.STORE_COPY_DONE.format(
        sessions=result.sessions, transcripts=result.transcripts, entries=result.entries,
        src=shown(src), dst=shown(dst))), soft_wrap=True)
    return ExitCode.OK
