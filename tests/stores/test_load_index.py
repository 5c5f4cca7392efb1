"""A load walks only the rows appended since the transcript's index was last extended — in
the same process, or in the next one from the index on disk — and still gives exactly what
planning from all rows gives. An index that is not of the rows loaded (another transcript
under the same key, a damaged, torn, foreign or lying file) is never believed."""

from __future__ import annotations

import copy
import json
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
from flower import texts
from flower.stores.indexfile import DIRNAME
from flower.stores.prune import PruningSessionStore
from flower.stores.sqlite import SqliteSessionStore
from flower.stores.transcript import scan

from .conftest import Chain
from .test_layer_equivalence import scan_based, transcripts
from .test_load_plan import KEY, KW, ROOT, append, load

# --------------------------------------------------------------------------- helpers


def rows(rounds: int, *, denials: int = 1, start: int = 0) -> list[dict[str, Any]]:
    """Glances, big results, API errors (a ``last-prompt`` pointing at each), a denial or
    more at the start: every layer has something to do, and ``rows(n)`` begins
    ``rows(m)`` for m < n (as a transcript grows)."""
    c = Chain()
    c._n = start
    c.prompt("go")
    for _ in range(denials):
        c.denied()
    for i in range(rounds):
        c.bash("git status", f"clean {i}")
        c.bash("make build", "z" * 900 + str(i))
        if i % 4 == 2:
            c.api_error()
            c.bookkeeping()  # a last-prompt pointing at what prune drops
    return c.entries


def reference(db: Path, ws: Path) -> tuple[bytes, dict[str, int], tuple[int, ...]]:
    """What the rules give for all the rows now in ``db``, planned from one scan of them
    (no index involved)."""
    with SqliteSessionStore(db) as raw:
        entries = anyio.run(raw.load, KEY)
    out, report, stats = scan_based(ws, entries or [], **KW)
    return orjson.dumps(out), report, stats


def index_files(ws: Path) -> list[Path]:
    return sorted((ws / ".flower" / "spill" / DIRNAME).glob("*"))


@pytest.fixture
def on_disk(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every index is written, however short its transcript (sealed with a key of the
    test's own state folder)."""
    monkeypatch.setattr(layers, "PERSIST_FROM", 0)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def grow(db: Path, entries: list[dict[str, Any]]) -> None:
    with SqliteSessionStore(db) as raw:
        append(raw, entries)


# --------------------------------------------------------------------------- the scan


@settings(max_examples=120, deadline=None)
@given(entries=transcripts(), cut=st.floats(0, 1))
def test_a_scan_extended_by_the_rest_is_the_scan_of_the_whole(entries: list[Any],
                                                              cut: float) -> None:
    n = int(len(entries) * cut)
    assert scan(entries, into=scan(entries[:n])) == scan(entries)


# --------------------------------------------------------------------------- one process


def test_the_same_process_walks_only_the_new_rows(db: Path, ws: Path,
                                                  scans: list[int]) -> None:
    entries = rows(12)
    grow(db, entries[:30])
    with PruningSessionStore(db, ws, **KW) as store:
        load(store)
        grow(db, entries[30:])
        scans.clear()
        got = load(store)
        assert scans == [len(entries) - 30]
    assert got == reference(db, ws)
    assert not index_files(ws)  # a short transcript's index stays in memory


def test_a_new_denial_makes_the_load_plan_from_all_rows(db: Path, ws: Path,
                                                        scans: list[int]) -> None:
    """The newest denial is kept: one more makes the one kept so far removable, a
    decision about an old row, so the load starts an index of all rows."""
    with_two = rows(12, denials=2)
    grow(db, with_two[:3])  # the prompt and the first denial
    with PruningSessionStore(db, ws, **KW) as store:
        load(store)
        assert store.denials_dropped == 0
        grow(db, with_two[3:])
        scans.clear()
        got = load(store)
        assert scans == [len(with_two) - 3, len(with_two)]
        assert store.denials_dropped == 1
    assert got == reference(db, ws)


def test_another_transcript_under_the_same_key_is_planned_from_all_rows(
        db: Path, ws: Path, scans: list[int]) -> None:
    """Deleted by another store object and written again, longer: the index's rows are
    gone, though the count alone would say "appended"."""
    grow(db, rows(12))
    with PruningSessionStore(db, ws, **KW) as store:
        load(store)
        with SqliteSessionStore(db) as other:
            anyio.run(other.delete, KEY)
            append(other, rows(14, start=500))
        scans.clear()
        got = load(store)
        assert scans == [len(rows(14))]
    assert got == reference(db, ws)


@pytest.mark.parametrize("lie", ["sizes", "glance sizes", "indices", "types"])
def test_an_index_that_lies_about_its_blocks_is_never_believed(db: Path, ws: Path,
                                                               lie: str,
                                                               scans: list[int]) -> None:
    """An index whose sampled uuids match but whose sites do not (rows rewritten with the
    same uuids, or a bug): the load finds out before it changes any entry and plans from
    all rows — the copy is the reference's."""
    entries = rows(12)
    grow(db, entries[:40])
    with PruningSessionStore(db, ws, **KW) as store:
        load(store)
        (index,) = store.layers._indexes.values()
        sites = index.sites
        for n, (i, j, size, cmd, uid) in enumerate(sites):
            sites[n] = {"sizes": (i, j, size + 7, cmd, uid),
                        # only the expired ones: trim never reads those bodies itself
                        "glance sizes": (i, j, size + (cmd is not None), cmd, uid),
                        "indices": (i, j + 3, size, cmd, uid),
                        "types": (i, str(j), size, cmd, uid)}[lie]
        grow(db, entries[40:])
        scans.clear()
        got = load(store)
        assert scans == [len(entries) - 40, len(entries)]  # extended, found out, all
    assert got == reference(db, ws)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=transcripts(), cuts=st.lists(st.floats(0, 1), min_size=1, max_size=4),
       woken=st.lists(st.booleans(), min_size=5, max_size=5))
def test_loads_between_appends_plan_as_from_all_rows(entries: list[Any], cuts: list[float],
                                                     woken: list[bool],
                                                     tmp_path_factory: pytest.TempPathFactory,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows arriving in any batches, a load after each — by the same store (its index in
    memory) or by a new one, as a woken process (its index from disk): always what
    planning from all rows gives."""
    monkeypatch.setattr(layers, "PERSIST_FROM", 0)
    tmp = tmp_path_factory.mktemp("index")
    db, ws = tmp / "sessions.db", tmp / "ws"
    ws.mkdir()
    marks = sorted({int(len(entries) * c) for c in cuts} | {len(entries)})
    done = 0
    store = PruningSessionStore(db, ws, **KW)
    try:
        for n, wake in zip(marks, woken, strict=False):  # marks: at most 5
            if n > done:
                grow(db, entries[done:n])
                done = n
            if wake:
                store.close()
                store = PruningSessionStore(db, ws, **KW)
            if done:
                assert load(store) == reference(db, ws)
    finally:
        store.close()


# --------------------------------------------------------------------------- on disk


def test_a_woken_process_walks_only_the_rows_since(db: Path, ws: Path, scans: list[int],
                                                   on_disk: None) -> None:
    entries = rows(12)
    grow(db, entries[:30])
    with PruningSessionStore(db, ws, **KW) as store:
        load(store)
    grow(db, entries[30:])  # the killed process's CLI wrote its turn
    scans.clear()
    with PruningSessionStore(db, ws, **KW) as woken:
        got = load(woken)
    assert scans == [len(entries) - 30]
    assert got == reference(db, ws)
    (path,) = index_files(ws)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_a_real_process_leaves_an_index_the_next_one_extends(db: Path, ws: Path,
                                                             scans: list[int]) -> None:
    """A transcript long enough to be written down (PERSIST_FROM rows), loaded by another
    Python process that then exits; this one loads it with more rows appended."""
    entries = rows(400)
    assert len(entries) > layers.PERSIST_FROM
    grow(db, entries[:-7])
    code = ("import anyio, sys\n"
            "from flower.stores.prune import PruningSessionStore, PrunePolicy\n"
            "from flower.stores.trim import EphemeralPolicy, TrimPolicy\n"
            "s = PruningSessionStore(sys.argv[1], sys.argv[2],"
            " policy=TrimPolicy(keep_recent=2, min_chars=500),"
            " ephemeral=EphemeralPolicy(keep_recent=2), prune=PrunePolicy(keep_denials=1))\n"
            f"anyio.run(s.load, {KEY!r})\n"
            "s.close()\n")
    subprocess.run([sys.executable, "-c", code, str(db), str(ws)], check=True, timeout=120,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert len(index_files(ws)) == 1
    grow(db, entries[-7:])
    scans.clear()
    with PruningSessionStore(db, ws, **KW) as woken:
        got = load(woken)
    assert scans == [7]
    assert got == reference(db, ws)


def _two_records(db: Path, ws: Path) -> tuple[Path, int]:
    """An index file of two loads' records; the length of the first."""
    entries = rows(12)
    grow(db, entries[:30])
    with PruningSessionStore(db, ws, **KW) as store:
        load(store)
        (path,) = index_files(ws)
        first = path.stat().st_size
        grow(db, entries[30:40])
        load(store)
    grow(db, entries[40:])
    return path, first


def test_a_torn_record_is_not_read_and_the_ones_before_still_count(
        db: Path, ws: Path, scans: list[int], on_disk: None) -> None:
    path, first = _two_records(db, ws)
    whole = path.read_bytes()
    want = reference(db, ws)
    for cut in sorted({*range(first, len(whole), 97), first + 1, len(whole) - 1}):
        path.write_bytes(whole[:cut])
        scans.clear()
        with PruningSessionStore(db, ws, **KW) as woken:
            assert load(woken) == want
        assert scans == [len(rows(12)) - 30], cut  # extended from the first record
        scans.clear()
        with PruningSessionStore(db, ws, **KW) as next_one:  # written anew, whole
            assert load(next_one) == want
        assert scans == [0], cut


@pytest.mark.parametrize("damage", ["garbage", "empty", "flipped byte", "cut first record",
                                    "directory", "foreign", "lying sizes", "out of range"])
def test_a_damaged_index_file_is_never_believed(db: Path, ws: Path, scans: list[int],
                                                 on_disk: None, damage: str,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    path, first = _two_records(db, ws)
    whole = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(os.urandom(5000))
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "flipped byte":
        path.write_bytes(whole[:40] + bytes([whole[40] ^ 1]) + whole[41:])
    elif damage == "cut first record":
        path.write_bytes(whole[: first // 2])
    elif damage == "directory":
        path.unlink()
        path.mkdir()
    elif damage == "foreign":  # another session's index under this one's name
        other = {**KEY, "session_id": "sess-2"}
        with SqliteSessionStore(db) as raw:
            anyio.run(raw.append, other, copy.deepcopy(rows(5)))
        with PruningSessionStore(db, ws, **KW) as store:
            anyio.run(store.load, other)
        (foreign,) = [p for p in index_files(ws) if p != path]
        path.write_bytes(foreign.read_bytes())
    else:  # whole records (right checksums) that say what the rows do not hold
        path.write_bytes(_forged(whole, damage))
    want = reference(db, ws)
    scans.clear()
    with PruningSessionStore(db, ws, **KW) as woken:
        assert load(woken) == want
    assert scans[-1] == len(rows(12))  # planned from all rows
    # a whole record sealed with our key that does not match its seal is said, once
    said = [r.getMessage() for r in caplog.records if "封印" in r.getMessage()]
    forged = damage in ("flipped byte", "lying sizes", "out of range")
    assert said == ([texts.INDEX_FORGED.format(path=path)] if forged else [])
    if damage != "directory":  # written anew: the next process extends it again
        grow(db, rows(13)[len(rows(12)):])
        want = reference(db, ws)
        scans.clear()
        with PruningSessionStore(db, ws, **KW) as next_one:
            assert load(next_one) == want
        assert scans == [len(rows(13)) - len(rows(12))]


FRAME = "<4sQ8s32s"  # magic, body length, key id, HMAC (flower/stores/indexfile.py)


def _forged(data: bytes, how: str) -> bytes:
    """``data``'s records with their sites changed and every checksum an agent can compute
    made right: the CRC-32 and a plain SHA-256 where the HMAC goes (it cannot read the key).
    """
    import hashlib
    import struct
    from array import array

    out, pos, step = b"", 0, struct.calcsize(FRAME)
    while pos < len(data):
        magic, size, kid, _ = struct.unpack_from(FRAME, data, pos)
        body = bytearray(data[pos + step: pos + step + size])
        (hlen,) = struct.unpack_from("<I", body)
        head = json.loads(body[4: 4 + hlen])
        n = head["sites"]
        cols = [array("q", body[4 + hlen + 8 * n * c: 4 + hlen + 8 * n * (c + 1)])
                for c in range(4)]
        if how == "lying sizes":
            cols[2] = array("q", [s + 7 for s in cols[2]])
        else:
            cols[0] = array("q", [i + 10_000 for i in cols[0]])
        body[4 + hlen: 4 + hlen + 32 * n] = b"".join(c.tobytes() for c in cols)
        seal = hashlib.sha256(bytes(body)).digest()
        out += struct.pack(FRAME, magic, size, kid, seal) + bytes(body)
        pos += step + size
    return out


def test_records_of_two_processes_for_the_same_rows(db: Path, ws: Path, scans: list[int],
                                                    on_disk: None) -> None:
    """Two processes extended the same index from the same record: the second record
    that starts where the first did is never read, and the copy is right."""
    entries = rows(12)
    grow(db, entries[:30])
    with PruningSessionStore(db, ws, **KW) as store:
        load(store)
    (path,) = index_files(ws)
    first = path.read_bytes()
    grow(db, entries[30:40])
    with PruningSessionStore(db, ws, **KW) as one:
        load(one)
    mine = path.read_bytes()[len(first):]
    path.write_bytes(first)
    grow(db, entries[40:45])
    with PruningSessionStore(db, ws, **KW) as two:
        load(two)
    with path.open("ab") as fh:  # one's record lands after two's
        fh.write(mine)
    grow(db, entries[45:])
    want = reference(db, ws)
    scans.clear()
    with PruningSessionStore(db, ws, **KW) as woken:
        assert load(woken) == want
    assert scans == [len(entries) - 45]


def test_an_index_that_cannot_be_written_costs_only_speed(db: Path, ws: Path,
                                                          on_disk: None,
                                                          caplog: pytest.LogCaptureFixture,
                                                          ) -> None:
    spill = ws / ".flower" / "spill"
    spill.mkdir(parents=True)
    (spill / DIRNAME).write_text("not a directory")
    grow(db, rows(12))
    with PruningSessionStore(db, ws, **KW) as store:
        got = load(store)
    assert got == reference(db, ws)
    assert "could not record the load plan" in caplog.text
    assert (spill / DIRNAME).read_text() == "not a directory"


def test_many_loads_leave_one_record(db: Path, ws: Path, on_disk: None,
                                     scans: list[int]) -> None:
    """A file of many records is written anew as one once it holds 32: a long run's
    index does not become a long list of small reads."""
    entries = rows(40)
    with PruningSessionStore(db, ws, **KW) as store:
        for n in range(2, 40):
            grow(db, entries[len(entries) * (n - 1) // 40: len(entries) * n // 40])
            load(store)
    grow(db, entries[len(entries) * 39 // 40:])
    (path,) = index_files(ws)
    records = path.read_bytes().count(b"FLX2")
    assert records < 10
    want = reference(db, ws)
    scans.clear()
    with PruningSessionStore(db, ws, **KW) as woken:
        assert load(woken) == want
    assert scans == [len(entries) - len(entries) * 39 // 40]


def test_a_woken_process_takes_spill_files_from_the_index(db: Path, ws: Path, on_disk: None,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           ) -> None:
    """The index names each spilled result's file: a woken process neither reads the
    memo nor hashes a body — and a file deleted meanwhile is written again, not pointed
    at."""
    import flower.stores.trimming as trimming

    entries = rows(12)
    grow(db, entries[:40])
    with PruningSessionStore(db, ws, **KW) as store:
        before = load(store)[1]["cleared"]
    grow(db, entries[40:])
    reads: list[str] = []
    real_read, real_write = trimming.SpillMemo._read, trimming.write_spill
    monkeypatch.setattr(trimming.SpillMemo, "_read", lambda self: reads.append("memo"))
    monkeypatch.setattr(trimming, "write_spill",
                        lambda body, d: reads.append("spill") or real_write(body, d))
    with PruningSessionStore(db, ws, **KW) as woken:
        got = load(woken)
    aged_out = got[1]["cleared"] - before  # results that left keep_recent since
    assert aged_out > 0 and reads == ["spill"] * aged_out
    monkeypatch.setattr(trimming.SpillMemo, "_read", real_read)
    assert got == reference(db, ws)
    spill = ws / ".flower" / "spill"
    victim = sorted(spill.glob("*.txt"))[0]
    victim.unlink()
    with PruningSessionStore(db, ws, **KW) as again:
        assert load(again) == reference(db, ws)
    assert victim.exists()


def test_an_index_sealed_with_another_key_is_rebuilt_without_a_word(
        db: Path, ws: Path, scans: list[int], on_disk: None, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A workspace moved to another machine (another user's key): its index is foreign,
    not forged — built again from the rows, and nothing is said."""
    _two_records(db, ws)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "another-machine"))
    want = reference(db, ws)
    scans.clear()
    with PruningSessionStore(db, ws, **KW) as woken:
        assert load(woken) == want
    assert scans[-1] == len(rows(12))
    assert not [r for r in caplog.records if "封印" in r.getMessage()]
    assert (tmp_path / "another-machine" / "flower" / "index.key").stat().st_mode & 0o777 \
        == 0o600
