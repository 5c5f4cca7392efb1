"""A load walks only the rows appended since the transcript's last scan in this process, and
still gives exactly what a store that never loaded gives. A kept scan that is not of the
rows loaded (another transcript under the same key, a scan that lies about its blocks) is
never believed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flower.stores.prune import PruningSessionStore
from flower.stores.sqlite import SqliteSessionStore
from flower.stores.transcript import scan

from .test_layer_equivalence import transcripts
from .test_load_plan import KEY, KW, append, fresh, load, transcript


@settings(max_examples=120, deadline=None)
@given(entries=transcripts(), cut=st.floats(0, 1))
def test_a_scan_extended_by_the_rest_is_the_scan_of_the_whole(entries: list[Any],
                                                              cut: float) -> None:
    n = int(len(entries) * cut)
    assert scan(entries, into=scan(entries[:n])) == scan(entries)


def test_the_same_process_extends_its_own_scan(db: Path, ws: Path, scans: list[int]) -> None:
    entries = transcript(12)
    with SqliteSessionStore(db) as raw:
        append(raw, entries[:30])
    with PruningSessionStore(db, ws, **KW) as store:
        load(store)
        append(store, entries[30:])
        scans.clear()
        got = load(store)
        assert scans == [len(entries) - 30]
    assert got == fresh(db, ws)


def test_another_transcript_under_the_same_key_is_scanned_whole(db: Path, ws: Path,
                                                                scans: list[int]) -> None:
    """Deleted by another store object and written again, longer: the kept scan's rows are
    gone, though the count alone would say "appended"."""
    with SqliteSessionStore(db) as raw:
        append(raw, transcript(12))
    with PruningSessionStore(db, ws, **KW) as store:
        load(store)
        with SqliteSessionStore(db) as other:
            anyio.run(other.delete, KEY)
            append(other, transcript(14, tag="q"))
        scans.clear()
        got = load(store)
        assert scans == [len(transcript(14, tag="q"))]
    assert b"qu0" in got[0]
    assert got == fresh(db, ws)


@pytest.mark.parametrize("lie", ["sizes", "glance sizes", "indices", "types"])
def test_a_kept_scan_that_lies_about_its_blocks_is_never_believed(db: Path, ws: Path,
                                                                  lie: str,
                                                                  scans: list[int]) -> None:
    """A kept scan whose sampled uuids match but whose sites do not (rows rewritten with
    the same uuids, or a bug): the load finds out before it changes any entry and scans
    afresh — the copy is a fresh store's."""
    entries = transcript(12)
    with SqliteSessionStore(db) as raw:
        append(raw, entries[:40])
    with PruningSessionStore(db, ws, **KW) as store:
        load(store)
        (kept,) = store.layers._scans.values()
        sites = kept.scan.sites
        for n, (i, j, size, tid, uid) in enumerate(sites):
            sites[n] = {"sizes": (i, j, size + 7, tid, uid),
                        # only the expired ones: trim never reads those bodies itself
                        "glance sizes": (i, j, size + (tid is not None), tid, uid),
                        "indices": (i, j + 3, size, tid, uid),
                        "types": (i, str(j), size, tid, uid)}[lie]
        append(store, entries[40:])
        scans.clear()
        got = load(store)
        assert scans == [len(entries) - 40, len(entries)]  # extended, found out, scanned
    assert got == fresh(db, ws)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=transcripts(), cuts=st.lists(st.floats(0, 1), min_size=1, max_size=4))
def test_loads_between_appends_are_fresh_loads(entries: list[Any], cuts: list[float],
                                               tmp_path_factory: pytest.TempPathFactory,
                                               ) -> None:
    """Rows arriving in any batches, one store loading after each batch (its kept scan
    extended each time): always the copy of a store that never loaded."""
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
            if done:
                assert load(same) == fresh(db, ws)
