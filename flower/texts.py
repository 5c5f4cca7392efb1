"""Every user-facing string flower prints or hands to a model, in one place so it can be
translated. The reference is Chinese; keep wording stable — tests and users rely on it.

Sections are owned by the module named in the heading; add new strings under it.
"""

from __future__ import annotations

# --- stores (trim / prune) -------------------------------------------------------------

# --- resilience / runtime ---------------------------------------------------------------

# --- env / credentials ------------------------------------------------------------------

# --- lineage / wake / workbench ---------------------------------------------------------

# --- cli / demo -------------------------------------------------------------------------
