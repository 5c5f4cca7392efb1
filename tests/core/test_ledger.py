"""The ledger's arithmetic and the cap answer's parsing: what a task may still spend, across
processes sharing one run dir, and what "+50%" or "20" raise a cap to."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flower import texts
from flower.core.caps import attempt_budget, continue_hint
from flower.core.ledger import FILENAME, Ledger, fmt_duration, raised_cap, read
from flower.usage import call_cost

STOP = (texts.CAP_OPTIONS[-1],)
caps = st.floats(min_value=0.01, max_value=1e6, allow_nan=False)
costs = st.lists(st.floats(min_value=0, max_value=50, allow_nan=False), max_size=30)


def test_spend_of_every_process_adds_up_and_the_cap_is_kept_by_a_wake(tmp_path: Path) -> None:
    first = Ledger(tmp_path, "run-1", budget=2.0)
    first.start()
    first.add(0.75)
    first.add(0.5)
    woke = Ledger(tmp_path, "run-2")  # a wake without --budget
    assert woke.budget_usd == 2.0 and woke.total_usd == pytest.approx(1.25)
    woke.start()
    woke.add(0.5)
    assert woke.left_usd() == pytest.approx(0.25) and woke.exceeded() is None
    woke.add(0.3)
    assert woke.exceeded() == "budget"
    doc = read(tmp_path)
    assert doc is not None and set(doc["runs"]) == {"run-1", "run-2"}
    assert stat.S_IMODE((tmp_path / FILENAME).stat().st_mode) == 0o600


def test_budget_on_a_wake_replaces_the_cap_for_the_total(tmp_path: Path) -> None:
    Ledger(tmp_path, "a", budget=1.0).add(1.1)
    woke = Ledger(tmp_path, "b", budget=3.0)
    assert woke.budget_usd == 3.0 and woke.left_usd() == pytest.approx(1.9)
    assert Ledger(tmp_path, "c").budget_usd == 3.0


def test_reset_drops_earlier_runs_and_a_recorded_cap(tmp_path: Path) -> None:
    Ledger(tmp_path, "a", budget=1.0, max_hours=2).add(0.4)
    fresh = Ledger(tmp_path, "b")
    fresh.reset()
    assert (fresh.budget_usd, fresh.max_hours, fresh.total_usd) == (None, None, 0.0)
    given_now = Ledger(tmp_path, "c", budget=5)
    given_now.reset()  # a cap given to this process survives its own reset
    assert given_now.budget_usd == 5 and read(tmp_path)["runs"] == {}


def test_stop_is_recorded_and_a_raise_undoes_it(tmp_path: Path) -> None:
    lg = Ledger(tmp_path, "a", budget=1.0)
    lg.add(1.0)
    lg.stop("budget")
    assert read(tmp_path)["runs"]["a"]["stopped"] == "budget"
    lg.raise_cap("budget", 2.0)
    assert read(tmp_path)["runs"]["a"]["stopped"] is None and read(tmp_path)["budget_usd"] == 2


def test_a_corrupt_ledger_is_moved_aside_and_counts_as_empty(tmp_path: Path) -> None:
    (tmp_path / FILENAME).write_text("{not json", encoding="utf-8")
    lg = Ledger(tmp_path, "a")
    assert lg.total_usd == 0 and lg.budget_usd is None
    assert list(tmp_path.glob(f"{FILENAME}.corrupt-*"))


def test_time_cap_counts_working_time_only(tmp_path: Path, monkeypatch) -> None:
    now = [1000.0]
    monkeypatch.setattr("flower.core.ledger.time.monotonic", lambda: now[0])
    lg = Ledger(tmp_path, "a", max_hours=1.0)
    lg.start()
    now[0] += 1800
    with lg.paused():  # a cap question waiting for a person: the clock stands still
        now[0] += 7200
    assert lg.elapsed_s == pytest.approx(1800) and lg.exceeded() is None
    now[0] += 1800
    assert lg.exceeded() == "time"
    lg.write()
    assert Ledger(tmp_path, "b").elapsed_s == pytest.approx(3600)  # a wake knows it


@settings(deadline=None, max_examples=40)  # each add is a real fsynced write
@given(costs, caps)
def test_left_is_cap_minus_everything_added(tmp_path_factory, spent: list[float],
                                            cap: float) -> None:
    d = tmp_path_factory.mktemp("l")
    lg = Ledger(d, "a", budget=cap)
    for c in spent:
        lg.add(c)
    assert lg.left_usd() == pytest.approx(cap - sum(spent), abs=1e-4)
    assert (lg.exceeded() == "budget") == (lg.left_usd() <= 0)
    # an attempt never gets more than what is left, and always something to start with
    given_own = attempt_budget(None, lg)
    assert given_own is not None and 0 < given_own <= max(lg.left_usd(), 0.0001)
    assert attempt_budget(0.001, lg) <= 0.001


@given(caps, st.integers(min_value=1, max_value=500))
def test_a_percent_raises_by_that_share_of_the_cap(cap: float, pct: int) -> None:
    # the new cap is kept to the millionth (of a dollar or an hour): that close, no closer
    assert raised_cap(f"+{pct}%", cap) == pytest.approx(cap * (1 + pct / 100), abs=1e-6)
    assert raised_cap(f"{pct}%", cap) == pytest.approx(cap * (1 + pct / 100), abs=1e-6)


@given(caps, st.floats(min_value=0.01, max_value=1e5, allow_nan=False))
def test_a_typed_number_is_an_amount_to_add(cap: float, more: float) -> None:
    typed = f"{more:.2f}"
    assert raised_cap(typed, cap) == pytest.approx(cap + float(typed), abs=1e-6)
    assert raised_cap(f"${typed}", cap) == pytest.approx(cap + float(typed), abs=1e-6)


@given(st.text(max_size=12))
def test_anything_else_stops_rather_than_spends(answer: str) -> None:
    new = raised_cap(answer, 10.0, stop_words=STOP)
    assert new is None or new > 10.0


@pytest.mark.parametrize("answer", ["停下", "停下 吧", "", "  ", "0", "+0%", "不知道", "-5"])
def test_stop_answers(answer: str) -> None:
    assert raised_cap(answer, 20.0, stop_words=STOP) is None


def test_the_options_shown_parse_to_what_they_say() -> None:
    half, double, stop = texts.CAP_OPTIONS
    assert raised_cap(half, 20.0, stop_words=STOP) == 30.0
    assert raised_cap(double, 20.0, stop_words=STOP) == 40.0
    assert raised_cap(stop, 20.0, stop_words=STOP) is None


def test_question_and_hint_texts(tmp_path: Path) -> None:
    lg = Ledger(tmp_path, "a", budget=20)
    lg.add(20.31)
    assert texts.CAP_BUDGET_QUESTION.format(cap=20, spent=20.31) == \
        "预算 $20.00 已用完(已花 $20.31)— 再加多少?"
    assert "flower --budget 40" in continue_hint("budget", lg)
    assert fmt_duration(3725) == "1:02:05" and fmt_duration(65) == "1:05"


def test_ledger_file_is_plain_json_beside_the_lineage(tmp_path: Path) -> None:
    lg = Ledger(tmp_path, "r", budget=1.5, max_hours=8)
    lg.start()
    lg.add(0.2)
    doc = json.loads((tmp_path / FILENAME).read_text())
    assert doc["budget_usd"] == 1.5 and doc["max_hours"] == 8
    assert doc["runs"]["r"]["spent_usd"] == 0.2


def test_a_one_shot_ledger_counts_in_memory_and_leaves_the_task_alone(tmp_path: Path) -> None:
    Ledger(tmp_path, "task", budget=1.0).add(1.5)  # the task's budget is spent
    once = Ledger(None, "once")  # flower once: not a session of the task
    once.add(0.2)
    assert once.exceeded() is None and once.total_usd == 0.2
    assert set(read(tmp_path)["runs"]) == {"task"}


# --- calls priced as they arrive (a kill -9 before the session's result loses nothing) -------

CALLS = st.lists(st.tuples(st.sampled_from(["m1", "m2", "m3"]),
                           st.floats(min_value=0, max_value=2, allow_nan=False)), max_size=20)


@given(calls=CALLS)
def test_a_response_split_over_messages_is_counted_once_at_its_largest(calls) -> None:
    led = Ledger(None, "r")
    for mid, usd in calls:
        led.call(mid, usd)
    best: dict[str, float] = {}
    for mid, usd in calls:
        best[mid] = max(best.get(mid, 0.0), usd)
    assert led.total_usd == pytest.approx(sum(best.values()), abs=1e-5)
    led.add(1.5)  # the session's result replaces what was priced before it
    assert led.total_usd == pytest.approx(1.5)


def test_the_clis_own_totals_set_the_rate_of_the_next_calls(tmp_path: Path) -> None:
    led = Ledger(tmp_path, "r")
    led.call("a", 0.10)
    led.add(0.20)  # the CLI charged twice the list price
    led.call("b", 0.10)
    assert led.total_usd == pytest.approx(0.40)
    on_disk = json.loads((tmp_path / "budget.json").read_text())["runs"]["r"]["spent_usd"]
    assert on_disk == pytest.approx(0.40)  # written at once: a kill -9 now keeps it


def test_call_cost_by_hand() -> None:
    usage = {"input_tokens": 1_000_000, "output_tokens": 100_000,
             "cache_creation_input_tokens": 200_000, "cache_read_input_tokens": 1_000_000,
             "cache_creation": {"ephemeral_1h_input_tokens": 100_000}}
    # sonnet: $3 in, $15 out; 100k at 1.25×, 100k at 2×, 1M read at 0.1×
    want = (1_000_000 + 100_000 * 1.25 + 100_000 * 2 + 1_000_000 * 0.1) * 3 / 1e6 + 1.5
    assert call_cost(usage, "claude-sonnet-4-5") == pytest.approx(want)
    assert call_cost({"input_tokens": 1_000_000}, "claude-haiku-4-5") == pytest.approx(1.0)
    assert call_cost(None, "x") == 0.0


def test_a_temporal_submission_sets_the_caps_once_and_later_ones_keep_or_replace_them(
        tmp_path: Path) -> None:
    """Each step of a submission is its own process of the task: the first sets the
    submitted cap, the later ones keep an answer's raise; another submission without a
    cap keeps the task's, one with a cap replaces it."""
    step1 = Ledger(tmp_path, "wf-a#1.1")
    step1.submitted_caps("wf-a", budget=1.0)
    step1.add(0.8)
    step1.raise_cap("budget", 2.0)  # answered in step 1
    step2 = Ledger(tmp_path, "wf-a#2.1")
    step2.submitted_caps("wf-a", budget=1.0)
    assert step2.budget_usd == 2.0 and step2.total_usd == pytest.approx(0.8)
    other = Ledger(tmp_path, "wf-b#1.1")
    other.submitted_caps("wf-b")
    assert other.budget_usd == 2.0 and other.total_usd == pytest.approx(0.8)
    third = Ledger(tmp_path, "wf-c#1.1")
    third.submitted_caps("wf-c", budget=0.5)
    assert third.budget_usd == 0.5 and third.exceeded() == "budget"
    assert read(tmp_path)["caps_from"] == "wf-c"


def test_a_wake_prices_its_first_calls_at_the_rate_the_task_last_saw(tmp_path: Path) -> None:
    """The CLI bills its default model below the list price the table starts from: a wake
    killed before its first result would book every call too high without the rate."""
    first = Ledger(tmp_path, "first")
    first.call("a", 0.10)
    first.add(0.08)  # the CLI's own total: 0.8 × list
    wake = Ledger(tmp_path, "wake")
    wake.call("b", 0.10)
    assert wake.total_usd == pytest.approx(0.08 + 0.08)
    assert Ledger(None, "once")._rate == 1.0
