"""What the command line does with an exception that reached it: one line, never a trace.

A ``FlowerError`` or an ``OSError`` is something the person can act on (a bad target, a
missing credential, a folder the disk refuses): its message is printed as one red line.
Anything else is a bug in flower. Printing it as a tidy message would hide it — nobody
reports a line that looks like advice — and a raw traceback buries the run's own output. So
the traceback goes to ``<run_dir>/crash-<time>-<pid>.log`` (mode 600: it can quote the
person's paths and asks; known secret values are masked), or to the temp dir when the run
dir does not exist or refuses the file, and the terminal gets one line saying it is a bug
and naming that file.

Imported only when something went wrong, so it costs ``flower --help`` nothing.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

from flower import __version__, texts
from flower.cli.context import fail
from flower.cli.exitcodes import ExitCode
from flower.errors import FlowerError, one_line

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["expected", "handle", "write_crash"]

_WHOLE = 20_000  # characters of a message kept before masking (then cut to one line)


def expected(exc: BaseException) -> BaseException | None:
    """The error to show as a plain line: ``exc`` if it is a ``FlowerError`` or an
    ``OSError``; for an exception group (anyio wraps what a task raised) the first member,
    when every member is one of those. ``None``: ``exc`` is a bug."""
    if isinstance(exc, (FlowerError, OSError)):
        return exc
    members = getattr(exc, "exceptions", None)  # an exception group (or its 3.10 backport)
    if isinstance(members, tuple) and members:
        found = [expected(inner) for inner in members]
        if all(f is not None for f in found):
            return found[0]
    return None


def handle(out: Console, exc: BaseException, run_dir: Path | None) -> ExitCode:
    """Print ``exc`` as one line — its own message when expected, else the bug line with
    the crash file — and return the exit code (always ``FAILED``)."""
    shown = expected(exc)
    if shown is not None:
        # a FlowerError's message is written to be read as it is; an OSError gets its type
        message = str(shown).strip() if isinstance(shown, FlowerError) else ""
        return fail(out, message or one_line(shown))
    error = one_line(_masked(one_line(exc, _WHOLE)))  # mask first: a cut secret is not found
    path, why = write_crash(exc, run_dir)
    if path is not None:
        return fail(out, texts.BUG.format(error=error, path=path))
    fail(out, texts.BUG_NO_FILE.format(error=error, why=why))
    sys.stderr.write(report(exc))  # nowhere else to keep it: better seen than lost
    return ExitCode.FAILED


def write_crash(exc: BaseException, run_dir: Path | None) -> tuple[Path | None, str]:
    """Write the report of ``exc`` to a new file, mode 600; ``(path, "")``, or ``(None,
    why)`` when neither the run dir nor the temp dir took it. Never raises."""
    text = report(exc)
    stamp = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    places = [(run_dir, "crash-")] if run_dir is not None and run_dir.is_dir() else []
    places.append((Path(tempfile.gettempdir()), "flower-crash-"))
    why = ""
    for folder, prefix in places:
        path = folder / f"{prefix}{stamp}.log"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as err:
            why = one_line(err)
            continue
        try:
            with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as fh:
                os.fchmod(fh.fileno(), 0o600)  # exact, whatever the umask
                fh.write(text)
        except OSError as err:  # disk full: do not leave half a report behind
            why = one_line(err)
            path.unlink(missing_ok=True)
            continue
        return path, ""
    return None, why


def report(exc: BaseException) -> str:
    """The crash file's text: what ran, where, and the full traceback, secrets masked."""
    head = [f"flower {__version__} crashed at {time.strftime('%Y-%m-%d %H:%M:%S %z')}",
            f"python {platform.python_version()} on {platform.platform()}",
            f"command: {' '.join(_shown_arg(a) for a in sys.argv)}",
            f"cwd: {_cwd()}"]
    trace = "".join(traceback.format_exception(exc))
    return _masked("\n".join(head) + "\n\n" + trace)


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:  # the folder was deleted under the process
        return "?"


def _shown_arg(arg: str) -> str:
    if "://" not in arg:
        return arg
    try:
        from flower.stores.url import display_url

        return display_url(arg)  # --store postgresql://user:password@… → password masked
    except Exception:
        return "<url>"


def _masked(text: str) -> str:
    """``text`` with every secret value flower knows of (environment and ``.env`` files)
    masked; unchanged if those cannot be read (a crash report must still be written)."""
    try:
        from flower.core.env import effective_env, redact, secret_values

        return redact(text, secret_values(effective_env()))
    except Exception:
        return text
