"""A load walks only the rows appended since the transcript's last scan — the scan this
process kept, or the file an earlier process left in ``<spill>/.scans/`` — and still gives
exactly what a store that never loaded gives. A file that is not of these rows (another
transcript under the same key, torn, garbage, lying about its blocks) is never believed."""

from __future__ import annotations

import copy
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flower.stores.layers as layers
from flower.stores import scancache
from flower.stores.prune import PruningSessionStore
from flower.stores.sqlite import SqliteSessionStore
from flower.stores.transcript import scan

from .test_layer_equivalence import transcripts
from .test_load_plan import KEY, KW, ROOT, append, fresh, load, transcript


@pytest.fixture(autouse=True)
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep files for the short transcripts of these tests too."""
    monkeypatch.setattr(scancache, "MIN_ENTRIES", 10)


@pytest.fixture
def walked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of entries each scan walked (an extended scan walks the new ones)."""
    calls: list[int] = []
    real = layers.scan

    def counting(entries: list[Any], into: Any = None) -> Any:
        calls.append(len(entries) - (into.count if into is not None else 0))
        return real(entries, into)

    monkeypatch.setattr(layers, "scan", counting)
    return calls


def scans_dir(ws: Path) -> Path:
    return ws / ".flower" / "spill" / scancache.SCANS_DIRNAME


def one_load(db: Path, ws: Path) -> tuple[bytes, dict[str, int], tuple[int, ...]]:
    """A load by a store that never loaded in this process (as a wake's first)."""
    with PruningSessionStore(db, ws, **KW) as store:
        return load(store)


@settings(max_examples=120, deadline=None)
@given(entries=transcripts(), cut=st.floats(0, 1))
def test_a_scan_extended_by_the_rest_is_the_scan_of_the_whole(entries: list[Any],
                                                              cut: float) -> None:
    n = int(len(entries) * cut)
    assert scan(entries, into=scan(entries[:n])) == scan(entries)


def test_a_wakes_first_load_walks_only_what_came_since(db: Path, ws: Path,
                                                       walked: list[int]) -> None:
    entries = transcript(12)
    with SqliteSessionStore(db) as raw:
        append(raw, entries[:40])
    one_load(db, ws)  # the process before the wake: leaves the scan of 40 rows
    (kept,) = scans_dir(ws).iterdir()
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600  # it names the commands run
    with SqliteSessionStore(db) as raw:
        append(raw, entries[40:])
    walked.clear()
    got = one_load(db, ws)
    assert walked == [len(entries) - 40]
    for f in scans_dir(ws).iterdir():
        f.unlink()
    walked.clear()
    assert got == one_load(db, ws)  # what a store without the file gives
    assert walked == [len(entries)]


def test_the_same_process_extends_its_own_scan(db: Path, ws: Path, walked: list[int]) -> None:
    entries = transcript(12)
    with SqliteSessionStore(db) as raw:
        append(raw, entries[:30])
    with PruningSessionStore(db, ws, **KW) as store:
        load(store)
        append(store, entries[30:])
        walked.clear()
        got = load(store)
        assert walked == [len(entries) - 30]
    assert got == fresh(db, ws)


def test_another_transcript_under_the_same_key_is_scanned_whole(db: Path, ws: Path,
                                                                walked: list[int]) -> None:
    with SqliteSessionStore(db) as raw:
        append(raw, transcript(12))
    one_load(db, ws)
    with SqliteSessionStore(db) as raw:  # deleted and written again: other rows
        anyio.run(raw.delete, KEY)
        append(raw, transcript(14, tag="q"))
    walked.clear()
    got = one_load(db, ws)
    assert walked == [len(transcript(14, tag="q"))]
    assert b"qu0" in got[0]
    for f in scans_dir(ws).iterdir():
        f.unlink()
    assert got == one_load(db, ws)


@pytest.mark.parametrize("damage", ["garbage", "torn", "empty", "wrong sizes",
                                    "wrong indices", "foreign slot", "not ints"])
def test_a_file_that_is_not_of_these_rows_is_never_believed(db: Path, ws: Path, damage: str,
                                                             walked: list[int]) -> None:
    with SqliteSessionStore(db) as raw:
        append(raw, transcript(12))
    want = one_load(db, ws)
    (kept,) = scans_dir(ws).iterdir()
    data = kept.read_bytes()
    doc = orjson.loads(data)
    if damage == "garbage":
        data = os.urandom(len(data))
    elif damage == "torn":
        data = data[: len(data) // 2]
    elif damage == "empty":
        data = b""
    else:
        if damage == "wrong sizes":  # every body a different length than stored
            doc["sites"][2] = [size + 7 for size in doc["sites"][2]]
        elif damage == "wrong indices":  # blocks the entries do not have
            doc["sites"][1] = [j + 3 for j in doc["sites"][1]]
        elif damage == "foreign slot":
            doc["slot"] = ["-other", "sess-9", None]
        else:
            doc["sites"][0] = [str(i) for i in doc["sites"][0]]
        data = orjson.dumps(doc)
    kept.write_bytes(data)
    walked.clear()
    assert one_load(db, ws) == want
    assert walked[-1] == len(transcript(12))  # the last scan walked every entry


def test_only_the_newest_files_are_kept(db: Path, ws: Path) -> None:
    keys = [{"project_key": "-p", "session_id": f"s{i}"} for i in range(scancache.KEEP_FILES + 3)]
    with SqliteSessionStore(db) as raw, PruningSessionStore(db, ws, **KW) as store:
        for key in keys:
            anyio.run(raw.append, key, copy.deepcopy(transcript(6)))
            anyio.run(store.load, key)
    assert len(list(scans_dir(ws).iterdir())) == scancache.KEEP_FILES


def test_an_unwritable_spill_dir_costs_only_the_scan(db: Path, ws: Path,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    with SqliteSessionStore(db) as raw:
        append(raw, transcript(12))
    (ws / ".flower" / "spill").mkdir(parents=True)
    scans_dir(ws).write_text("a file where the directory goes")
    with caplog.at_level("WARNING"):
        got = one_load(db, ws)
    assert got[1]["cleared"] > 0  # the load itself went on as always
    assert "could not keep the scan" in caplog.text


def test_a_real_wake_reads_the_file_the_killed_process_left(db: Path, ws: Path) -> None:
    """Two processes: the first loads and dies without closing anything; the second, after
    more rows came, walks only those and loads what a store without the file loads."""
    entries = transcript(12)
    with SqliteSessionStore(db) as raw:
        append(raw, entries[:40])
    code = ("import anyio, os, sys\n"
            "import flower.stores.layers as layers\n"
            "from flower.stores import scancache\n"
            "from flower.stores.prune import PruningSessionStore, PrunePolicy\n"
            "from flower.stores.trim import EphemeralPolicy, TrimPolicy\n"
            "scancache.MIN_ENTRIES = 10\n"
            "real, walked = layers.scan, []\n"
            "def counting(entries, into=None):\n"
            "    walked.append(len(entries) - (into.count if into is not None else 0))\n"
            "    return real(entries, into)\n"
            "layers.scan = counting\n"
            "s = PruningSessionStore(sys.argv[1], sys.argv[2],"
            " policy=TrimPolicy(keep_recent=2, min_chars=500),"
            " ephemeral=EphemeralPolicy(keep_recent=2), prune=PrunePolicy(keep_denials=1))\n"
            f"anyio.run(s.load, {KEY!r})\n"
            "print(walked[-1], flush=True)\n"
            "os._exit(0)\n")  # no close, no atexit: as a kill leaves it

    def wake() -> int:
        out = subprocess.run([sys.executable, "-c", code, str(db), str(ws)], check=True,
                             capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
        return int(out.stdout.split()[-1])

    assert wake() == 40
    with SqliteSessionStore(db) as raw:
        append(raw, entries[40:])
    assert wake() == len(entries) - 40
    got = one_load(db, ws)
    for f in scans_dir(ws).iterdir():
        f.unlink()
    assert got == one_load(db, ws)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=transcripts(), cuts=st.lists(st.floats(0, 1), min_size=1, max_size=4))
def test_loads_between_appends_are_fresh_loads(entries: list[Any], cuts: list[float],
                                               tmp_path_factory: pytest.TempPathFactory,
                                               ) -> None:
    """Rows arriving in any batches, each load by a new store object (a wake) or the same
    one: always the copy of a store that never loaded."""
    tmp = tmp_path_factory.mktemp("cache")
    db, ws = tmp / "sessions.db", tmp / "ws"
    ws.mkdir()
    marks = sorted({int(len(entries) * c) for c in cuts} | {len(entries)})
    done = 0
    with SqliteSessionStore(db) as raw, PruningSessionStore(db, ws, **KW) as same:
        for n in marks:
            if n > done:
                append(raw, entries[done:n])
                done = n
            if not done:
                continue
            woken = one_load(db, ws)
            assert load(same) == woken
            saved = {f: f.read_bytes() for f in scans_dir(ws).iterdir()} \
                if scans_dir(ws).is_dir() else {}
            for f in saved:
                f.unlink()
            assert one_load(db, ws) == woken
            for f, data in saved.items():
                f.write_bytes(data)
