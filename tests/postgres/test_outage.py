"""The PostgreSQL server goes away mid-run (``pg_ctl stop -m fast``) and comes back.

The guarantee (docs/stores.md, "When the server goes away"):

- a short outage: the append waits (bounded, under the SDK's 60 s append timeout), the
  step waits with it and goes on; every entry the CLI mirrored is in the table afterwards;
- a longer one: the SDK gives the batch up (its MirrorErrorMessage), the store keeps it
  and says so; it is written before anything newer of the same transcript once the server
  is back (at the latest when the session is loaded to resume), so the table only ever
  holds a prefix of the transcript and the resumed model gets the whole history;
- pooled connections broken by the restart are replaced: the store reconnects by itself.

These tests stop and start their own server (not the session-wide one).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import psycopg
import pytest

from flower import AgentSpec, Resilience, Runtime, texts
from flower.core.paths import project_key
from flower.stores.postgres import PostgresSessionStore, StoreOffline
from flower.testing import FakeServer, reply, tool_use
from flower.testing.postgres import TempPostgres, find_bin

SPEC = AgentSpec(name="worker", instructions="test agent", allowed_tools=["Bash"],
                 permission_mode="bypassPermissions")
QUICK = Resilience(base_delay=0.05, max_delay=0.2, probe_interval=0.2)
KEY = {"project_key": "-p", "session_id": "s"}


@pytest.fixture(scope="module")
def own_pg() -> Iterator[TempPostgres]:
    if find_bin() is None:
        pytest.skip("no PostgreSQL binaries")
    server = TempPostgres()
    server.start()
    try:
        yield server
    finally:
        server.cleanup()


def _rows(url: str, skey: str) -> list[dict]:
    with psycopg.connect(url) as con:
        return [json.loads(p) for (p,) in con.execute(
            "SELECT payload FROM flower.entries WHERE store_key=%s ORDER BY seq", (skey,))]


def _batch(tag: str, n: int = 3) -> list[dict]:
    return [{"type": "user", "uuid": f"{tag}{i}"} for i in range(n)] + [{"type": "tag", "t": tag}]


def test_store_waits_out_a_short_outage_and_reconnects(own_pg: TempPostgres) -> None:
    url = own_pg.createdb("short")
    store = PostgresSessionStore(url)  # default retry_for: 20 s
    try:
        anyio.run(store.append, KEY, _batch("a"))
        own_pg.stop()  # every pooled connection is now dead
        threading.Timer(2.0, own_pg.start).start()
        t0 = time.monotonic()
        anyio.run(store.append, KEY, _batch("b"))  # waits, then lands
        assert time.monotonic() - t0 >= 1.5
        assert _rows(url, "-p/s") == _batch("a") + _batch("b")
        assert not store.backlog
        own_pg.stop()
        own_pg.start()  # a restart between calls: the dead connection is replaced on checkout
        t0 = time.monotonic()
        assert store.has_session("-p", "s")
        assert anyio.run(store.load, KEY) == _batch("a") + _batch("b")
        assert time.monotonic() - t0 < 10
    finally:
        own_pg.start() if not _up(url) else None
        store.close()


def _up(url: str) -> bool:
    try:
        psycopg.connect(url, connect_timeout=2).close()
    except psycopg.Error:
        return False
    return True


def test_held_batches_are_written_first_and_never_doubled(own_pg: TempPostgres,
                                                          caplog: pytest.LogCaptureFixture
                                                          ) -> None:
    url = own_pg.createdb("held")
    store = PostgresSessionStore(url, retry_for=0.3)
    caplog.set_level(logging.WARNING, logger="flower.stores")
    try:
        anyio.run(store.append, KEY, _batch("a"))
        own_pg.stop()
        b = _batch("b")
        for _ in range(3):  # the SDK's three attempts pass the same list object
            with pytest.raises(StoreOffline, match="没连上"):
                anyio.run(store.append, KEY, b)
        assert [len(x) for _, x in store.backlog["-p/s"]] == [4]  # held once, not thrice
        assert any("暂存" in r.getMessage() for r in caplog.records)  # said, not silent
        own_pg.start()
        assert _rows(url, "-p/s") == _batch("a")  # a prefix: nothing newer than the gap
        anyio.run(store.append, KEY, _batch("c"))  # the next batch brings the held one first
        assert _rows(url, "-p/s") == _batch("a") + _batch("b") + _batch("c")
        assert not store.backlog
        anyio.run(store.append, KEY, b)  # a late SDK retry of the same batch: not doubled
        assert _rows(url, "-p/s") == _batch("a") + _batch("b") + _batch("c")
        assert any("补写" in r.getMessage() for r in caplog.records)
        # held, then only read back: load writes it first
        own_pg.stop()
        with pytest.raises(StoreOffline):
            anyio.run(store.append, KEY, _batch("d"))
        own_pg.start()
        assert anyio.run(store.load, KEY)[-4:] == _batch("d")
        # held at close: written if the server is back in time
        own_pg.stop()
        with pytest.raises(StoreOffline):
            anyio.run(store.append, KEY, _batch("e"))
        threading.Timer(1.0, own_pg.start).start()
        store.close(wait=15)
        assert _rows(url, "-p/s")[-4:] == _batch("e")
    finally:
        if not _up(url):
            own_pg.start()
        store.close()


def _local_transcript(home: Path, sid: str) -> list[dict]:
    [path] = list((home / ".claude" / "projects").glob(f"*/{sid}.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _uuids(entries: list[dict]) -> list[str]:
    return [e["uuid"] for e in entries if isinstance(e.get("uuid"), str)]


async def test_server_stops_mid_step_the_step_waits_and_nothing_is_lost(
        own_pg: TempPostgres, fake: FakeServer, workspace: Path, run_dir: Path, home: Path,
        cli_env: dict[str, str]) -> None:
    url = own_pg.createdb("mid_step")
    restarted = threading.Event()

    def stop_the_server(req: object) -> object:  # runs while the step is under way
        own_pg.stop()
        # flag first: start() returns only after the server is up, and by then the held
        # writes may already have gone through and the step finished
        threading.Timer(3.0, lambda: (restarted.set(), own_pg.start())).start()
        return reply("库停了我也接着干", tool_use("Bash", {"command": "echo still-here"}))

    fake.script(stop_the_server, reply("干完了"))
    rt = Runtime(workspace=workspace, run_dir=run_dir, store=url, resilience=QUICK)
    try:
        with anyio.fail_after(120):
            result = await rt.run(SPEC, "开始干活", step_name="干活")
        assert result.ok, result.errors
        assert restarted.is_set()  # the step could not finish before the server came back
        sid = result.session_id
        assert sid
        stored = _rows(url, f"{project_key(workspace)}/{sid}")
        local = _local_transcript(home, sid)
        assert _uuids(stored) == _uuids(local)  # every mirrored entry, in order, once
        assert rt.has_session(sid)  # and the store's pool reconnected
    finally:
        if not _up(url):
            own_pg.start()
        rt.close()


async def test_outage_longer_than_the_sdk_waits_then_resume_gets_everything(
        own_pg: TempPostgres, fake: FakeServer, workspace: Path, run_dir: Path, home: Path,
        cli_env: dict[str, str], caplog: pytest.LogCaptureFixture) -> None:
    url = own_pg.createdb("long_outage")
    caplog.set_level(logging.WARNING, logger="flower.stores")

    def stop_the_server(req: object) -> object:
        own_pg.stop()
        return reply("第一轮说的话")

    fake.script(stop_the_server)
    rt = Runtime(workspace=workspace, run_dir=run_dir, store=url, resilience=QUICK)
    rt.store.backend.retry_for = 0.3  # the SDK gives the batch up within seconds
    try:
        with anyio.fail_after(120):
            first = await rt.run(SPEC, "开始干活", step_name="干活")
        assert first.ok and first.session_id
        sid, skey = first.session_id, f"{project_key(workspace)}/{first.session_id}"
        assert rt.store.backend.backlog.get(skey)  # held, not lost
        assert any(texts.STORE_HELD.split(":")[0] in r.getMessage() for r in caplog.records)
        own_pg.start()
        fake.script(reply("第二轮接上了"))
        with anyio.fail_after(120):
            second = await rt.run(SPEC, "继续", step_name="干活", resume=sid)
        assert second.ok and second.session_id == sid
        assert "第一轮说的话" in fake.last_request().text()  # the model got the whole history
        stored = _rows(url, skey)
        local = _local_transcript(home, sid)
        assert _uuids(stored)[: len(_uuids(local))] == _uuids(local)
        assert len(_uuids(stored)) == len(set(_uuids(stored)))
        assert not rt.store.backend.backlog
    finally:
        if not _up(url):
            own_pg.start()
        rt.close()
