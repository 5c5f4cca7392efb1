"""``flower worker --temporal HOST:PORT``: a process that runs flower steps for any submitter.

One worker runs the ``FlowerRun`` workflow code and the ``flower.plan``/``flower.step``
activities of its task queue. Steps run against this process's session store (``--store``
or ``FLOWER_STORE_URL``; shared PostgreSQL when workers live on several machines) and must
be able to import the run's target (same code on every worker).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from datetime import timedelta
from typing import Any

DEFAULT_QUEUE = "flower"
DEFAULT_CONCURRENCY = 8  # steps at once per worker: each is a `claude` CLI process


def identity() -> str:
    """What Temporal shows as the worker running an activity: ``flower-<pid>@<host>``."""
    return f"flower-{os.getpid()}@{socket.gethostname()}"


async def connect(address: str) -> Any:
    from temporalio.client import Client

    return await Client.connect(address)


def build_worker(client: Any, queue: str = DEFAULT_QUEUE, *,
                 max_concurrent_steps: int | None = None) -> Any:
    from temporalio.worker import Worker
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

    from flower.distributed.activities import plan, step
    from flower.distributed.workflow import FlowerRun

    runner = SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules("flower"))
    return Worker(client, task_queue=queue, workflows=[FlowerRun], activities=[plan, step],
                  workflow_runner=runner, identity=identity(),
                  max_concurrent_activities=max_concurrent_steps or DEFAULT_CONCURRENCY,
                  # a dead worker's cached runs move on to a live one within seconds
                  sticky_queue_schedule_to_start_timeout=timedelta(seconds=3),
                  # a new session id reaches the server within 2 s (not 0.8 x the heartbeat
                  # timeout): a worker dying right after the first turn still hands it on
                  max_heartbeat_throttle_interval=timedelta(seconds=2),
                  default_heartbeat_throttle_interval=timedelta(seconds=2),
                  graceful_shutdown_timeout=timedelta(seconds=5))


async def run_worker(address: str, queue: str = DEFAULT_QUEUE, *,
                     max_concurrent_steps: int | None = None,
                     on_ready: Callable[[], None] | None = None) -> None:
    """Serve ``queue`` until cancelled."""
    client = await connect(address)
    worker = build_worker(client, queue, max_concurrent_steps=max_concurrent_steps)
    if on_ready is not None:
        on_ready()
    await worker.run()
