"""``budget.json``: what a task may spend and how long it may run, and what it has used.

A long run is one nobody watches, so its caps must hold for the whole *task* — every step,
every wake, until ``--new`` — not for one process. The task is what the lineage is
(``lineage.json`` in the same run dir); this file sits beside it and leaves the lineage and
manifest formats alone::

    {"budget_usd": 20.0, "max_hours": 8.0,
     "runs": {"<run id>": {"spent_usd": 3.1, "elapsed_s": 1800.0, "stopped": "budget",
                           "rate": 0.8,
                           "sessions": {"<session id>": {"from": 1767000000.5,
                                                         "after": 1767000100.0,
                                                         "ids": ["msg_…"]}}}}}

Each process owns the entry under its own run id (the manifest's ``run``) and rewrites only
that one, under a cross-process lock, atomically, after every API call (priced from its
usage as it arrives, at the rate the CLI's own session totals show) and every session
result: a kill -9 loses at most the call in flight. The task's spend and time are the sums over all
entries; ``stopped`` says why that process stopped at a cap (``budget`` or ``time``).

``sessions`` are the windows a kill can leave open: per session when this process first
drove it (``from``), the time from which no session result has covered its calls (``after``:
the attempt's start, or the last result) and the message ids booked since. A later process
reads those sessions' transcripts and books the calls in a window that no entry has booked
(``reconcile``, ``reconcile.py``) — before it first checks the caps. ``rate`` is that
process's CLI totals over list prices.

The caps are the last ones set: ``--budget`` on a wake replaces the cap for the *total*,
a wake without it keeps what the file says. Like the lineage, the ledger is a bonus that
never breaks a run: an unreadable file is moved aside and counts as empty, a failed write
is logged and the run goes on.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from flower.core.paths import atomic_write, file_lock, move_aside
from flower.core.privacy import PRIVATE_FILE
from flower.core.reconcile import ReadSession, booked, unbooked

FILENAME = "budget.json"
#: ``StepResult.error`` of a step stopped at a cap nobody raised.
BUDGET = "budget"
TIME = "time"
CAP_ERRORS = (BUDGET, TIME)
LOCK_TIMEOUT = 10.0
log = logging.getLogger("flower.ledger")


def _number(value: Any) -> float | None:
    """A positive finite float, or None (a cap of 0, a negative or a NaN means "no cap")."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) and value > 0 else None


def _amount(value: Any) -> float:
    """A spend or a duration read from disk: non-negative finite, else 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    value = float(value)
    return value if math.isfinite(value) and value > 0 else 0.0


def parse(raw: bytes) -> dict[str, Any]:
    """The ledger document from the file's bytes, every field checked; ``ValueError`` when
    it is not a ledger. Unknown or broken entries are dropped, never guessed at."""
    data = json.loads(raw.decode("utf-8"))
    if not isinstance(data, dict):
        raise ValueError("not an object")
    runs: dict[str, dict[str, Any]] = {}
    for run_id, entry in (data.get("runs") or {}).items():
        if isinstance(run_id, str) and isinstance(entry, dict):
            stopped = entry.get("stopped")
            runs[run_id] = {"spent_usd": _amount(entry.get("spent_usd")),
                            "elapsed_s": _amount(entry.get("elapsed_s")),
                            "stopped": stopped if stopped in CAP_ERRORS else None}
            rate, sessions = _number(entry.get("rate")), _windows(entry.get("sessions"))
            if rate is not None:
                runs[run_id]["rate"] = rate
            if sessions:
                runs[run_id]["sessions"] = sessions
    source = data.get("caps_from")
    return {"budget_usd": _number(data.get("budget_usd")),
            "max_hours": _number(data.get("max_hours")), "runs": runs,
            "caps_from": source if isinstance(source, str) and source else None}


def _windows(raw: Any) -> dict[str, dict[str, Any]]:
    """The open windows of an entry (``{sid: {"after": t, "ids": [...]}}``), checked."""
    out: dict[str, dict[str, Any]] = {}
    if isinstance(raw, dict):
        for sid, w in raw.items():
            after = _number(w.get("after")) if isinstance(w, dict) else None
            if isinstance(sid, str) and sid and after is not None:
                ids = w.get("ids") if isinstance(w.get("ids"), list) else []
                start = _number(w.get("from"))
                out[sid] = {"from": min(start or after, after), "after": after,
                            "ids": [i for i in ids if isinstance(i, str)]}
    return out


def read(run_dir: str | Path) -> dict[str, Any] | None:
    """The ledger of ``run_dir`` for readers (``flower log``), or None; never moves a file."""
    try:
        return parse((Path(run_dir) / FILENAME).read_bytes())
    except (OSError, ValueError):
        return None


def totals(doc: dict[str, Any]) -> tuple[float, float]:
    """(spent USD, elapsed seconds) of the whole task."""
    runs = doc.get("runs") or {}
    return (round(sum(e["spent_usd"] for e in runs.values()), 6),
            round(sum(e["elapsed_s"] for e in runs.values()), 3))


class Ledger:
    """The caps of the task and this process's share of what was used.

    ``add`` is called with every session result's cost; ``exceeded`` says which cap is
    passed; ``raise_cap`` is what an answer to the cap question does. The clock runs from
    ``start`` (a Runtime's first step) and stops while ``paused`` (a cap question waiting:
    a person's thinking time is not the run's working time).
    """

    def __init__(self, run_dir: str | Path | None, run_id: str, *,
                 budget: float | None = None, max_hours: float | None = None) -> None:
        #: None: counted in memory only (a one-shot outside any task, ``flower once``)
        self.path = Path(run_dir) / FILENAME if run_dir is not None else None
        self.run_id = run_id
        self.spent_usd = 0.0  # this process
        self.stopped: str | None = None  # this process stopped at this cap
        self.budget_usd: float | None = None
        self.max_hours: float | None = None
        self._others_usd = 0.0  # every other process of the task, as last read
        self._others_s = 0.0
        self._started: float | None = None  # monotonic
        self._paused_s = 0.0
        self._pause_from: float | None = None
        self._pending_usd = 0.0  # calls priced as they came, not yet covered by a result
        self._pending_raw = 0.0  # the same at list prices
        self._calls: dict[str, float] = {}  # message id → its list price (split messages)
        self._rate = 1.0  # the CLI's own totals over list prices, as last seen
        self._open: dict[str, dict[str, Any]] = {}  # session → its window (see the top)
        self._attempt_at: float | None = None  # wall time the attempt in flight began
        self._caps_set = False  # this object set the caps: they win over the file's
        self.caps_from: str | None = None  # the Temporal submission that set the caps
        self._mine_on_disk = False  # this run's entry has been written (a reset keeps it out)
        # the task's latest rate: a wake's first calls are priced as the last process's were
        rates = [e["rate"] for e in self._load()["runs"].values() if "rate" in e]
        self._rate = rates[-1] if rates else 1.0
        self.set_caps(budget=budget, max_hours=max_hours)

    # -- reading ----------------------------------------------------------------------------

    def _load(self) -> dict[str, Any]:
        """Read the file (a corrupt one is moved aside once and counts as empty) and adopt
        its caps unless this object set its own, and the other runs' totals."""
        empty: dict[str, Any] = {"budget_usd": None, "max_hours": None, "runs": {}}
        if self.path is None:
            return empty
        try:
            doc = parse(self.path.read_bytes())
        except FileNotFoundError:
            doc = empty
        except (OSError, ValueError) as exc:
            aside = move_aside(self.path) if self.path.exists() else None
            log.warning("flower: %s was unreadable (%s); kept it as %s, counting from zero",
                        self.path, exc, aside)
            doc = empty
        if not self._caps_set:
            self.budget_usd, self.max_hours = doc["budget_usd"], doc["max_hours"]
            self.caps_from = doc.get("caps_from")
        others = {k: v for k, v in doc["runs"].items() if k != self.run_id}
        self._others_usd, self._others_s = totals({"runs": others})
        return doc

    @property
    def total_usd(self) -> float:
        """What the task has spent, this process included."""
        return round(self._others_usd + self.spent_usd + self._pending_usd, 6)

    @property
    def elapsed_s(self) -> float:
        """Working time of the task so far, this process included (live)."""
        return self._others_s + self.mine_s()

    def mine_s(self) -> float:
        """This process's working time: since ``start``, less the paused stretches."""
        if self._started is None:
            return 0.0
        now = time.monotonic()
        paused = self._paused_s + (now - self._pause_from if self._pause_from else 0.0)
        return max(0.0, now - self._started - paused)

    @property
    def max_s(self) -> float | None:
        return self.max_hours * 3600.0 if self.max_hours else None

    def left_usd(self) -> float | None:
        """Dollars left under the budget (may be negative); None without a budget."""
        if self.budget_usd is None:
            return None
        return round(self.budget_usd - self.total_usd, 6)

    def left_s(self) -> float | None:
        """Seconds left under the time cap (may be negative); None without one."""
        cap = self.max_s
        return None if cap is None else cap - self.elapsed_s

    def exceeded(self) -> str | None:
        """``"budget"`` or ``"time"`` when that cap is reached, else None (budget first)."""
        left = self.left_usd()
        if left is not None and left <= 0:
            return BUDGET
        left_s = self.left_s()
        if left_s is not None and left_s <= 0:
            return TIME
        return None

    def reading(self, which: str) -> tuple[float, float]:
        """(used, cap) of one cap: dollars for ``budget``, hours for ``time``."""
        if which == BUDGET:
            return self.total_usd, float(self.budget_usd or 0.0)
        return round(self.elapsed_s / 3600.0, 6), float(self.max_hours or 0.0)

    # -- changing -----------------------------------------------------------------------------

    def submitted_caps(self, submission: str, *, budget: float | None = None,
                       max_hours: float | None = None) -> None:
        """A Temporal submission's caps, each of its steps a process of the task: the first
        step to run sets them for the task's total (as ``--budget`` on a wake does), the
        later ones keep what the ledger says (an answer may have raised it since); without
        caps of its own a submission keeps the task's."""
        if self.caps_from != submission:
            self.set_caps(budget=budget, max_hours=max_hours, source=submission)

    def set_caps(self, *, budget: float | None = None, max_hours: float | None = None,
                 source: str | None = None) -> None:
        """New caps for the task's total; ``None`` keeps the cap already recorded."""
        budget, max_hours = _number(budget), _number(max_hours)
        if budget is None and max_hours is None:
            return
        self.caps_from = source
        if budget is not None:
            self.budget_usd = budget
        if max_hours is not None:
            self.max_hours = max_hours
        self._caps_set = True
        self.write()

    def raise_cap(self, which: str, new_cap: float) -> None:
        """An answer to the cap question: the cap becomes ``new_cap`` and the stop is undone."""
        if which == BUDGET:
            self.budget_usd = _number(new_cap) or self.budget_usd
        else:
            self.max_hours = _number(new_cap) or self.max_hours
        self._caps_set = True
        self.stopped = None
        self.write()

    def start(self) -> None:
        """Start this process's clock (idempotent)."""
        if self._started is None:
            self._started = time.monotonic()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The clock stands still inside (a cap question waiting for a person)."""
        if self._pause_from is not None or self._started is None:
            yield
            return
        self._pause_from = time.monotonic()
        try:
            yield
        finally:
            self._paused_s += time.monotonic() - self._pause_from
            self._pause_from = None

    def begin_attempt(self) -> None:
        """A new CLI session starts: what the previous attempt's calls were priced at
        stays spent (no result will replace it), and the attempt's window opens now."""
        if self._pending_usd:
            self.spent_usd = round(self.spent_usd + self._pending_usd, 6)
        self._pending_usd = self._pending_raw = 0.0
        self._calls.clear()
        self._attempt_at = time.time()

    def session(self, session_id: str) -> None:
        """The attempt's session is known: its window is on disk before its first call
        can be paid for, so a kill from now on leaves the transcript to reconcile."""
        if not session_id:
            return
        window = self._open.get(session_id)
        at = self._attempt_at or time.time()
        if window is None:
            self._open[session_id] = {"from": at, "after": at, "ids": []}
        elif window["after"] < at:  # once per attempt and session
            window.update(after=at, ids=[])
        else:
            return
        self.write()

    def call(self, message_id: str, list_usd: float, session_id: str | None = None) -> None:
        """One API call as it arrives (its list price, ``usage.call_cost``): counted and
        written at once, so a kill -9 mid-session loses at most the call in flight. The
        CLI splits one response over several messages sharing its id: counted once."""
        before = self._calls.get(message_id, 0.0)
        if list_usd <= before:
            return
        if message_id not in self._calls and session_id:
            at = self._attempt_at or time.time()
            self._open.setdefault(session_id, {"from": at, "after": at, "ids": []}
                                  )["ids"].append(message_id)
        self._calls[message_id] = list_usd
        self._pending_raw += list_usd - before
        self._pending_usd = round(self._pending_raw * self._rate, 6)
        self.write()

    def add(self, cost_usd: float) -> None:
        """One session result's cost (each is counted once, as it arrives) — then written.
        It replaces the calls priced since the last result, and its ratio to their list
        prices becomes the rate the next calls are priced at."""
        if cost_usd > 0:
            self.spent_usd = round(self.spent_usd + float(cost_usd), 6)
            if self._pending_raw > 0:
                self._rate = float(cost_usd) / self._pending_raw
        self._pending_usd = self._pending_raw = 0.0
        self._calls.clear()
        now = time.time()  # every call so far is in this result: the windows move on
        for window in self._open.values():
            window.update(after=now, ids=[])
        self.write()

    def reconcile(self, read: ReadSession) -> float:
        """Book what other processes of the task paid for and their entries miss — the
        calls in their open windows found in the transcripts (``read``) — before this one
        first checks the caps. Returns the dollars booked; twice books nothing twice."""
        if self.path is None:
            return 0.0
        found = unbooked(self._load()["runs"], read, skip=self.run_id)  # outside the lock
        if not found:
            return 0.0
        added = [0.0]

        def book(runs: dict[str, dict[str, Any]]) -> None:
            seen = booked(runs)
            for run_id, by_session in found.items():
                entry = runs.get(run_id)
                if entry is None:
                    continue
                for sid, priced in by_session.items():
                    window = entry.get("sessions", {}).get(sid)
                    new = {i: usd for i, usd in priced.items() if i not in seen}
                    if window is None or not new:
                        continue
                    usd = round(sum(new.values()) * float(entry.get("rate") or 1.0), 6)
                    entry["spent_usd"] = round(entry["spent_usd"] + usd, 6)
                    window["ids"].extend(new)
                    seen.update(new)
                    added[0] += usd

        if self.write(edit=book):
            self._load()
        if added[0]:
            log.info("flower: booked $%.4f a killed process spent (from its transcript)",
                     added[0])
        return round(added[0], 6)

    def stop(self, which: str) -> None:
        """Nobody raised the cap: this process stops, and the file says why."""
        self.stopped = which
        self.write()

    def reset(self) -> None:
        """A new task (``--new``, or no lineage to wake): earlier runs' spend and time are
        dropped; the caps given to this process stay, a recorded cap goes."""
        if not self._caps_set:
            self.budget_usd = self.max_hours = None
            self.caps_from = None
        self.spent_usd, self.stopped = 0.0, None
        self._pending_usd = self._pending_raw = 0.0
        self._calls.clear()
        self._open = {}
        self._others_usd = self._others_s = 0.0
        self._started = time.monotonic() if self._started is not None else None
        self._paused_s = 0.0
        self.write(keep_others=False)

    def entry(self) -> dict[str, Any]:
        out: dict[str, Any] = {"spent_usd": round(self.spent_usd + self._pending_usd, 6),
                               "elapsed_s": round(self.mine_s(), 3),
                               "stopped": self.stopped}
        if self._rate != 1.0:
            out["rate"] = round(self._rate, 6)
        if self._open:
            out["sessions"] = {sid: {"from": w["from"], "after": w["after"],
                                     "ids": list(w["ids"])} for sid, w in self._open.items()}
        return out

    def write(self, *, keep_others: bool = True,
              edit: Callable[[dict[str, Any]], None] | None = None) -> bool:
        """Rewrite this run's entry (and the caps); other runs' entries are kept as they are
        on disk (``edit`` may change them, under the same lock). False (and one log line)
        when the disk refused."""
        if self.path is None:
            return True
        try:
            with file_lock(self.path.with_name(self.path.name + ".lock"),
                           timeout=LOCK_TIMEOUT):
                doc = self._load() if keep_others else {"runs": {}}
                runs = dict(doc["runs"]) if keep_others else {}
                if edit is not None:
                    edit(runs)
                if self._started is not None or self.spent_usd or self._pending_usd or \
                        self.stopped or self._open or self._mine_on_disk:
                    runs[self.run_id] = self.entry()
                    self._mine_on_disk = True
                body: dict[str, Any] = {"budget_usd": self.budget_usd,
                                        "max_hours": self.max_hours, "runs": runs}
                if self.caps_from:
                    body["caps_from"] = self.caps_from
                atomic_write(self.path, json.dumps(body, ensure_ascii=False, indent=2),
                             mode=PRIVATE_FILE)
        except OSError as exc:  # the ledger must never break the run it counts
            log.warning("flower: could not write %s: %s", self.path, exc)
            return False
        return True


# -- the answer to a cap question ------------------------------------------------------------

_PERCENT = re.compile(r"^\+?\s*(\d+(?:\.\d+)?)\s*[%％]$")
_NUMBER = re.compile(r"^\+?\s*[$＄]?\s*(\d+(?:\.\d+)?)\s*(?:[$＄]|美元|刀|h|小时|hours?)?$",
                     re.IGNORECASE)


def raised_cap(answer: str, cap: float, *, stop_words: tuple[str, ...] = ()) -> float | None:
    """The new cap an answer asks for, or None for "stop" (or an answer that says nothing
    clear: when in doubt the run stops rather than spends).

    ``+50%`` / ``+100%`` (any percent) raise the cap by that share of it; a plain number is
    an amount to *add* — dollars to a budget, hours to a time cap (the question is "再加多少?",
    how much more). ``stop_words`` (e.g. ``停下``) and zero mean stop.
    """
    text = (answer or "").strip()
    if not text or any(text.startswith(w) for w in stop_words if w):
        return None
    text = text.replace(",", "").replace(" ", "")
    m = _PERCENT.match(text)
    if m:
        share = float(m.group(1)) / 100.0
        return round(cap * (1.0 + share), 6) if share > 0 and math.isfinite(share) else None
    m = _NUMBER.match(text)
    if m:
        more = float(m.group(1))
        return round(cap + more, 6) if more > 0 and math.isfinite(more) else None
    return None


def fmt_duration(seconds: float) -> str:
    """``1:05:09`` for an hour or more, ``5:09`` below: what the status bar already shows."""
    s = max(0, int(seconds))
    if s >= 3600:
        return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
    return f"{s // 60}:{s % 60:02d}"
