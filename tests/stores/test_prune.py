"""PruningSessionStore: failure debris out of the resumed context, chain always intact.

Recorded fixtures (real CLI 2.1.332) for the shapes; generated transcripts for the
structural invariants."""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flower import texts
from flower.stores.prune import PrunePolicy, PruningSessionStore, prune_entries
from flower.stores.transcript import relink
from flower.stores.trim import EphemeralPolicy, TrimPolicy

from .conftest import Chain, key_of, recorded

KEY = {"project_key": "-p", "session_id": "sess-1"}


def chain_ok(original: list[dict], out: list[dict]) -> None:
    """Every parentUuid resolves to a kept EARLIER entry, or is null where the chain began."""
    seen: set[str] = set()
    starts = {e.get("uuid") for e in original if e.get("parentUuid") is None}
    for e in out:
        p = e.get("parentUuid")
        if "uuid" in e:
            if p is None:
                assert e["uuid"] in starts or e.get("type") == "system", e
            else:
                assert p in seen, (e.get("uuid"), p)
            seen.add(e["uuid"])
        if isinstance(e.get("leafUuid"), str):
            assert e["leafUuid"] in {x.get("uuid") for x in out} or e["leafUuid"] not in {
                x.get("uuid") for x in original}


def pairs_ok(out: list[dict]) -> None:
    """Every tool_use has exactly one tool_result after it."""
    uses: dict[str, int] = {}
    results: dict[str, list[int]] = {}
    for i, e in enumerate(out):
        msg = e.get("message")
        content = msg.get("content") if isinstance(msg, dict) else None
        for b in content if isinstance(content, list) else []:
            if b.get("type") == "tool_use":
                uses[b["id"]] = i
            elif b.get("type") == "tool_result":
                results.setdefault(b["tool_use_id"], []).append(i)
    for tid, i in uses.items():
        assert len(results.get(tid, [])) == 1 and results[tid][0] > i, tid


def blocks(entries: list[dict], kind: str) -> list[dict]:
    return [b for e in entries if isinstance(e.get("message"), dict)
            and isinstance(e["message"].get("content"), list)
            for b in e["message"]["content"] if b.get("type") == kind]


async def load_recorded(name: str, tmp: Path, **kw: Any) -> tuple[dict, list[dict], Any]:
    doc = recorded(name)
    store = PruningSessionStore(tmp / f"{name}.db", tmp, **kw)
    await store.append(key_of(doc), doc["main"])
    for sub, entries in doc["subkeys"].items():
        await store.append(key_of(doc, sub), entries)
    return doc, await store.load(key_of(doc)), store


# ------------------------------------------------------------------ recorded transcripts


async def test_outage_debris_is_gone_and_rows_stay(tmp_path: Path) -> None:
    doc, out, store = await load_recorded("outage", tmp_path)
    original = doc["main"]
    assert any(e.get("isApiErrorMessage") for e in original)
    assert any(e.get("subtype") == "api_error" for e in original)
    assert not any(e.get("isApiErrorMessage") or e.get("subtype") == "api_error"
                   or e.get("message", {}).get("model") == "<synthetic>"
                   for e in out if isinstance(e.get("message", {}), dict))
    assert "API Error" not in json.dumps(out)
    assert store.pruned == 3
    chain_ok(original, out)
    # the prompts typed during the outage still chain back to the first prompt
    prompts = [e for e in out if e.get("type") == "user"
               and isinstance(e["message"].get("content"), str)]
    assert [p["message"]["content"] for p in prompts] == [
        "start", "continue", "continue again", "and now?"]
    rows = sqlite3.connect(tmp_path / "outage.db").execute(
        "SELECT payload FROM entries ORDER BY seq").fetchall()
    assert [json.loads(p) for (p,) in rows] == original


async def test_only_the_newest_denial_survives(tmp_path: Path) -> None:
    doc, out, store = await load_recorded("denied", tmp_path)
    original_uses = {b["input"]["command"] for b in blocks(doc["main"], "tool_use")}
    assert original_uses == {"touch first.txt", "echo forbidden-one", "touch second.txt",
                             "echo allowed"}
    uses = [b["input"]["command"] for b in blocks(out, "tool_use")]
    assert uses == ["touch second.txt", "echo allowed"]
    assert [r["content"] for r in blocks(out, "tool_result")] == ["harness says no", "allowed"]
    assert store.denials_dropped == 2 and store.pruned == 4
    chain_ok(doc["main"], out)
    pairs_ok(out)


async def test_keep_denials_zero_and_three(tmp_path: Path) -> None:
    _, out0, s0 = await load_recorded("denied", tmp_path / "a",
                                      prune=PrunePolicy(keep_denials=0))
    assert s0.denials_dropped == 3
    assert [b["input"]["command"] for b in blocks(out0, "tool_use")] == ["echo allowed"]
    _, out3, s3 = await load_recorded("denied", tmp_path / "b",
                                      prune=PrunePolicy(keep_denials=3))
    assert s3.denials_dropped == 0 and len(blocks(out3, "tool_use")) == 4


async def test_interrupted_tool_result_is_neutralized_not_removed(tmp_path: Path) -> None:
    doc, out, store = await load_recorded("interrupted", tmp_path)
    (before,) = blocks(doc["main"], "tool_result")
    assert "doesn't want to proceed" in before["content"] and before["is_error"] is True
    (after,) = blocks(out, "tool_result")
    assert after == {**before, "content": texts.INTERRUPTED_RESULT, "is_error": False}
    assert store.neutralized == 1
    chain_ok(doc["main"], out)
    pairs_ok(out)


async def test_cli_healed_orphan_gets_the_neutral_note(tmp_path: Path) -> None:
    _, out, store = await load_recorded("orphan", tmp_path)
    (after,) = blocks(out, "tool_result")
    assert after["content"] == texts.INTERRUPTED_RESULT and store.healed == 0
    pairs_ok(out)


async def test_orphan_left_by_a_killed_cli_is_healed(tmp_path: Path) -> None:
    """The store as it was right after the kill, before the CLI's own resume repaired it."""
    doc = recorded("orphan")
    cut = next(i for i, e in enumerate(doc["main"]) if e.get("toolDenialKind") == "interrupted")
    entries = doc["main"][:cut]
    store = PruningSessionStore(tmp_path / "o.db", tmp_path)
    await store.append(key_of(doc), entries)
    out = await store.load(key_of(doc))
    (use,) = blocks(out, "tool_use")
    (res,) = blocks(out, "tool_result")
    assert res == {"type": "tool_result", "tool_use_id": use["id"],
                   "content": texts.ORPHAN_RESULT, "is_error": False}
    assert store.healed == 1 and len(out) == len(entries) + 1
    pairs_ok(out)
    chain_ok(entries, out)
    # healing is deterministic: the same load twice gives the same uuids (cache-friendly)
    assert await store.load(key_of(doc)) == out


async def test_subagent_transcript_loads_and_keeps_its_chain(tmp_path: Path) -> None:
    doc, out, _ = await load_recorded("subagent", tmp_path)
    (sub,) = doc["subkeys"]
    store = PruningSessionStore(tmp_path / "subagent.db", tmp_path)
    side = await store.load(key_of(doc, sub))
    assert side and all(e.get("isSidechain") for e in side if e.get("type") == "user")
    pairs_ok(out)
    pairs_ok(side)
    assert "SUBAGENT REPORT" in json.dumps(out)


# ------------------------------------------------------------------ rules in isolation


def test_relink_needs_the_full_list() -> None:
    c = Chain()
    c.prompt("a")
    mid = c.say("drop me")
    c.say("b")
    c.say("c")
    out = relink(c.entries, {1})
    assert [e["uuid"] for e in out] == ["u00001", "u00003", "u00004"]
    assert out[1]["parentUuid"] == "u00001" and mid["parentUuid"] == "u00001"
    assert c.entries[2]["parentUuid"] == "u00002"  # input untouched
    # a run of dropped entries, and a cycle among them, resolve without looping
    cyc = [{"uuid": "a", "parentUuid": None}, {"uuid": "b", "parentUuid": "c"},
           {"uuid": "c", "parentUuid": "b"}, {"uuid": "d", "parentUuid": "c"}]
    assert relink(cyc, {1, 2}) == [{"uuid": "a", "parentUuid": None},
                                   {"uuid": "d", "parentUuid": None}]


def test_compact_summaries_and_meta_are_never_touched() -> None:
    c = Chain()
    summary = c.raw({"type": "user", "isCompactSummary": True, "parentUuid": None,
                     "message": {"role": "user", "content": "Summary: everything so far"}})
    meta = c.raw({"type": "user", "isMeta": True, "isApiErrorMessage": True,
                  "message": {"role": "user", "content": [{"type": "text", "text": "m"}]}})
    tid = c.call("Bash", {"command": "touch x"})
    c.result(tid, "[Request interrupted by user]", is_error=True, isMeta=True)
    out, stats = prune_entries(c.entries, PrunePolicy())
    assert out[0] is summary and out[1] is meta and out[3] is c.entries[3]
    assert stats["pruned"] == 0 and stats["neutralized"] == 0


def test_denial_removes_only_its_block_and_keeps_siblings() -> None:
    c = Chain()
    c.prompt("go")
    both = c.raw({"type": "assistant", "message": {"id": "m1", "role": "assistant", "content": [
        {"type": "thinking", "thinking": "hmm", "signature": "s"},
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "rm x"}},
        {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "ls"}}]}})
    c.raw({"type": "user", "toolDenialKind": "permission-rule", "message": {
        "role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                     "content": "no", "is_error": True}]},
        "toolUseResult": "Error: no"})
    c.raw({"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t2", "content": "a b"}]}})
    c.bash("touch y", "no again", toolDenialKind="permission-rule")
    out, stats = prune_entries(c.entries, PrunePolicy(keep_denials=1))
    assert [b["type"] for b in out[1]["message"]["content"]] == ["thinking", "tool_use"]
    assert out[1]["message"]["content"][1]["id"] == "t2"
    assert both["message"]["content"][1]["id"] == "t1"  # original untouched
    assert stats["denials_dropped"] == 1
    pairs_ok(out)
    chain_ok(c.entries, out)


def test_interrupt_text_in_old_style_results_is_neutralized() -> None:
    c = Chain()
    c.prompt("go")
    c.bash("sleep 9", "[Request interrupted by user for tool use]", is_error=True)
    c.bash("false", "exit 1", is_error=True)  # a plain error stays as it is
    out, stats = prune_entries(c.entries, PrunePolicy())
    res = blocks(out, "tool_result")
    assert res[0]["content"] == texts.INTERRUPTED_RESULT and res[0]["is_error"] is False
    assert res[1]["content"] == "exit 1" and stats["neutralized"] == 1


@pytest.mark.parametrize("is_error", [True, False])
def test_a_subagent_killed_by_an_outage_is_neutralized(is_error: bool) -> None:
    """An outage mid-task makes the CLI hand back "Agent terminated early due to an API
    error: API Error: …" — debris, like a synthetic error: the resumed model must not read it."""
    c = Chain()
    c.prompt("go")
    tid = c.call("Agent", {"description": "build it", "prompt": "x", "subagent_type": "coder"})
    c.result(tid, [{"type": "text", "text": "Agent terminated early due to an API error: "
                                            "API Error: Connection dropped"}],
             is_error=is_error)
    ok = c.call("Agent", {"description": "again", "prompt": "y", "subagent_type": "coder"})
    c.result(ok, "结论:做完了")
    out, stats = prune_entries(c.entries, PrunePolicy())
    res = blocks(out, "tool_result")
    assert res[0]["content"] == texts.INTERRUPTED_RESULT and "API Error" not in json.dumps(out)
    assert res[1]["content"] == "结论:做完了" and stats["neutralized"] == 1
    chain_ok(c.entries, out)


def test_policies_can_switch_every_rule_off() -> None:
    doc = recorded("outage")
    off = PrunePolicy(drop_api_errors=False, neutralize_interrupts=False, heal_orphans=False,
                      keep_denials=99)
    out, stats = prune_entries(doc["main"], off)
    assert out == doc["main"] and not any(stats.values())


def test_parallel_orphans_in_one_message_are_healed_after_the_whole_message() -> None:
    c = Chain()
    c.prompt("go")
    first = c.raw({"type": "assistant", "message": {"id": "m", "role": "assistant", "content": [
        {"type": "tool_use", "id": "a", "name": "Bash", "input": {"command": "x"}}]}})
    c.bookkeeping()
    second = c.raw({"type": "assistant", "message": {"id": "m", "role": "assistant",
                                                      "content": [{"type": "tool_use", "id": "b",
                                                                   "name": "Read",
                                                                   "input": {}}]}})
    c.prompt("next")
    out, stats = prune_entries(c.entries, PrunePolicy())
    heal = out[4]
    assert [b["tool_use_id"] for b in heal["message"]["content"]] == ["a", "b"]
    assert heal["parentUuid"] == second["uuid"] and out[5]["parentUuid"] == heal["uuid"]
    assert out[1] is first and stats["healed"] == 2
    pairs_ok(out)


# ------------------------------------------------------------------ generated transcripts

_STEP = st.sampled_from(["prompt", "say", "ok", "big", "ephemeral", "denied", "interrupt",
                         "api_error", "retry", "orphan", "meta", "bookkeeping"])


def build(steps: list[str]) -> list[dict]:
    c = Chain()
    c.prompt("start")
    for i, s in enumerate(steps):
        if s == "prompt":
            c.prompt(f"p{i}")
        elif s == "say":
            c.say(f"s{i}")
        elif s == "ok":
            c.bash("npm test", f"r{i}")
        elif s == "big":
            c.bash("cat log", f"{i}" + "B" * 2100)
        elif s == "ephemeral":
            c.bash("git branch", f"st{i}")
        elif s == "denied":
            c.bash(f"rm {i}", "denied", is_error=True, toolDenialKind="permission-rule",
                   permissionDecision={"decision": "reject", "source": "hook"})
        elif s == "interrupt":
            c.bash("sleep 9", "stop", is_error=True, toolDenialKind="user-rejected")
        elif s == "api_error":
            c.raw({"type": "assistant", "isApiErrorMessage": True, "message": {
                "model": "<synthetic>", "role": "assistant",
                "content": [{"type": "text", "text": "API Error: Connection refused"}]}})
        elif s == "retry":
            c.raw({"type": "system", "subtype": "api_error", "level": "error"})
        elif s == "orphan":
            c.call("Bash", {"command": "sleep 100"})
        elif s == "meta":
            c.raw({"type": "user", "isMeta": True,
                   "message": {"role": "user", "content": "<meta>"}})
        else:
            c.bookkeeping()
    return c.entries


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_STEP, max_size=40), st.integers(0, 3), st.integers(0, 3), st.integers(0, 3))
def test_generated_transcripts_keep_every_invariant(tmp_path_factory: Any, steps: list[str],
                                                    keep_denials: int, keep_trim: int,
                                                    keep_eph: int) -> None:
    import anyio

    tmp = tmp_path_factory.mktemp("gen")
    entries = build(steps)
    original = copy.deepcopy(entries)
    store = PruningSessionStore(tmp / "s.db", tmp, TrimPolicy(keep_recent=keep_trim),
                                prune=PrunePolicy(keep_denials=keep_denials),
                                ephemeral=EphemeralPolicy(keep_recent=keep_eph))
    anyio.run(store.append, KEY, entries)
    rows = sqlite3.connect(tmp / "s.db").execute("SELECT * FROM entries").fetchall()
    out = anyio.run(store.load, KEY)
    store.close()

    chain_ok(original, out)
    pairs_ok(out)
    assert not any(e.get("isApiErrorMessage") and not e.get("isMeta") for e in out)
    assert not any(e.get("type") == "system" and e.get("subtype") == "api_error" for e in out)
    assert sqlite3.connect(tmp / "s.db").execute("SELECT * FROM entries").fetchall() == rows
    assert entries == original
    # denials: exactly min(keep, n) survive, always the newest
    denied = [b["input"]["command"] for b in blocks(original, "tool_use")
              if b["input"]["command"].startswith("rm ")]
    kept = [b["input"]["command"] for b in blocks(out, "tool_use")
            if b["input"]["command"].startswith("rm ")]
    assert kept == (denied[len(denied) - keep_denials:] if keep_denials else [])
    # protected entries keep every field; only their chain link may be re-attached
    def strip(es: list[dict]) -> list[dict]:
        return [{k: v for k, v in e.items() if k != "parentUuid"} for e in es if e.get("isMeta")]

    assert strip(out) == strip(original)
    for r in blocks(out, "tool_result"):
        assert isinstance(r["content"], str) and r["content"]


async def test_load_equals_the_public_layers_composed(db: Path, ws: Path) -> None:
    """load() shares one scan between trim and prune and edits its freshly parsed entries in
    place; it must still return exactly what the copy-on-write public steps produce."""
    c = Chain()
    c.prompt("go")
    c.looks_and_reads(12)
    c.denied()
    c.api_error()
    c.denied()
    cut = c.call("Bash", {"command": "sleep 99"})
    c.result(cut, "[Request interrupted by user]", is_error=True)
    c.call("Read", {"file_path": "/never/answered"})
    c.bookkeeping()
    policy = TrimPolicy(keep_recent=2, min_chars=2000)
    store = PruningSessionStore(db, ws, policy=policy, ephemeral=EphemeralPolicy(keep_recent=3),
                                prune=PrunePolicy(keep_denials=1))
    await store.append(KEY, c.entries)
    loaded = await store.load(KEY)
    expected, _ = prune_entries(store.trim(store.expire(copy.deepcopy(c.entries))),
                                store.prune_policy)
    assert loaded == expected
    assert store.pruned == 3 and store.neutralized == 1 and store.healed == 1
    assert await store.load(KEY) == loaded  # rows untouched by the in-place edits
