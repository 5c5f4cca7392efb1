"""Booking from transcripts what a killed process paid for (core/reconcile.py + the
ledger's windows): split responses count once, a call counts for the process that drove
its session then, and reconciling twice — or after the owner's own result — books nothing
twice."""

from __future__ import annotations

import datetime as dt
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flower.core.ledger import Ledger, read
from flower.core.reconcile import calls, unbooked
from flower.usage import call_cost

MODEL = "claude-sonnet-4-5"  # $3 a million input tokens at list price


def stamp(at: float) -> str:
    return dt.datetime.fromtimestamp(at, dt.timezone.utc).isoformat(
        timespec="milliseconds").replace("+00:00", "Z")


def reply(mid: str, at: float, tokens: int, *, parts: int = 1, **extra: Any
          ) -> list[dict[str, Any]]:
    """The transcript entries of one response: one per content block, the same id (the
    last block's usage the smallest here: the largest count is the call's, wherever)."""
    return [{"type": "assistant", "timestamp": stamp(at + i * 0.001), **extra,
             "message": {"id": mid, "model": MODEL, "role": "assistant",
                         "content": [{"type": "text", "text": "x"}],
                         "usage": {"input_tokens": tokens,
                                   "output_tokens": 10 * (i + 1) if i < parts - 1 else 0}}}
            for i in range(parts)]


def usd(tokens: int, out: int = 0) -> float:
    return call_cost({"input_tokens": tokens, "output_tokens": out}, MODEL)


def test_a_response_split_over_entries_is_one_call_at_its_largest_counts() -> None:
    entries = [*reply("m1", 100.0, 1000, parts=3),
               *reply("m2", 101.0, 500, isSidechain=True),  # a worker's call counts too
               *reply("m3", 102.0, 9999, isApiErrorMessage=True),  # no paid call
               {"type": "assistant", "timestamp": stamp(103.0),
                "message": {"id": "m4", "model": "<synthetic>", "usage": {"input_tokens": 0}}},
               {"type": "user", "message": {"role": "user", "content": "hi"}}]
    found = calls(entries)
    assert set(found) == {"m1", "m2"}
    assert found["m1"].usage == {"input_tokens": 1000, "output_tokens": 20}
    assert found["m1"].at == pytest.approx(100.002)


def reader(transcript: dict[str, list[dict[str, Any]]]):
    def read(sid: str, after: float) -> list[dict[str, Any]]:
        return list(transcript.get(sid, []))
    return read


def test_a_call_counts_for_the_process_that_drove_its_session_then(tmp_path: Path) -> None:
    t0 = time.time() - 100
    first = Ledger(tmp_path, "first")
    first.start()
    first._attempt_at = t0
    first.session("S")
    first.call("a1", usd(1000), "S")
    first.add(usd(1000))  # the result covers a1: the window moves on
    second = Ledger(tmp_path, "second")  # a wake resumes S later and is killed
    second.start()
    second._attempt_at = t0 + 50
    second.session("S")
    transcript = {"S": [*reply("a1", t0 + 1, 1000), *reply("b1", t0 + 51, 2000),
                        *reply("b2", t0 + 52, 3000, parts=2)]}
    third = Ledger(tmp_path, "third")
    assert third.reconcile(reader(transcript)) == pytest.approx(usd(2000) + usd(3000, 10))
    doc = read(tmp_path)
    assert doc["runs"]["second"]["spent_usd"] == pytest.approx(usd(2000) + usd(3000, 10))
    assert doc["runs"]["first"]["spent_usd"] == pytest.approx(usd(1000))
    assert third.reconcile(reader(transcript)) == 0.0  # twice: nothing twice
    assert Ledger(tmp_path, "fourth").reconcile(reader(transcript)) == 0.0


def test_after_the_owners_own_result_nothing_is_booked_again(tmp_path: Path) -> None:
    t0 = time.time() - 10
    owner = Ledger(tmp_path, "owner")
    owner.start()
    owner._attempt_at = t0
    owner.session("S")
    owner.call("m1", usd(1000), "S")  # booked live, in its window
    transcript = {"S": [*reply("m1", t0 + 1, 1000), *reply("m2", t0 + 2, 1000)]}
    # m2 reached the transcript but not the ledger (the kill fell in between)
    assert Ledger(tmp_path, "wake").reconcile(reader(transcript)) == pytest.approx(usd(1000))
    done = Ledger(tmp_path, "done")
    done.start()
    done._attempt_at = t0
    done.session("T")
    done.call("n1", usd(1000), "T")
    done.add(0.5)  # the result: every call so far is in it
    late = {"T": [*reply("n1", t0 + 1, 1000), *reply("n2", t0 + 2, 1000)]}
    assert Ledger(tmp_path, "wake2").reconcile(reader(late)) == 0.0


def test_the_reading_process_leaves_its_own_sessions_alone(tmp_path: Path) -> None:
    t0 = time.time() - 10
    me = Ledger(tmp_path, "me")
    me.start()
    me._attempt_at = t0
    me.session("S")
    assert me.reconcile(reader({"S": reply("x", t0 + 1, 1000)})) == 0.0


@st.composite
def histories(draw: Any) -> tuple[list[tuple[str, float, int, int]], set[str], float]:
    """Calls (id, seconds after the start, tokens, parts); which of them the killed
    process booked live; when its window opened."""
    n = draw(st.integers(min_value=0, max_value=12))
    ids = [f"msg_{i}" for i in range(n)]
    made = [(mid, float(draw(st.integers(min_value=0, max_value=100))),
             draw(st.integers(min_value=1, max_value=50_000)),
             draw(st.integers(min_value=1, max_value=3))) for mid in ids]
    live = set(draw(st.lists(st.sampled_from(ids), unique=True))) if ids else set()
    return made, live, draw(st.integers(min_value=0, max_value=100)) + 0.5


@settings(max_examples=60, deadline=None)
@given(history=histories(), repeat=st.booleans())
def test_reconciling_books_each_unbooked_call_once(history, repeat: bool) -> None:
    made, live, opened = history
    t0 = time.time() - 1000
    with tempfile.TemporaryDirectory() as d:
        killed = Ledger(d, "killed")
        killed.start()
        killed._attempt_at = t0 + opened
        killed.session("S")
        for mid, at, tokens, parts in made:
            if mid in live and at >= opened:  # what streamed before the kill
                killed.call(mid, call_cost({"input_tokens": tokens,
                                            "output_tokens": 10 * (parts - 1)}, MODEL), "S")
        on_disk = read(d)["runs"]["killed"]["spent_usd"]
        transcript = {"S": [e for mid, at, tokens, parts in made
                            for e in reply(mid, t0 + at, tokens, parts=parts)]}
        want = sum(usd(tokens, 10 * (parts - 1)) for mid, at, tokens, parts in made
                   if at >= opened and mid not in live)
        wake = Ledger(d, "wake")
        assert wake.reconcile(reader(transcript)) == pytest.approx(want, abs=1e-5)
        if repeat:
            assert Ledger(d, "again").reconcile(reader(transcript)) == 0.0
        every = sum(usd(tokens, 10 * (parts - 1)) for mid, at, tokens, parts in made
                    if at >= opened)
        assert read(d)["runs"]["killed"]["spent_usd"] == pytest.approx(
            on_disk + want, abs=1e-5)
        assert wake.total_usd == pytest.approx(every, abs=1e-5)
        assert not unbooked(read(d)["runs"], reader(transcript), skip="x")


# processes one after another on one session: attempts that end with a result, and a kill
# that may come anywhere — a fresh process books every call exactly once
plans = st.lists(st.lists(st.tuples(st.integers(min_value=1, max_value=4),  # calls
                                    st.booleans()),  # the attempt ends with its result
                          min_size=1, max_size=3),
                 min_size=1, max_size=4)


@settings(max_examples=60, deadline=None)
@given(plan=plans, lost=st.integers(min_value=0, max_value=4))
def test_processes_in_turn_each_call_booked_once_whatever_was_killed(plan, lost: int) -> None:
    from types import SimpleNamespace
    from unittest import mock

    import flower.core.ledger as ledger_mod

    now = [time.time() - 10_000]

    def clock() -> float:
        now[0] += 1.0
        return now[0]

    transcript: list[dict[str, Any]] = []
    every = 0.0
    n = 0
    with tempfile.TemporaryDirectory() as d, mock.patch.object(
            ledger_mod, "time", SimpleNamespace(time=clock, monotonic=time.monotonic)):
        for p, attempts in enumerate(plan):
            proc = Ledger(d, f"p{p}")
            proc.start()
            for a, (k, finished) in enumerate(attempts):
                proc.begin_attempt()
                proc.session("S")
                killed_here = p == len(plan) - 1 and a == len(attempts) - 1
                for j in range(k):
                    n += 1
                    cost = usd(1000 * n)
                    transcript += reply(f"m{n}", clock(), 1000 * n)
                    every += cost
                    # the last process is killed: its last `lost` calls never got booked
                    if not (killed_here and j >= k - lost):
                        proc.call(f"m{n}", cost, "S")
                if finished and not killed_here:
                    proc.add(sum(usd(1000 * i) for i in range(n - k + 1, n + 1)))
        wake = Ledger(d, "wake")
        wake.reconcile(reader({"S": transcript}))
        assert wake.total_usd == pytest.approx(every, abs=1e-5)
        assert Ledger(d, "again").reconcile(reader({"S": transcript})) == 0.0
