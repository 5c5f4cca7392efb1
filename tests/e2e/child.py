"""A flower process for tests that need a *separate* process to kill or to race.

    python child.py steps WORKSPACE RUN_DIR NAME...   # one Runtime.run per NAME
    python child.py flow  WORKSPACE RUN_DIR           # Workflow([Step("干活", …)])
    python child.py clarify WORKSPACE RUN_DIR HOLD    # starter_flow(clarify_only): answers
                                                      # every question but HOLD, which waits
    python child.py handoff WORKSPACE RUN_DIR         # like flow, with a workbench and a
                                                      # 60K window (hands off at 40K)

Environment (fake URL, scratch HOME …) is inherited from the test.
"""

from __future__ import annotations

import sys

import anyio

from flower import AgentSpec, HandoffPolicy, Resilience, Runtime, Step, Workflow, starter_flow

SPEC = AgentSpec(name="worker", instructions="test agent", allowed_tools=["Bash", "Read"],
                 permission_mode="bypassPermissions")
QUICK = Resilience(base_delay=0.05, max_delay=0.2, probe_interval=0.2)


async def clarify(workspace: str, run_dir: str, hold: str) -> int:
    wf = starter_flow("帮我做个小工具", workspace=workspace, run_dir=run_dir,
                      clarify_only=True, timeout_s=None)

    def human(ev) -> None:
        p = ev.payload
        if ev.kind == "ask" and p.get("kind") != "mail" and p.get("state") == "asked":
            print(f"ASKED {ev.text}", flush=True)
            if ev.text != hold:
                wf.channel.answer(p["id"], "自己用")

    rt = Runtime(workspace=workspace, run_dir=run_dir, workbench=wf.workbench,
                 resilience=QUICK)
    try:
        await wf.run(rt, on_event=human)
    finally:
        rt.close()
    return 0


async def main(mode: str, workspace: str, run_dir: str, names: list[str]) -> int:
    if mode == "clarify":
        return await clarify(workspace, run_dir, names[0])
    extra = {"workbench": True, "handoff": HandoffPolicy(window=60_000, headroom=20_000)} \
        if mode == "handoff" else {}
    rt = Runtime(workspace=workspace, run_dir=run_dir, resilience=QUICK, **extra)
    try:
        if mode == "steps":
            for name in names:
                r = await rt.run(SPEC, f"do {name}", step_name=name)
                print(f"{name} ok={r.ok}", flush=True)
        else:
            ctx = await Workflow([Step("干活", SPEC, "开始干活")]).run(rt)
            print(f"sessions={ctx['_sessions']}", flush=True)
    finally:
        rt.close()
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]))
