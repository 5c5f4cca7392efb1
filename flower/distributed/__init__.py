"""Distributed runs on Temporal (``pip install 'flower[temporal]'``; docs/distributed.md).

A flower ``Workflow`` runs as a Temporal workflow, one activity per step, on any number of
``flower worker`` processes sharing one session store. Importing this package is cheap:
temporalio is imported by the submodules only (``workflow``, ``activities``, ``worker``,
``client``), so ``import flower`` never loads it.
"""

from __future__ import annotations

from flower._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "FlowerRun": "flower.distributed.workflow",
    "run_worker": "flower.distributed.temporal_worker",
    "build_worker": "flower.distributed.temporal_worker",
    "connect": "flower.distributed.temporal_worker",
    "DEFAULT_QUEUE": "flower.distributed.temporal_worker",
    "request": "flower.distributed.client",
    "submit": "flower.distributed.client",
    "follow": "flower.distributed.client",
    "runs": "flower.distributed.client",
    "new_run_id": "flower.distributed.client",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
