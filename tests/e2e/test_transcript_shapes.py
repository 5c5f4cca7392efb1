"""Every transcript shape the CLI has written resumes valid through flower's stores (issue 30,
item 4): imported with the SDK's own ``import_session_to_store`` into the SQLite and the
PostgreSQL store, loaded through the layers a Runtime reads through (``layered_store``),
resumed by the real CLI against the strict fake, which answers a request the API would
refuse with its 400.

For each shape (tests/stores/fixtures/shapes/, see its README) the CLI first resumes the
file itself, straight from disk: that is the chain the CLI follows, and the request model
of tests/stores/cli_request.py must name the same prompts and tool calls. Then it resumes
through flower's SQLite store, where the model of flower's load must match what was sent,
no prompt of the chain may be missing and none from outside it may appear. PostgreSQL: the
archive and the layered load must equal SQLite's for every shape (the CLI is handed
exactly what ``load`` returns, so equal loads resume alike); the CLI resumes through it
for the shapes with subagent or compaction files, where the SDK also loads subkeys. A
CLI resume costs about a second (the module: ~35 s); one through PostgreSQL for every
shape would add ~11 s for nothing the load comparison does not already show.

The trim and expiry policies are tighter than Runtime's defaults (keep 1 big result of
400+ characters, 1 glance): a fixture of a few dozen lines then gets spilled and expired
as a long run's old results are.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import import_session_to_store, project_key_for_directory
from stores import cli_request as model

from flower.stores.backend import layered_store
from flower.stores.postgres import PostgresSessionStore
from flower.stores.pruning import PrunePolicy
from flower.stores.trimming import EphemeralPolicy, TrimPolicy
from flower.testing import FakeServer
from flower.testing.rules import violations
from flower.testing.sdk import collect, options, result

SHAPES_DIR = Path(__file__).parents[1] / "stores" / "fixtures" / "shapes"
SHAPES = sorted(p.name for p in SHAPES_DIR.iterdir() if p.is_dir())
RESUMED_FROM_PG = {"v1-inline-sidechain", "v2-subagent-files", "v2-compact-boundary"}
PROMPT = "NEXT go on from here"
REPLY = "resumed"


def policies() -> dict[str, Any]:
    return {"policy": TrimPolicy(keep_recent=1, min_chars=400),
            "ephemeral": EphemeralPolicy(keep_recent=1), "prune": PrunePolicy(keep_denials=1)}


async def import_file(sid: str, store: Any, workspace: Path, main: Path) -> None:
    """The SDK's importer, on the files as the CLI left them. It parses every line, so a
    torn last line makes it raise: such a file is imported as the CLI reads it — its whole
    lines — which is also what the live mirror stored (it never sends a torn line)."""
    text = main.read_text()
    if text.endswith("\n"):
        await import_session_to_store(sid, store, directory=str(workspace))
        return
    with pytest.raises(json.JSONDecodeError):
        await import_session_to_store(sid, store, directory=str(workspace))
    main.write_text(text[: text.rindex("\n") + 1])
    try:
        await import_session_to_store(sid, store, directory=str(workspace))
    finally:
        main.write_text(text)


async def resume(fake: FakeServer, workspace: Path, env: dict[str, str], sid: str,
                 **store: Any) -> dict[str, Any]:
    """One resumed turn of the real CLI; the body of the request the model received."""
    fake.script(REPLY)
    msgs, err = await collect(PROMPT, options(workspace, env, resume=sid, **store))
    assert fake.rejected == [], [r.rejected for r in fake.rejected]
    assert err is None and result(msgs).result == REPLY, err
    seen = fake.last_request()
    assert seen is not None and PROMPT in seen.last_user_text()
    return seen.body


def candidates(entries: list[dict[str, Any]], subs: dict[str, list[Any]]) -> list[str]:
    """Every prompt text a shape holds — on the chain or not, queued or a subagent's — so
    a prompt resumed from outside the chain shows up as well as one lost from it."""
    queued = [e["content"] for e in entries
              if e.get("type") == "queue-operation" and isinstance(e.get("content"), str)]
    return [*model.prompts(entries), *queued, *(p for s in subs.values() for p in model.prompts(s))]


def follows(body: dict[str, Any], entries: list[dict[str, Any]], texts: list[str],
            want: list[str]) -> list[str]:
    """``body`` is the request the model derives from ``entries``: the chain's prompts in
    order, nothing else, and the same tool calls with every one answered. Its calls."""
    derived = model.request(entries)
    assert model.sent_prompts(body, texts) == want
    assert model.tool_calls(body) == model.tool_calls(derived)
    assert model.tool_answers(body) == model.tool_answers(derived) == set(model.tool_calls(body))
    assert violations(derived) == []
    return model.tool_calls(body)


def pruned_denials(entries: list[dict[str, Any]]) -> set[str]:
    """The denied calls prune takes out of a resume on purpose: all but the newest."""
    denied = [b["tool_use_id"] for e in entries if e.get("toolDenialKind") == "permission-rule"
              for b in e["message"]["content"] if b.get("type") == "tool_result"]
    return set(denied[:-1])


@pytest.mark.parametrize("shape", SHAPES)
async def test_every_shape_resumes_valid_through_both_stores(
        shape: str, fake: FakeServer, workspace: Path, cli_env: dict[str, str], home: Path,
        tmp_path: Path, pg_url: str, schema: str) -> None:
    pk = project_key_for_directory(str(workspace))
    project = home / ".claude" / "projects" / pk
    shutil.copytree(SHAPES_DIR / shape, project)
    (main,) = project.glob("*.jsonl")
    sid = main.stem
    raw = model.parse_jsonl(main.read_text())
    files = {str(p.relative_to(project / sid).with_suffix("")): model.parse_jsonl(p.read_text())
             for p in sorted((project / sid).glob("subagents/*.jsonl"))}
    key = {"project_key": pk, "session_id": sid}
    texts, want = candidates(raw, files), model.chain_prompts(raw)
    assert want and want[-1].startswith("P")  # the shape has a chain to resume

    sqlite = layered_store(None, run_dir=tmp_path / "runs", workspace=workspace, env={},
                           **policies())
    pg = layered_store(PostgresSessionStore(pg_url, schema=schema), run_dir=tmp_path,
                       workspace=workspace, env={}, **policies())
    try:
        for store in (sqlite, pg):
            await import_file(sid, store, workspace, main)
        # the archive is the file, verbatim, in both; both layered loads are the same copy
        assert sqlite.read_entries(key) == pg.backend.read_entries(key) == raw
        loaded = await sqlite.load(key)
        assert await pg.load(key) == loaded
        assert await sqlite.list_subkeys(key) == await pg.list_subkeys(key) == sorted(files)
        for sub, lines in files.items():
            skey = {**key, "subpath": sub}
            stored = [e for e in sqlite.read_entries(skey) if e.get("type") != "agent_metadata"]
            assert stored == lines
            side = await sqlite.load(skey)
            assert await pg.load(skey) == side
            # a subagent resumed (SendMessage) gets its own chain, whole and valid
            assert violations(model.request(side, sidechain=True)) == []
            assert (model.chain_prompts(side, sidechain=True)
                    == model.chain_prompts(lines, sidechain=True))

        # the CLI on its own file: the chain it follows is the one the model derives
        calls = follows(await resume(fake, workspace, cli_env, sid), raw, texts, want)
        kept = [c for c in calls if c not in pruned_denials(raw)]
        # through flower's store: a valid request of the chain flower's load gave it, with
        # every call of the CLI's own but the denials prune takes out
        body = await resume(fake, workspace, cli_env, sid, session_store=sqlite)
        assert follows(body, loaded, texts, want) == kept
        if shape in RESUMED_FROM_PG:
            again = await resume(fake, workspace, cli_env, sid, session_store=pg)
            assert follows(again, loaded, texts, want) == kept
    finally:
        sqlite.close()
        pg.close()
