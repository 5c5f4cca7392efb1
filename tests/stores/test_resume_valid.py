"""Flower's layered load resumes into a request the API accepts whenever the raw transcript
does — and where it does not, after a kill — keeping every prompt and call of it but the
denials prune takes out on purpose.

Pure: the request is the one ``cli_request`` models from the loaded entries (held against
the real CLI by tests/e2e/test_transcript_shapes.py) and ``flower.testing.rules`` judges
it as the API would. The transcripts are generated in the layouts the CLI writes —
1.0.x lines chained one after another, 2.x parallel results each below its own call's
line — with tool calls, parallel calls finishing in any order, denials, interrupts,
calls a killed CLI never answered, API errors and retries, glances (Bash commands flower
expires), results big enough to spill, inline sidechains, progress lines, compaction.
"""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from flower.stores.layers import Layers
from flower.stores.prune import PruningSessionStore
from flower.stores.pruning import PrunePolicy
from flower.stores.trimming import EphemeralPolicy, TrimPolicy
from flower.testing.rules import violations

from . import cli_request as model
from .shapes import Transcript

SID = "5b0c2f4e-8a1d-4c3b-9e7f-2d6a1b0c9e84"
KEY = {"project_key": "-home-dev-shop", "session_id": SID}
POLICIES: dict[str, Any] = {"policy": TrimPolicy(keep_recent=1, min_chars=300),
                            "ephemeral": EphemeralPolicy(keep_recent=1),
                            "prune": PrunePolicy(keep_denials=1)}
COMMANDS = ["git status", "ls -la", "pwd", "cat build.log", "pytest -q", "rm -rf dist"]
OUTCOMES = ["ok", "ok", "big", "denied", "denied", "interrupted", "unanswered"]


def _body(outcome: str, n: int) -> str:
    return ("line of a long log\n" * 30 if outcome == "big" else f"output {n}")


def response(t: Transcript, draw: Any, n: int) -> bool:
    """One model response with 1-3 calls: its lines, then the results in the order the
    calls finished, laid out as the transcript's CLI version writes them. False when
    the CLI was killed before every call was answered (nothing follows then)."""
    msg = t.message_id()
    if draw(st.integers(0, 2)) == 0:  # most parallel calls come without a text first
        t.say(f"step {n}", msg=msg)
    made = []
    for k in range(draw(st.integers(1, 3))):
        command = draw(st.sampled_from(COMMANDS))
        tid = t.call("Bash", {"command": command, "description": "run"}, msg=msg)
        made.append((tid, t.last, draw(st.sampled_from(OUTCOMES))))
        if not t.v1 and draw(st.integers(0, 3)) == 0:
            t.progress({"type": "bash_progress", "output": "…"}, f"bash-progress-{k}", tid,
                       link=False)
    interrupted = False
    for tid, line, outcome in draw(st.permutations(made)):
        parent: Any = line if not t.v1 else t.last  # 2.x: below its own call's line
        if outcome == "unanswered":
            continue  # the CLI was killed while it ran
        if outcome == "denied":
            t.result(tid, "Permission to use Bash has been denied.", is_error=True,
                     parent=parent, toolDenialKind="permission-rule")
        elif outcome == "interrupted":
            interrupted = True
            t.result(tid, "[Request interrupted by user for tool use]", is_error=True,
                     parent=parent, **({} if t.v1 else {"toolDenialKind": "user-rejected"}))
        else:
            t.result(tid, _body(outcome, n), parent=parent)
    if any(outcome == "unanswered" for *_, outcome in made):
        return False
    if interrupted:
        t.prompt([{"type": "text", "text": "[Request interrupted by user for tool use]"}])
    return True


def sidechain(t: Transcript, n: int) -> None:
    """A 1.0.x Task call whose subagent is written inline, as a root of its own."""
    tid = t.call("Task", {"description": "look", "prompt": f"side task {n}"})
    call = t.last
    side = Transcript(f"side-{n}", SID, t.version, sidechain=True, clock=t.clock)
    side.prompt(f"side task {n}", parent=None)
    side.say("side report")
    for e in side.entries:
        t.add(e)
    t.result(tid, [{"type": "text", "text": "side report"}], parent=call)


@st.composite
def transcripts(draw: Any) -> list[dict[str, Any]]:
    version = draw(st.sampled_from(["1.0.40", "2.1.30"]))
    t = Transcript("generated", SID, version)
    turns = draw(st.integers(1, 5))
    for turn in range(turns):
        if not t.v1 and turn and draw(st.integers(0, 5)) == 0:
            t.system("compact_boundary", parent=None, content="Conversation compacted",
                     logicalParentUuid=t.last, compactMetadata={"trigger": "auto",
                                                                "preTokens": 160000})
            t.prompt("This session is being continued from a previous conversation.",
                     isCompactSummary=True, isVisibleInTranscriptOnly=True)
        if not t.v1:
            t.queue("enqueue", f"P{turn} do the next thing")
            t.queue("dequeue")
        t.prompt(f"P{turn} do the next thing")
        for n in range(draw(st.integers(0, 3))):
            kind = draw(st.sampled_from(["response", "response", "retry", "sidechain"]))
            if kind == "sidechain" and t.v1:
                sidechain(t, n)
            elif kind == "retry" and not t.v1:
                t.retry(1)
            elif not response(t, draw, n):
                return t.entries  # killed mid-call: the file ends there
        ending = draw(st.sampled_from(["say", "say", "api_error", "none"]))
        if ending == "say":
            t.say(f"turn {turn} done")
        elif ending == "api_error":
            t.api_error(529, "API Error: 529 Overloaded")
    return t.entries


def layered(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:  # a spill dir per example
        return Layers(tmp, **POLICIES).apply(KEY, copy.deepcopy(entries))


def pruned_denials(entries: list[dict[str, Any]]) -> set[str]:
    """The denied calls prune takes out on purpose: all but the newest (keep_denials=1)."""
    denied = [t for e in entries if e.get("toolDenialKind") == "permission-rule"
              for t in (b.get("tool_use_id") for b in e["message"]["content"])]
    return set(denied[:-1])


def denied_first_call() -> list[dict[str, Any]]:
    """The CLI's layout when the first of two parallel calls is denied after the other one
    finished: the turn goes on below the denial's result, the other call and its result
    hang below the other call's line, off the walk from the leaf."""
    t = Transcript("denied-first", SID, "2.1.30")
    t.prompt("P1 clean up and read the log")
    msg = t.message_id()
    rm = t.call("Bash", {"command": "rm -rf build"}, msg=msg)
    rm_line = t.last
    read = t.call("Read", {"file_path": "/home/dev/shop/build.log"}, msg=msg)
    t.result(read, "THE LOG SAYS OK", parent=t.last)
    t.result(rm, "Permission to use Bash has been denied.", is_error=True, parent=rm_line,
             toolDenialKind="permission-rule")
    t.say("The clean was denied; the log says ok.")
    t.prompt("P2 delete the wheel then")
    t.bash("rm build/app.whl", "Permission to use Bash has been denied.", is_error=True,
           toolDenialKind="permission-rule")
    t.say("Denied again.")
    return t.entries


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries=transcripts())
@example(entries=denied_first_call())  # found by this test; see the one below
def test_a_layered_load_resumes_valid_and_whole(entries: list[dict[str, Any]]) -> None:
    """Valid whenever the raw load is, and more: the raw request of a file a killed CLI
    left is refused (its last calls have no result), prune heals those calls, so the
    layered one never is."""
    loaded = layered(entries)
    raw, out = model.request(entries), model.request(loaded)
    assert violations(out) == []
    assert model.chain_prompts(loaded) == model.chain_prompts(entries)
    kept = [c for c in model.tool_calls(raw) if c not in pruned_denials(entries)]
    assert model.tool_calls(out) == kept


async def test_removing_a_denied_parallel_call_keeps_its_siblings(tmp_path: Path) -> None:
    """Relinked to the denied call's parent, the turn hung below neither the other call
    nor its result, and the CLI's resume left both out: the model was shown "the log
    says ok" without the read it came from."""
    entries = denied_first_call()
    store = PruningSessionStore(tmp_path / "s.db", tmp_path, **POLICIES)
    await store.append(KEY, entries)
    out = await store.load(KEY)
    store.close()
    body = model.request(out)
    assert store.denials_dropped == 1 and violations(body) == []
    (_denied, read, again) = model.tool_calls(model.request(entries))
    assert model.tool_calls(body) == [read, again]
    assert "THE LOG SAYS OK" in str(body["messages"])
