"""How a duration, a time and a cost read in flower's reports (``flower log``, ``flower
analyze``, a run's closing line). Its own module so the event renderer and the log view can
both spell them alike without importing each other."""

from __future__ import annotations

import datetime as _dt
import math

from flower import texts

__all__ = ["fmt_cost", "fmt_duration", "fmt_time"]


def fmt_duration(seconds: float | None) -> str:
    """``12.3s`` / ``4m05s`` / ``1h03m``; ``?`` when unknown."""
    if seconds is None or not math.isfinite(seconds):
        return texts.LOG_UNKNOWN
    if seconds < 60:
        return texts.LOG_SECONDS.format(s=seconds)
    total = int(seconds)
    if total < 3600:
        return texts.LOG_MINUTES.format(m=total // 60, s=total % 60)
    return texts.LOG_HOURS.format(h=total // 3600, m=total % 3600 // 60)


def fmt_time(stamp: float | None) -> str:
    """Local ``YYYY-MM-DD HH:MM:SS`` of a unix time; ``?`` when unknown or out of range."""
    if stamp is None:
        return texts.LOG_UNKNOWN
    try:
        return _dt.datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M:%S")
    except (ValueError, OverflowError, OSError):
        return texts.LOG_UNKNOWN


def fmt_cost(cost: float) -> str:
    """Dollars to four decimals, as the manifest keeps them."""
    return texts.LOG_COST.format(cost=cost)
