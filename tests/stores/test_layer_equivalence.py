"""A resume must load the same copy after the layers were made cheaper: the trim planning
(one flat list of new bodies) and prune's outage search (only where it can change a
result) are checked against the code they replaced, kept here as the reference model."""

from __future__ import annotations

import copy
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flower.stores.pruning as pruning
import flower.stores.trimming as trimming
from flower.stores.layered import Layers
from flower.stores.pruning import INTERRUPT_KINDS, PrunePolicy
from flower.stores.transcript import AGENT_API_ERROR, Scan, scan, site_text
from flower.stores.trimming import (
    EphemeralPolicy,
    SpillMemo,
    TrimPolicy,
    _shown_command,
    spill_dir,
    write_spill,
)

KEY = {"project_key": "p", "session_id": "s"}

# --------------------------------------------------------------------------- reference model


def old_suspects(entries: list[Any], found: Scan, drop: set[int]) -> set[int]:
    """Before: scan marked an entry erring when any stored result text held the phrase."""
    phrase = {site[0] for site in found.sites
              if AGENT_API_ERROR in (site_text(entries, site) or "")}
    marked = (i for i in found.marked if entries[i].get("toolDenialKind") in INTERRUPT_KINDS)
    return {i for i in (*found.erring, *phrase, *marked) if i not in drop}


def old_plan_bodies(found: Scan, entries: list[Any], *, workspace: Path, policy: TrimPolicy,
                    ephemeral: EphemeralPolicy, memo: SpillMemo,
                    report: dict[str, int]) -> list[str | None]:
    """Before: a dict of dicts of edits, expiry first, then spill."""
    edits: dict[int, dict[int, str]] = {}
    sites = [(i, j, site_text(entries, (i, j)), tid, uid) for i, j, _, tid, uid in found.sites]
    if ephemeral.enabled:
        eligible = [(i, j, found.commands[tid]) for i, j, body, tid, _ in sites
                    if tid is not None and body is not None and len(body) <= ephemeral.max_chars]
        old = eligible[: max(len(eligible) - max(ephemeral.keep_recent, 0), 0)]
        for k, (i, j, cmd) in enumerate(old):
            edits.setdefault(i, {})[j] = ephemeral.text.format(
                cmd=_shown_command(cmd), age=len(eligible) - k)
        report["expired"] += len(old)
    if policy.enabled:
        big = [(i, j, body) for i, j, body, _, _ in sites
               if body is not None and len(body) >= policy.min_chars
               and j not in edits.get(i, ())]
        keep = min(max(policy.keep_recent, 0), len(big))
        directory = str(spill_dir(workspace, policy))
        for i, j, body in big[: len(big) - keep]:
            path = write_spill(body, directory)
            assert path is not None
            pointer = policy.placeholder(path, len(body))
            edits.setdefault(i, {})[j] = pointer
            report["cleared"] += 1
            report["chars_saved"] += len(body) - len(pointer)
        report["kept"] += keep
    return [edits.get(i, {}).get(j) for i, j, *_ in sites]


# --------------------------------------------------------------------------- transcripts

COMMANDS = ["git status", "ls -la", "pytest -q", f"grep '{AGENT_API_ERROR}' log", "rm -rf x"]
TEXTS = ["ok", "x" * 60, "y" * 90, f"Agent: {AGENT_API_ERROR}.", "[Request interrupted by user]",
         "terminated early", "due to an API error"]


@st.composite
def transcripts(draw: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    parent = None
    for t in range(draw(st.integers(1, 30))):
        tid = f"toolu_{t}"
        call = {"type": "assistant", "uuid": f"a{t}", "parentUuid": parent, "message": {
            "id": f"m{t}", "role": "assistant", "content": [{
                "type": "tool_use", "id": tid, "name": draw(st.sampled_from(["Bash", "Agent"])),
                "input": {"command": draw(st.sampled_from(COMMANDS))}}]}}
        out.append(call)
        parent = call["uuid"]
        if draw(st.integers(0, 9)) == 0:
            continue  # an orphan: prune heals it
        pieces = draw(st.lists(st.sampled_from(TEXTS), min_size=1, max_size=3))
        body: Any = "".join(pieces) * draw(st.sampled_from([1, 1, 3]))
        if draw(st.booleans()):
            body = [{"type": "text", "text": p} for p in pieces]
        result: dict[str, Any] = {"type": "user", "uuid": f"u{t}", "parentUuid": parent,
                                  "message": {"role": "user", "content": [{
                                      "type": "tool_result", "tool_use_id": tid,
                                      "content": body, "is_error": draw(st.booleans())}]}}
        kind = draw(st.sampled_from([None, None, None, "permission-rule", "interrupted"]))
        if kind:
            result["toolDenialKind"] = kind
        if draw(st.integers(0, 7)) == 0:
            result["isMeta"] = True
        out.append(result)
        parent = result["uuid"]
        if draw(st.integers(0, 12)) == 0:
            out.append({"type": "system", "subtype": "api_error", "uuid": f"s{t}",
                        "parentUuid": parent})
            parent = f"s{t}"
            if draw(st.booleans()):  # bookkeeping pointing at what prune drops
                out.append({"type": "last-prompt", "leafUuid": parent})
    return out


POLICIES: dict[str, Any] = {"policy": TrimPolicy(keep_recent=2, min_chars=100),
                            "ephemeral": EphemeralPolicy(keep_recent=1, max_chars=120),
                            "prune": PrunePolicy()}


def load(tmp: Path, entries: list[dict[str, Any]]) -> tuple[list[Any], dict[str, int], tuple]:
    layers = Layers(tmp, **POLICIES)
    out = layers.apply(KEY, copy.deepcopy(entries))
    return out, layers.last_report, (layers.pruned, layers.denials_dropped,
                                     layers.neutralized, layers.healed)


def scan_based(workspace: Path, entries: list[dict[str, Any]], *, policy: TrimPolicy,
               ephemeral: EphemeralPolicy, prune: PrunePolicy,
               plan: Any = trimming.plan_bodies) -> tuple[list[Any], dict[str, int], tuple]:
    """The load planned from one scan of all the rows, the way ``prune_entries`` prunes
    (``plan_prune``, ``outage_results``, a relink over every ``parentUuid``): no index
    is involved, so a load through one is held against rules applied afresh."""
    entries = copy.deepcopy(entries)
    found = scan(entries)
    report = trimming.empty_report()
    if policy.enabled or ephemeral.enabled:
        found.bodies = plan(found, entries, workspace=Path(workspace).resolve(),
                            policy=policy, ephemeral=ephemeral, memo=SpillMemo(),
                            report=report)
    decided = pruning.plan_prune(entries, found, prune)
    if found.bodies is not None:
        trimming.set_bodies(entries, found.sites, found.bodies)
    out, stats = pruning.apply_prune(entries, decided, prune, found)
    return out, report, (stats["pruned"], stats["denials_dropped"], stats["neutralized"],
                         stats["healed"])


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=transcripts())
def test_layered_load_is_the_reference_models(entries: list[dict[str, Any]],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # a workspace per example: the spill memo rightly trusts that a stored row never
    # changes, which examples reusing the same uuids for other bodies would break
    with tempfile.TemporaryDirectory() as tmp:
        new = load(Path(tmp), entries)
        with monkeypatch.context() as m:
            m.setattr(pruning, "_suspects", old_suspects)
            old = scan_based(Path(tmp), entries, **POLICIES, plan=old_plan_bodies)
        assert new == old
        assert scan_based(Path(tmp), entries, **POLICIES) == new


def test_outage_text_in_a_spilled_result_still_neutralizes_its_sibling(tmp_path: Path) -> None:
    """The stored text decides, not the pointer: a result naming an outage that trim
    spilled still makes its entry a candidate, so a sibling block whose joined text says
    the same is neutralized exactly as before."""
    big = f"{AGENT_API_ERROR} " + "z" * 300
    entries = [
        {"type": "assistant", "uuid": "a", "parentUuid": None, "message": {"id": "m",
         "role": "assistant", "content": [
             {"type": "tool_use", "id": "t1", "name": "Agent", "input": {}},
             {"type": "tool_use", "id": "t2", "name": "Agent", "input": {}}]}},
        {"type": "user", "uuid": "u", "parentUuid": "a", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": big},
            {"type": "tool_result", "tool_use_id": "t2", "content": [
                {"type": "image", "text": "terminated early"},
                {"type": "text", "text": "due to an API error"}]}]}},
    ]
    layers = Layers(tmp_path, TrimPolicy(keep_recent=0, min_chars=100), EphemeralPolicy(),
                    PrunePolicy())
    out = layers.apply(KEY, copy.deepcopy(entries))
    first, second = out[1]["message"]["content"]
    assert os.path.basename(spill_dir(tmp_path, TrimPolicy())) in first["content"]
    assert second["content"] == PrunePolicy().interrupt_text
    assert layers.neutralized == 1
