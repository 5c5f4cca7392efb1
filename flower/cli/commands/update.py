"""``flower update [--check]``: install a newer flower the way ``install.sh`` installed it."""

from __future__ import annotations

import subprocess

from flower import __version__, texts
from flower.cli.context import console, escape, fail
from flower.cli.exitcodes import ExitCode


def update(*, check_only: bool) -> ExitCode:
    """``--check`` only reports (exit 0 whatever it finds); otherwise installs what is newer.
    Never throttled: the 24 h limit is for the unasked check at the end of a run."""
    from flower.core import update as up

    out = console()
    checkout = up.source_checkout()
    if checkout is not None:
        out.print(escape(texts.UPDATE_CHECKOUT.format(path=checkout)), highlight=False)
        return ExitCode.OK if check_only else ExitCode.FAILED
    install = up.load_install()
    if install is None:
        out.print(escape(texts.UPDATE_NO_RECORD.format(path=up.record_paths()[-1])),
                  highlight=False)
        return ExitCode.OK if check_only else ExitCode.FAILED
    try:
        latest, installed = up.probe(install, timeout=30.0)
    except up.UpdateError as exc:
        out.print(escape(texts.UPDATE_UNREACHABLE.format(source=install.source, why=exc)),
                  highlight=False)
        return ExitCode.OK if check_only else ExitCode.FAILED
    current = up.short(installed) if installed else __version__
    if latest == installed:
        out.print(escape(texts.UPDATE_LATEST.format(current=current, source=install.source)),
                  highlight=False)
        return ExitCode.OK
    if check_only:
        out.print(escape(texts.UPDATE_NOTICE.format(new=up.short(latest))), highlight=False)
        return ExitCode.OK
    try:
        command = up.installer(install)
    except up.UpdateError:
        return fail(out, texts.UPDATE_UNKNOWN_METHOD.format(method=install.method))
    shown = " ".join(command)
    out.print(escape(texts.UPDATE_RUNNING.format(command=shown)), highlight=False)
    try:
        code = subprocess.run(command).returncode
    except OSError as exc:
        return fail(out, f"{texts.UPDATE_FAILED.format(code='-', command=shown)} ({exc})")
    if code != 0:
        return fail(out, texts.UPDATE_FAILED.format(code=code, command=shown))
    if len(latest) == 40:
        install.sha = latest
    else:
        install.version = latest
    try:
        install.save()
    except OSError:
        pass  # installed all the same; the next check just reports it once more
    out.print(escape(texts.UPDATE_DONE.format(current=up.short(latest))), highlight=False)
    return ExitCode.OK
