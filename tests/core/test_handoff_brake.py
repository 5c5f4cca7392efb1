"""The handoff brake's counting rule: only unproductive generations count, N in a row.

A generation is what one session of a step did before it handed off: its first context
reading (``start``), its main-thread API calls (``rounds``) and whether its document
degraded. The end-to-end side (the real CLI against the fake) is in tests/e2e/test_handoff.py.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from flower import HandoffPolicy, texts
from flower.core.handoff_control import MIN_ROUNDS, START_MARGIN, Brake, Generation

AT = 40_000  # a 60K window with 20K room
MARGIN = int(AT * START_MARGIN)
LOW = 12_850  # the measured start of a productive generation on that window

generations = st.builds(Generation, start=st.integers(0, 2 * AT),
                        rounds=st.integers(0, 60), degraded=st.booleans())


def run_step(brake: Brake, gens: list[Generation]) -> int | None:
    """Feed a step's generations in order, as HandoffControl does; the index of the
    handoff the brake refused, or None when every handoff happened."""
    for i, gen in enumerate(gens):
        if brake.stops(gen, AT):
            return i
        brake.record(gen, AT)
    return None


def test_the_boundaries_of_a_stalled_generation() -> None:
    assert Generation(start=AT - MARGIN, rounds=40).stalled(AT)
    assert not Generation(start=AT - MARGIN - 1, rounds=40).stalled(AT)
    assert Generation(start=LOW, rounds=MIN_ROUNDS - 1).stalled(AT)
    assert not Generation(start=LOW, rounds=MIN_ROUNDS).stalled(AT)
    assert Generation(start=LOW, rounds=40, degraded=True).unproductive(AT)
    assert not Generation(start=LOW, rounds=40).unproductive(AT)


@given(st.integers(0, 10), st.integers(0, 200))
def test_productive_generations_never_stop_a_step(limit: int, n: int) -> None:
    # a ten-hour step: any number of handoffs, each after real work
    assert run_step(Brake(limit), [Generation(start=LOW, rounds=41)] * n) is None


@given(st.integers(0, 10), st.integers(0, 5))
def test_a_runaway_stops_after_exactly_limit_handoffs(limit: int, productive: int) -> None:
    # every successor starts over the line; productive ones before it change nothing
    gens = [Generation(start=LOW, rounds=41)] * productive + \
        [Generation(start=45_000, rounds=1)] * (limit + 5)
    assert run_step(Brake(limit), gens) == productive + limit


@given(st.integers(1, 6), st.lists(generations, max_size=40))
def test_stops_exactly_when_limit_unproductive_handoffs_precede_a_stalled_one(
        limit: int, gens: list[Generation]) -> None:
    stopped = run_step(Brake(limit), gens)
    # the model: a running count that any productive handoff resets
    streak, expected = 0, None
    for i, gen in enumerate(gens):
        if streak >= limit and gen.stalled(AT):
            expected = i
            break
        streak = streak + 1 if gen.unproductive(AT) else 0
    assert stopped == expected


def test_a_productive_generation_resets_the_count() -> None:
    stall, good = Generation(start=45_000, rounds=1), Generation(start=LOW, rounds=41)
    brake = Brake(2)
    assert run_step(brake, [stall, stall, good, stall, stall]) is None
    assert len(brake.run) == 2 and brake.stops(stall, AT)
    assert not brake.stops(good, AT)  # a productive one is never refused


def test_a_degraded_document_counts_even_when_the_generation_worked() -> None:
    worked_but_lost = Generation(start=LOW, rounds=41, degraded=True)
    brake = Brake(1)
    brake.record(worked_but_lost, AT)
    assert brake.stops(Generation(start=45_000, rounds=1), AT)


def test_the_reason_names_the_measured_start_and_calls() -> None:
    brake = Brake(2)
    brake.record(Generation(start=45_000, rounds=1), AT)
    brake.record(Generation(start=12_000, rounds=2, degraded=True), AT)
    lim = HandoffPolicy(window=60_000, headroom=20_000)
    text = brake.reason(Generation(start=44_100, rounds=1), lim)
    assert "45.0K · 1 次; 12.0K · 2 次 · 降级; 44.1K · 1 次" in text
    assert text == texts.HANDOFF_BRAKE.format(
        n=2, limit=2, gens="45.0K · 1 次; 12.0K · 2 次 · 降级; 44.1K · 1 次", at="40K",
        margin="10K", rounds=MIN_ROUNDS, window="60K")


def test_the_reason_shows_only_the_last_generations() -> None:
    brake = Brake(20)
    for i in range(20):
        brake.record(Generation(start=41_000 + i * 100, rounds=1), AT)
    text = brake.reason(Generation(start=50_000, rounds=0), HandoffPolicy(window=60_000,
                                                                          headroom=20_000))
    assert "41.0K" not in text and "42.5K · 1 次" in text and "50.0K · 0 次" in text
