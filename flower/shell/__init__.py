"""flower.shell — is this shell command a *glance*, and how does a glance run safely?

One predicate, two users. ``is_ephemeral(cmd)`` decides both whether a coordinator may run
``cmd`` itself (``flower.core.guard``) and whether its old result expires on resume
(``flower.stores.trim``). The two sets must stay identical: allowed-but-never-expired
leaves a stale ``git status`` in context forever; expired-but-refused sends a subagent
(~4.3k tokens) to run ``ls``.

Because the coordinator's permission rests on it, this is a security boundary that must
hold without any OS sandbox. It has two halves:

* the **predicate** judges the command's text — ``lexer`` (words, operators, quoting),
  ``options`` (per-program option grammar), ``forbidden_paths`` (credential, kernel and device
  paths, globs included), ``commands`` and ``programs`` (per-command rules, sed/awk/jq
  programs), ``git`` (git's own grammar and policy), tied together in ``predicate``.
  Unknown means no.
* the **runner** (``runner.prepare_glance``), called by the coordinator's PreToolUse hook,
  repeats the path rules on the real file system, neutralises what only the repository
  can reveal, and bounds the run (``bound``): killed after ``GLANCE_SECONDS``, output
  capped at ``OUTPUT_CAP`` bytes, stdin closed, never left running in the background.

The runner's output is itself accepted by the predicate (``bound.unwrap``), so expiry
gives the same answer whether a transcript kept the model's command or the rewritten one.

Layering: this package imports only the standard library; flower.stores and flower.core
build on it.
"""

from __future__ import annotations

from flower.shell.bound import GLANCE_SECONDS, OUTPUT_CAP, TOOL_TIMEOUT_MS, unwrap
from flower.shell.lexer import Refused
from flower.shell.predicate import analyse, is_ephemeral, why_not
from flower.shell.runner import prepare_glance

__all__ = [
    "GLANCE_SECONDS",
    "OUTPUT_CAP",
    "TOOL_TIMEOUT_MS",
    "Refused",
    "analyse",
    "is_ephemeral",
    "prepare_glance",
    "unwrap",
    "why_not",
]
