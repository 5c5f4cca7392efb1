"""The single prune rules under the names scripts of the original flower import from
``flower.stores.prune``: ``is_denial``, ``is_api_error`` and ``heal_orphans``. Each must
say exactly what ``prune_entries`` acts on, on recorded transcripts of the real CLI."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flower import texts
from flower.stores.prune import PrunePolicy, heal_orphans, is_api_error, is_denial, prune_entries

from .conftest import Chain, recorded
from .test_prune import blocks, chain_ok, pairs_ok


def test_is_denial_follows_the_structural_marker() -> None:
    c = Chain()
    c.prompt("go")
    c.denied()
    denied = c.entries[-1]
    ok = c.result(c.call("Bash", {"command": "ls"}), "denied")  # the word, not the marker
    interrupted = c.result(c.call("Bash", {"command": "ls"}), "x", is_error=True,
                           toolDenialKind="user-rejected")
    rejected = c.result(c.call("Bash", {"command": "ls"}), "no",
                        permissionDecision={"decision": "reject"})
    assert is_denial(denied) and is_denial(rejected)
    assert not is_denial(ok) and not is_denial(interrupted)
    assert not is_denial(c.entries[0]) and not is_denial(c.entries[1])  # prompt, tool_use
    assert not is_denial({**denied, "isCompactSummary": True})  # never touched


def test_is_denial_marks_what_prune_drops() -> None:
    doc = recorded("denied")
    marked = [e for e in doc["main"] if is_denial(e)]
    assert len(marked) == 3
    out, stats = prune_entries(doc["main"], PrunePolicy(keep_denials=0))
    assert stats["denials_dropped"] == 3 and not any(is_denial(e) for e in out)


def test_is_denial_names_the_denied_call() -> None:
    c = Chain()
    c.prompt("go")
    tid = c.denied()
    denied = c.entries[-1]
    rejected_id = c.call("Bash", {"command": "ls"})
    rejected = c.result(rejected_id, "no", permissionDecision={"decision": "reject"})
    ok = c.result(c.call("Bash", {"command": "ls"}), "fine")
    assert is_denial(denied) == tid and is_denial(rejected) == rejected_id
    assert is_denial(ok) is None and is_denial(c.entries[0]) is None
    two = {**rejected, "message": {"role": "user", "content": [
        *rejected["message"]["content"], {"type": "tool_result", "tool_use_id": "toolu_x"}]}}
    assert is_denial(two) is None  # which of the two was denied? prune removes neither


def _old_rule(e: dict[str, Any]) -> bool:
    """What ``is_denial`` answered before it named the call: the marker alone."""
    if e.get("type") != "user" or e.get("isMeta") is True or e.get("isCompactSummary") is True:
        return False
    kind, decision = e.get("toolDenialKind"), e.get("permissionDecision")
    return kind in ("permission-rule", "automode-blocked") or (
        kind is None and isinstance(decision, dict) and decision.get("decision") == "reject")


_ID = st.one_of(st.text(max_size=3), st.none(), st.integers())
_BLOCK = st.one_of(
    st.fixed_dictionaries({"type": st.just("tool_result"), "tool_use_id": _ID}),
    st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=3)}),
    st.fixed_dictionaries({"type": st.just("tool_use"), "id": _ID}))
_ENTRY = st.fixed_dictionaries(
    {"type": st.sampled_from(["user", "assistant", "system"]),
     "message": st.one_of(st.fixed_dictionaries({"content": st.lists(_BLOCK, max_size=3)}),
                          st.fixed_dictionaries({"content": st.text(max_size=3)}))},
    optional={"toolDenialKind": st.sampled_from(["permission-rule", "automode-blocked",
                                                 "user-rejected", "interrupted", "x", None]),
              "permissionDecision": st.sampled_from([{"decision": "reject"},
                                                     {"decision": "allow"}, "reject", None]),
              "isMeta": st.booleans(), "isCompactSummary": st.booleans()})


@given(_ENTRY)
def test_is_denial_is_the_marker_rule_naming_one_call(e: dict[str, Any]) -> None:
    """For any entry: an id exactly when the old rule said "denial" and the entry holds one
    tool_result naming a call — and then it is that result's tool_use_id."""
    results = [b for b in e["message"]["content"]
               if isinstance(e["message"]["content"], list) and b["type"] == "tool_result"]
    named = [b["tool_use_id"] for b in results
             if len(results) == 1 and isinstance(b["tool_use_id"], str) and b["tool_use_id"]]
    got = is_denial(e)
    assert got == (named[0] if _old_rule(e) and named else None)
    assert bool(got) == (_old_rule(e) and bool(named))


def test_is_api_error() -> None:
    c = Chain()
    c.prompt("go")
    synthetic = c.api_error()
    said = c.say("fine")
    retry = c.raw({"type": "system", "subtype": "api_error", "level": "error"})
    only_model = c.raw({"type": "assistant", "message": {"model": "<synthetic>",
                                                         "content": "API Error"}})
    assert is_api_error(synthetic) and is_api_error(retry) and is_api_error(only_model)
    assert not is_api_error(said) and not is_api_error(c.entries[0])
    assert not is_api_error({**synthetic, "isMeta": True})
    assert not is_api_error({"type": "last-prompt", "isApiErrorMessage": True})


def test_is_api_error_marks_what_prune_drops() -> None:
    doc = recorded("outage")
    debris = [e for e in doc["main"] if is_api_error(e)]
    assert debris
    out, _ = prune_entries(doc["main"], PrunePolicy())
    assert not any(is_api_error(e) for e in out)
    assert len(doc["main"]) - len(out) == len(debris)


def test_heal_orphans_supplies_the_missing_result() -> None:
    doc = recorded("orphan")
    cut = next(i for i, e in enumerate(doc["main"]) if e.get("toolDenialKind") == "interrupted")
    entries = doc["main"][:cut]  # the store right after the kill
    before = copy.deepcopy(entries)
    out = heal_orphans(entries)
    assert entries == before  # never mutates its input
    (use,) = blocks(out, "tool_use")
    (res,) = blocks(out, "tool_result")
    assert res == {"type": "tool_result", "tool_use_id": use["id"],
                   "content": texts.ORPHAN_RESULT, "is_error": False}
    assert len(out) == len(entries) + 1
    pairs_ok(out)
    chain_ok(entries, out)
    # the same healing prune does as its last rule
    assert out == prune_entries(entries, PrunePolicy())[0]
    assert heal_orphans(entries) == out  # deterministic


def test_heal_orphans_text_and_nothing_to_heal() -> None:
    c = Chain()
    c.prompt("go")
    c.call("Read", {"file_path": "a"})
    c.prompt("next")
    out = heal_orphans(c.entries, text="[没有结果]")
    assert [r["content"] for r in blocks(out, "tool_result")] == ["[没有结果]"]
    healthy = Chain()
    healthy.prompt("go")
    healthy.bash("ls", "a.txt")
    assert heal_orphans(healthy.entries) == healthy.entries


@pytest.mark.parametrize("kind", [["interrupted"], {"k": 1}, 3, None, "denied"])
def test_a_damaged_interrupt_mark_is_no_mark(kind: object) -> None:
    """A row whose ``toolDenialKind`` is a list or a dict (a damaged or foreign row) is no
    interrupt — and loading it raises nothing."""
    from flower.stores.pruning import marked_interrupt

    assert marked_interrupt({"toolDenialKind": kind}) is False
    assert marked_interrupt({"toolDenialKind": "interrupted"}) is True
