"""``module:attr`` or ``path/to/file.py:attr`` → the Workflow it names.

Shared by ``flower run`` (checked in the terminal, so a typo fails there) and by a Temporal
worker (which rebuilds the same workflow from the same target string).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from flower import texts
from flower.errors import TargetError, one_line
from flower.workflow.base import Workflow

__all__ = ["TargetError", "load_target"]


def load_target(target: str, *, cwd: Path | None = None) -> Workflow:
    """The Workflow ``target`` names (called once if it is a callable). Raises
    ``TargetError`` with the line to show."""
    where, sep, attr = target.rpartition(":")
    if not sep or not where or not attr:
        raise TargetError(texts.RUN_NEED_COLON.format(target=target))
    cwd = cwd or Path.cwd()
    if where.endswith(".py") or "/" in where or "\\" in where:
        path = (cwd / where).resolve()
        if not path.is_file():
            raise TargetError(texts.RUN_NO_FILE.format(path=where, cwd=cwd))
        module = _import_file(path)
    else:
        if str(cwd) not in sys.path:
            sys.path.insert(0, str(cwd))
        try:
            module = importlib.import_module(where)
        except Exception as exc:  # the user's module: anything can happen at import
            raise TargetError(texts.RUN_IMPORT.format(module=where, error=one_line(exc))) from exc
    if not hasattr(module, attr):
        raise TargetError(texts.RUN_NO_ATTR.format(module=where, attr=attr))
    value = getattr(module, attr)
    if callable(value) and not isinstance(value, Workflow):
        try:
            value = value()
        except Exception as exc:
            raise TargetError(texts.RUN_CALL.format(target=target, error=one_line(exc))) from exc
    if not isinstance(value, Workflow):
        raise TargetError(texts.RUN_NOT_WORKFLOW.format(target=target,
                                                        kind=type(value).__name__))
    return value


def _import_file(path: Path) -> Any:
    name = f"_flower_target_{path.stem}"
    sys.path.insert(0, str(path.parent))  # so the file can import its neighbours
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TargetError(texts.RUN_IMPORT.format(module=path, error="not a Python file"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise TargetError(texts.RUN_IMPORT.format(module=path.name, error=one_line(exc))) from exc
    return module
