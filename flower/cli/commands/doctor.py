"""``flower doctor``: one line per check (``+`` ok, ``!`` works without it, ``x`` fix first)."""

from __future__ import annotations

from flower import texts
from flower.cli.context import Globals, console, dirs, escape
from flower.cli.exitcodes import ExitCode

_MARK = {"ok": ("+", "green"), "warn": ("!", "yellow"), "fail": ("x", "red")}


def doctor(g: Globals) -> ExitCode:
    """Print each check as it is known; exit 1 when any must be fixed before a run."""
    from flower.core.doctor import FAIL, checks

    out = console()
    _, run_dir = dirs(g)
    failed = 0
    width = max(_cells(n) for n in (texts.DOCTOR_CREDS, texts.DOCTOR_CLI, texts.DOCTOR_SANDBOX,
                                 texts.DOCTOR_GIT, texts.DOCTOR_DOCKER, texts.DOCTOR_STORE,
                                 texts.DOCTOR_DISK))
    for check in checks(run_dir, store_url=g.store):
        mark, colour = _MARK[check.state]
        failed += check.state == FAIL
        label = check.name + " " * (width - _cells(check.name))
        out.print(f"[{colour}]{mark}[/] {escape(label)}  {escape(check.line)}", soft_wrap=True)
    if failed:
        out.print(f"[red]{escape(texts.DOCTOR_SUMMARY_FAIL.format(n=failed))}[/]",
                  soft_wrap=True)
        return ExitCode.FAILED
    out.print(f"[green]{escape(texts.DOCTOR_SUMMARY_OK)}[/]", soft_wrap=True)
    return ExitCode.OK


def _cells(text: str) -> int:
    """Terminal columns of ``text`` (a CJK character takes two)."""
    from rich.cells import cell_len

    return cell_len(text)
