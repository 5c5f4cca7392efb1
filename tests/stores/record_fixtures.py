"""Regenerate the transcript fixtures under tests/stores/fixtures/ from the REAL bundled CLI.

    /work/venv/bin/python tests/stores/record_fixtures.py [scenario ...]

Each scenario drives ``claude_agent_sdk`` against flower's fake model server with a
``SqliteSessionStore`` attached (the same mirror path a flower run uses) and writes what the
store received — every key of the session, entries verbatim — to ``fixtures/<name>.json``.
The prune/trim tests then run on what this CLI version really writes, not on hand-made
shapes. Re-record after an SDK/CLI upgrade and look at the diff.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from claude_agent_sdk import (  # noqa: E402
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ClaudeSDKError,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    project_key_for_directory,
)

from flower.stores.sqlite import SqliteSessionStore  # noqa: E402
from flower.testing import FakeServer, fault, match, reply, tool_use  # noqa: E402
from flower.testing.env import offline_env  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
QUERY_TIMEOUT = 60.0
BIG_LINES = 1000  # `seq` output ~4-5k chars: above TrimPolicy.min_chars


class Rig:
    """One scratch HOME/workspace/store per scenario, wired to one fake server."""

    def __init__(self, tmp: Path, fake: FakeServer) -> None:
        self.home = tmp / "home"
        self.ws = tmp / "ws"
        (self.home / ".claude").mkdir(parents=True)
        self.ws.mkdir()
        subprocess.run(["git", "init", "-q", str(self.ws)], check=True)
        (self.ws / "notes.txt").write_text("line one\nline two\n")
        self.env = offline_env(fake.url, home=str(self.home))
        self.store = SqliteSessionStore(tmp / "sessions.db")
        self.fake = fake
        self.session_id: str | None = None
        self.notes: dict[str, Any] = {}

    def options(self, **kw: Any) -> ClaudeAgentOptions:
        base: dict[str, Any] = {
            "cwd": str(self.ws), "env": self.env, "setting_sources": [],
            "permission_mode": "bypassPermissions", "session_store": self.store,
            "session_store_flush": "eager", "system_prompt": None,
        }
        if self.session_id:
            base["resume"] = self.session_id
        base.update(kw)
        return ClaudeAgentOptions(**base)

    async def turn(self, prompt: str, *, stop_when: Callable[[Any], bool] | None = None,
                   on_message: Callable[[ClaudeSDKClient, Any], Awaitable[None]] | None = None,
                   **kw: Any) -> list[Any]:
        """One prompt in a fresh CLI process (resuming the session after the first turn)."""
        out: list[Any] = []
        with anyio.fail_after(QUERY_TIMEOUT):
            try:
                async with ClaudeSDKClient(self.options(**kw)) as client:
                    await client.query(prompt)
                    async with aclosing(client.receive_response()) as stream:
                        async for m in stream:
                            out.append(m)
                            sid = getattr(m, "session_id", None)
                            if sid is None and isinstance(getattr(m, "data", None), dict):
                                sid = m.data.get("session_id")
                            if sid and not self.session_id:
                                self.session_id = sid
                            if on_message:
                                await on_message(client, m)
                            if stop_when and stop_when(m):
                                break
            except ClaudeSDKError as exc:
                out.append(exc)
        return out

    async def dump(self, name: str, note: str) -> Path:
        assert self.session_id, "no session recorded"
        pk = project_key_for_directory(str(self.ws))
        key = {"project_key": pk, "session_id": self.session_id}
        main = await self.store.load(key)
        subs = {sp: await self.store.load({**key, "subpath": sp})
                for sp in await self.store.list_subkeys(key)}
        FIXTURES.mkdir(exist_ok=True)
        path = FIXTURES / f"{name}.json"
        doc = {"scenario": name, "note": note, "project_key": pk,
               "session_id": self.session_id, "workspace": str(self.ws), "main": main,
               "subkeys": subs, **self.notes}
        path.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")
        return path


def _bash(cmd: str) -> dict[str, Any]:
    return tool_use("Bash", {"command": cmd, "description": "run"})


async def tools(rig: Rig) -> str:
    rig.fake.script(
        reply(_bash("git status")),
        reply(_bash(f"seq 1 {BIG_LINES}")),
        reply(_bash("ls -la")),
        reply(tool_use("Read", {"file_path": str(rig.ws / "notes.txt")})),
        reply(_bash(f"seq 1000 {1000 + BIG_LINES}")),
        reply(_bash("pwd && echo small")),
        "turn one done",
        reply(_bash("git status --short")),
        reply(_bash("ls")),
        "turn two done",
    )
    await rig.turn("look around")
    await rig.turn("look again")
    return "ephemeral (git status, ls, pwd) and large (seq) Bash results, a Read, two turns"


async def denied(rig: Rig) -> str:
    async def can_use_tool(name: str, data: dict[str, Any], ctx: Any) -> Any:
        if "touch" in str(data.get("command", "")):
            return PermissionResultDeny(message="harness says no")
        return PermissionResultAllow()

    async def hook(data: dict[str, Any], tool_use_id: str | None, ctx: Any) -> dict[str, Any]:
        if "forbidden" in str(data.get("tool_input", {}).get("command", "")):
            return {"hookSpecificOutput": {
                "hookEventName": "PreToolUse", "permissionDecision": "deny",
                "permissionDecisionReason": "Bash 不要直接用,派个 agent 去做"}}
        return {}

    rig.fake.script(
        reply(_bash("touch first.txt")),
        reply(_bash("echo forbidden-one")),
        reply(_bash("touch second.txt")),
        reply(_bash("echo allowed")),
        "gave up on touching",
    )
    await rig.turn("create files", permission_mode="default", can_use_tool=can_use_tool,
                   hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[hook])]})
    return "can_use_tool deny (touch) twice, PreToolUse hook deny once, then an allowed call"


async def outage(rig: Rig) -> str:
    rig.fake.script(reply(_bash("echo before-outage")), "first turn fine")
    await rig.turn("start")
    rig.fake.script(fault(500), fault(500))
    await rig.turn("continue", env={**rig.env, "CLAUDE_CODE_MAX_RETRIES": "1"})
    rig.fake.outage()
    await rig.turn("continue again")
    rig.fake.recover()
    rig.fake.script("back online")
    await rig.turn("and now?")
    return ("turn ok; turn with 500 twice (MAX_RETRIES=1: one system/api_error retry record + "
            "synthetic error); turn during an outage (ECONNREFUSED synthetic); recovered turn")


async def interrupted(rig: Rig) -> str:
    rig.fake.script(reply(_bash("sleep 20")))

    async def interrupt_on_tool(client: ClaudeSDKClient, m: Any) -> None:
        if type(m).__name__ == "AssistantMessage" and any(
                type(b).__name__ == "ToolUseBlock" for b in m.content):
            await anyio.sleep(1.0)
            await client.interrupt()

    await rig.turn("wait a while", on_message=interrupt_on_tool)
    rig.fake.script("resumed after interrupt")
    await rig.turn("what happened?")
    return "Bash sleep interrupted via client.interrupt(), then a resumed turn"


async def orphan(rig: Rig) -> str:
    rig.fake.script(reply(_bash("echo first")), reply(_bash("sleep 30")))

    def saw_sleep(m: Any) -> bool:
        return type(m).__name__ == "AssistantMessage" and any(
            type(b).__name__ == "ToolUseBlock" and "sleep" in str(b.input) for b in m.content)

    await rig.turn("run things", stop_when=saw_sleep)
    await anyio.sleep(0.5)
    before = len(rig.fake.message_requests())
    rig.fake.script("continued after the kill")
    await rig.turn("continue")
    seen = rig.fake.message_requests()[before:]
    rig.notes["resume_request_messages"] = seen[-1].messages if seen else None
    return ("CLI killed while a tool ran (the tool_use never got a tool_result), then a "
            "resumed turn on the unhealed store; resume_request_messages = what the model got")


async def subagent(rig: Rig) -> str:
    rig.fake.route(match.subagent(), reply(_bash("ls")), "SUBAGENT REPORT: all fine",
                   name="sub")
    rig.fake.script(
        reply(tool_use("Agent", {"description": "look around", "prompt": "SUBTASK inspect",
                                 "subagent_type": "general-purpose",
                                 "run_in_background": False})),
        "main: summarised",
    )
    await rig.turn("delegate")
    return "an Agent (subagent) call; the subagent runs `ls`; subkey transcript included"


SCENARIOS: dict[str, Callable[[Rig], Awaitable[str]]] = {
    "tools": tools, "denied": denied, "outage": outage, "interrupted": interrupted,
    "orphan": orphan, "subagent": subagent,
}


async def record(name: str) -> Path:
    with tempfile.TemporaryDirectory() as tmp, FakeServer() as fake:
        rig = Rig(Path(tmp), fake)
        note = await SCENARIOS[name](rig)
        path = await rig.dump(name, note)
        rig.store.close()
        return path


async def main(names: list[str]) -> None:
    for name in names or list(SCENARIOS):
        path = await record(name)
        doc = json.loads(path.read_text())
        print(f"{name}: {len(doc['main'])} entries, subkeys={list(doc['subkeys'])} -> {path}")


if __name__ == "__main__":
    os.environ.pop("CLAUDECODE", None)
    asyncio.run(main(sys.argv[1:]))
