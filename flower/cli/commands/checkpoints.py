"""``flower checkpoints``, ``flower rewind ID``, ``flower diff ID [ID2]``: the project's
snapshots (flower.core.checkpoints) — listed, restored, compared."""

from __future__ import annotations

import json
import shutil
import sys
import time

from flower import texts
from flower.cli.context import Globals, dirs
from flower.cli.exitcodes import ExitCode
from flower.core.checkpoints import Checkpoint, Checkpoints, RunActive
from flower.core.shadow import ShadowError

_NAMES = 5  # file names shown in one line before "…"


def _names(paths: list[str]) -> str:
    return "、".join(paths[:_NAMES]) + ("…" if len(paths) > _NAMES else "")


def _open(g: Globals) -> Checkpoints | None:
    ws, run_dir = dirs(g)
    if shutil.which("git") is None:
        print("x " + texts.CP_NO_GIT, file=sys.stderr)
        return None
    return Checkpoints(run_dir, ws)


def _pick(cps: Checkpoints, ident: str) -> Checkpoint | None:
    try:
        n = int(ident.lstrip("#"))
    except ValueError:
        print("x " + texts.CP_NOT_A_NUMBER.format(id=ident), file=sys.stderr)
        return None
    found = cps.find(n)
    if found is None:
        print("x " + texts.CP_UNKNOWN.format(id=n), file=sys.stderr)
    return found


def _when(t: float) -> str:
    return time.strftime("%m-%d %H:%M:%S", time.localtime(t))


def show_checkpoints(g: Globals, *, as_json: bool) -> ExitCode:
    """List the checkpoints oldest first (``--json``: one array of objects)."""
    cps = _open(g)
    if cps is None:
        return ExitCode.FAILED
    try:
        listed = cps.list()
    except ShadowError as exc:
        print("x " + texts.CP_FAILED.format(error=exc), file=sys.stderr)
        return ExitCode.FAILED
    if as_json:
        print(json.dumps([cp.to_json() for cp in listed], ensure_ascii=False, indent=2))
        return ExitCode.OK
    if not listed:
        print(texts.CP_NONE.format(ws=cps.workspace))
        return ExitCode.OK
    print(texts.CP_HEADER.format(ws=cps.workspace))
    mb = round(cps.shadow.max_bytes / 1024 / 1024, 1)
    for cp in listed:
        print(texts.CP_ROW.format(id=cp.id, when=_when(cp.time), kind=cp.kind, step=cp.step,
                                  added=cp.added, changed=cp.changed, removed=cp.removed))
        if cp.skipped:
            print(texts.CP_ROW_SKIPPED.format(n=len(cp.skipped), names=_names(cp.skipped),
                                              mb=f"{mb:g}"))
        if cp.rewind.get("to"):
            print(texts.CP_ROW_REWIND.format(to=cp.rewind["to"]))
    print(texts.CP_HINT)
    return ExitCode.OK


def rewind(g: Globals, ident: str, *, dry_run: bool) -> ExitCode:
    """Restore the workspace to checkpoint ``ident`` (after a ``before-rewind`` snapshot),
    and let the lineage follow: the steps after it run again next time."""
    from flower.core.lineage import Lineage

    cps = _open(g)
    if cps is None:
        return ExitCode.FAILED
    target = _pick(cps, ident)
    if target is None:
        return ExitCode.USAGE
    lineage = Lineage.open(cps.run_dir, cps.workspace) if not dry_run else \
        Lineage.peek(cps.run_dir, cps.workspace)
    try:
        done, before, forgot = cps.rewind(target, dry_run=dry_run, lineage=lineage)
    except RunActive:
        print("x " + texts.CP_RUN_ACTIVE.format(run_dir=cps.run_dir), file=sys.stderr)
        return ExitCode.FAILED
    except (ShadowError, OSError) as exc:
        print("x " + texts.CP_FAILED.format(error=exc), file=sys.stderr)
        return ExitCode.FAILED
    counts = {"id": target.id, "kind": target.kind, "step": target.step,
              "written": len(done.written), "created": len(done.created),
              "removed": len(done.removed)}
    if dry_run:
        print(texts.REWIND_PLAN.format(**counts) + texts.REWIND_DRY)
        for mark, paths in (("~", done.written), ("+", done.created), ("-", done.removed)):
            for path in paths:
                print(f"  {mark} {path}")
    else:
        print(texts.REWIND_DONE.format(**counts))
        if before is not None:
            print(texts.REWIND_UNDO.format(before=before.id))
    if done.kept:
        print(texts.REWIND_KEPT.format(n=len(done.kept), names=_names(done.kept)))
    if forgot["steps"]:
        print(texts.REWIND_STEPS.format(steps="、".join(forgot["steps"])))
    if forgot.get("archive"):
        print(texts.REWIND_DOCS.format(path=forgot["archive"]))
    return ExitCode.OK


def diff(g: Globals, old: str, new: str | None, *, stat: bool) -> ExitCode:
    """``git diff`` between two checkpoints, or a checkpoint and the workspace now."""
    cps = _open(g)
    if cps is None:
        return ExitCode.FAILED
    a = _pick(cps, old)
    b = _pick(cps, new) if new is not None else None
    if a is None or (new is not None and b is None):
        return ExitCode.USAGE
    try:
        sys.stdout.write(cps.diff(a, b, stat=stat))
    except (ShadowError, OSError) as exc:
        print("x " + texts.CP_FAILED.format(error=exc), file=sys.stderr)
        return ExitCode.FAILED
    return ExitCode.OK
