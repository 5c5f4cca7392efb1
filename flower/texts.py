"""Every user-facing string flower prints or hands to a model, in one place so it can be
translated. The reference is Chinese; keep wording stable — tests and users rely on it.

Sections are owned by the module named in the heading; add new strings under it.
"""

from __future__ import annotations

# --- stores (trim / prune) -------------------------------------------------------------

# --- resilience / runtime ---------------------------------------------------------------

# Sent when a step resumes after a failure. Deliberately no error details: the model needs
# "you were cut off, continue", not whether it was ENOTFOUND or 503.
RESUME_PROMPT = (
    "上一轮在中途被打断,没有跑完。检查一下工作台里已经落盘的东西,从中断处接着做,不要重头来过。"
)
OFFLINE_WAIT = "{host}:{port} 不可达,等待恢复(最多 {minutes} 分钟)"
OFFLINE_WAIT_SECONDS = "{host}:{port} 不可达,等待恢复(最多 {seconds} 秒)"
ONLINE_AGAIN = "{host}:{port} 恢复,继续"

# --- env / credentials ------------------------------------------------------------------

# --- lineage / wake / workbench ---------------------------------------------------------

# --- cli / demo -------------------------------------------------------------------------
