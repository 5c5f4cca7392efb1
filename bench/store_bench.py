"""Session-store benchmark (run by hand): append throughput, load latency, load memory.

    /work/venv/bin/python bench/store_bench.py [--entries 50000] [--mb 100]
    /work/venv/bin/python bench/store_bench.py --store postgres [--pg-url URL]

Builds a synthetic transcript shaped like the CLI's (one block per assistant entry, tool
results as user entries, ephemeral Bash look-ups, denials, API-error debris), appends it in
SDK-sized batches, then compares ``load()`` of the bare SQLite store with the full
trim + prune pipeline. Targets: append >= 20,000 entries/s; pipeline load <= 1.5x SQLite
load; peak memory during load <= 3x transcript size.

``--store postgres`` runs the same transcript through ``PostgresSessionStore`` too (a
throwaway server from ``flower.testing.postgres`` unless ``--pg-url`` is given) and prints
it side by side with SQLite as ratios, plus the floor of a PostgreSQL load — fetching the
rows and decoding them with orjson, nothing else — and the layered load against it.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flower.stores.prune import PruningSessionStore
from flower.stores.sqlite import SqliteSessionStore
from flower.stores.trim import TrimPolicy

KEY = {"project_key": "-bench-ws", "session_id": "0f6c0d1e-bench"}
BATCH = 100  # the SDK's mirror batches are small; eager flush sends even fewer
COMMON = {"isSidechain": False, "userType": "external", "entrypoint": "sdk-py",
          "cwd": "/home/u/bench-ws", "sessionId": KEY["session_id"], "version": "2.1.332",
          "gitBranch": "main"}


def transcript(n: int, target_bytes: int, seed: int = 7) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    out: list[dict[str, Any]] = []
    parent: str | None = None
    avg_body = max(target_bytes // n * 2 - 900, 10)

    def add(entry: dict[str, Any]) -> None:
        nonlocal parent
        entry.update(COMMON, uuid=f"{len(out):08d}-0000-4000-8000-000000000000",
                     parentUuid=parent, timestamp="2026-09-07T01:52:40.123Z")
        parent = entry["uuid"]
        out.append(entry)

    add({"type": "user", "message": {"role": "user", "content": "build the thing"}})
    t = 0
    while len(out) < n:
        t += 1
        kind = rnd.random()
        cmd = rnd.choice(["git status", "ls -la src", "pytest -q", "cat build.log",
                          "grep -rn TODO ."]) if kind > 0.05 else "rm -rf build"
        add({"type": "assistant", "requestId": f"req_{t}", "message": {
            "id": f"msg_{t}", "type": "message", "role": "assistant", "model": "claude-opus-5-5",
            "content": [{"type": "tool_use", "id": f"toolu_{t:06d}", "name": "Bash",
                         "input": {"command": cmd, "description": "run"}}],
            "stop_reason": "tool_use", "stop_sequence": None,
            "usage": {"input_tokens": 1000 + t, "cache_read_input_tokens": 90000,
                      "cache_creation_input_tokens": 120, "output_tokens": 40}}})
        size = int(rnd.expovariate(1 / avg_body))
        body = ("".join(rnd.choices("abcdefghij \n", k=64)) * (size // 64 + 1))[:size]
        extra: dict[str, Any] = {}
        if cmd.startswith("rm"):
            body = "PreToolUse:Bash hook error: Bash 不要直接用"
            extra = {"toolDenialKind": "permission-rule"}
        add({"type": "user", **extra, "sourceToolAssistantUUID": parent, "message": {
            "role": "user", "content": [{"tool_use_id": f"toolu_{t:06d}", "type": "tool_result",
                                         "content": body, "is_error": bool(extra)}]},
             "toolUseResult": {"stdout": body[:200], "stderr": "", "interrupted": False}})
        if rnd.random() < 0.002:
            add({"type": "assistant", "isApiErrorMessage": True, "message": {
                "model": "<synthetic>", "role": "assistant",
                "content": [{"type": "text", "text": "API Error: Connection refused"}]}})
    return out[:n]


async def append_all(store: SqliteSessionStore, entries: list[dict[str, Any]]) -> float:
    start = time.perf_counter()
    for i in range(0, len(entries), BATCH):
        await store.append(KEY, entries[i:i + BATCH])
    return time.perf_counter() - start


async def timed_load(store: SqliteSessionStore) -> tuple[float, int]:
    gc.collect()
    start = time.perf_counter()
    out = await store.load(KEY)
    secs = time.perf_counter() - start
    n = len(out or [])
    del out
    return secs, n


async def timed_loads(stores: list[SqliteSessionStore], rounds: int,
                      ) -> list[tuple[float, int]]:
    """Median load time (and entry count) per store, rounds interleaved.

    Interleaving matters on a shared machine: timing all rounds of one store and then all
    of the other lets a burst of foreign load land on one side only and skew the ratio.
    """
    times: list[list[float]] = [[] for _ in stores]
    counts = [0] * len(stores)
    for _ in range(rounds):
        for k, store in enumerate(stores):
            secs, counts[k] = await timed_load(store)
            times[k].append(secs)
    return [(statistics.median(t), n) for t, n in zip(times, counts, strict=True)]


async def peak_memory(store: SqliteSessionStore) -> int:
    gc.collect()
    tracemalloc.start()
    out = await store.load(KEY)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del out
    return peak


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=50_000)
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    ap.add_argument("--pg-url", default=None, help="use this server instead of a scratch one")
    args = ap.parse_args()
    if args.store == "postgres":
        await postgres_bench(args)
        return

    entries = transcript(args.entries, int(args.mb * 1e6))
    size = sum(len(json.dumps(e, ensure_ascii=False).encode()) for e in entries)
    print(f"transcript: {len(entries):,} entries, {size / 1e6:.1f} MB of JSON")

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        base = SqliteSessionStore(root / "sessions.db")
        secs = await append_all(base, entries)
        rate = len(entries) / secs
        replay = await append_all(base, entries[: 10 * BATCH])
        print(f"append: {secs:.2f} s -> {rate:,.0f} entries/s (target >= 20,000)"
              f"  [replay of 1,000 already-stored entries: {replay * 1000:.0f} ms]")
        del entries
        gc.collect()

        pipe = PruningSessionStore(root / "sessions.db", root / "ws",
                                   policy=TrimPolicy(enabled=True))
        t_first = time.perf_counter()
        first = await pipe.load(KEY)
        t_first = time.perf_counter() - t_first
        del first
        (t_sql, n_sql), (t_pipe, n_pipe) = await timed_loads([base, pipe], args.rounds)
        print(f"load sqlite-only: {t_sql:.2f} s ({n_sql:,} entries)")
        print(f"load trim+prune:  {t_pipe:.2f} s ({n_pipe:,} entries; report {pipe.last_report},"
              f" pruned {pipe.pruned}, denials dropped {pipe.denials_dropped})")
        print(f"  first pipeline load incl. writing spill files: {t_first:.2f} s")
        print(f"  ratio pipeline/sqlite: {t_pipe / t_sql:.2f}x (target <= 1.5x)")
        m_sql = await peak_memory(base)
        m_pipe = await peak_memory(pipe)
        print(f"peak traced memory during load: sqlite {m_sql / 1e6:.0f} MB "
              f"({m_sql / size:.2f}x), pipeline {m_pipe / 1e6:.0f} MB ({m_pipe / size:.2f}x)"
              f" (target <= 3x transcript)")
        base.close()
        pipe.close()


def pg_floor(url: str, schema: str) -> tuple[float, int]:
    """Read every row of KEY and decode it with orjson: the least any load can cost."""
    import orjson
    import psycopg

    from flower.stores.sqlite import gc_paused, store_key

    gc.collect()
    with psycopg.connect(url) as conn, conn.cursor(binary=True) as cur, gc_paused():
        start = time.perf_counter()  # connected already: the stores' pools are warm too
        cur.execute(f"SELECT convert_to(payload, 'UTF8') FROM {schema}.entries "
                    "WHERE store_key=%s ORDER BY seq", (store_key(KEY),))
        out = [orjson.loads(p) for (p,) in cur]
        secs = time.perf_counter() - start
    n = len(out)
    del out
    return secs, n


async def postgres_bench(args: argparse.Namespace) -> None:
    from flower.stores.layered import LayeredSessionStore
    from flower.stores.postgres import PostgresSessionStore
    from flower.testing.postgres import TempPostgres

    entries = transcript(args.entries, int(args.mb * 1e6))
    size = sum(len(json.dumps(e, ensure_ascii=False).encode()) for e in entries)
    print(f"transcript: {len(entries):,} entries, {size / 1e6:.1f} MB of JSON")
    server = None
    url = args.pg_url
    if url is None:
        server = TempPostgres()
        server.start()
        url = server.url
    schema = f"bench_{int(time.time())}"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            lite = SqliteSessionStore(root / "sessions.db")
            pg = PostgresSessionStore(url, schema=schema)
            rate = {}
            for name, store in (("sqlite", lite), ("postgres", pg)):
                secs = await append_all(store, entries)
                rate[name] = len(entries) / secs
                print(f"append {name:8s}: {secs:.2f} s -> {rate[name]:,.0f} entries/s")
            print(f"  ratio postgres/sqlite append rate: {rate['postgres'] / rate['sqlite']:.2f}x")
            del entries
            gc.collect()
            ws = root / "ws"
            policy = TrimPolicy(enabled=True)
            lite_l = PruningSessionStore(root / "sessions.db", ws, policy=policy)
            pg_l = LayeredSessionStore(pg, ws, policy=policy)
            await lite_l.load(KEY)  # first loads write the spill files
            await pg_l.load(KEY)
            (t_lite, n1), (t_pg, n2), (t_pgraw, n3) = await timed_loads(
                [lite_l, pg_l, pg], args.rounds)
            floors = [pg_floor(url, schema) for _ in range(args.rounds)]
            t_floor = statistics.median(f[0] for f in floors)
            print(f"layered load sqlite:   {t_lite:.2f} s ({n1:,} entries)")
            print(f"layered load postgres: {t_pg:.2f} s ({n2:,} entries)"
                  f"  ratio postgres/sqlite {t_pg / t_lite:.2f}x")
            print(f"bare load postgres:    {t_pgraw:.2f} s ({n3:,} entries)")
            print(f"floor (fetch rows + orjson.loads): {t_floor:.2f} s ({floors[0][1]:,} rows)")
            print(f"  ratio layered postgres load / floor: {t_pg / t_floor:.2f}x (target <= 2x)")
            m_pg = await peak_memory(pg_l)
            print(f"peak traced memory, layered postgres load: {m_pg / 1e6:.0f} MB "
                  f"({m_pg / size:.2f}x transcript)")
            lite.close()
            lite_l.close()
            pg.close()
    finally:
        if server is not None:
            server.cleanup()


if __name__ == "__main__":
    asyncio.run(main())
