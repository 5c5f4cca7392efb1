"""``flower demo``: a whole long-horizon flow, offline, on the production path.

flower's scripted fake model server runs on loopback; everything else is real — the SDK,
the bundled ``claude`` CLI executing tools, the session store, manifest and lineage. The
flow has three steps (confirm the requirement → set goals → work) in ``./flower-demo`` by
default, and it is built to be interrupted: kill it (even with ``kill -9``) and run
``flower demo`` again — it wakes up, skips what is frozen, and the work step resumes its
own session.

The fake "model" decides from the state of the workspace, not from a fixed list of
replies, so it makes the right next move wherever a crash left things.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

DEMO_DIR = "flower-demo"
PAUSE_S = 0.6  # the fake "thinks" before each reply, so there is time to press Ctrl-C or kill

REQUIREMENT = """# 需求

## 目标
写一个把 Markdown 转成 HTML 的小脚本 md2html.py。

## 验收标准
`python3 md2html.py sample.md` 生成 sample.html,标题变 <h1>,列表变 <li>。

## 边界
只管标题(#)、段落、列表(- );只用 Python 标准库。

## 未知与假设
没说要支持代码块,先不做。
"""

GOALS = """# 目标

## 判定清单
- [ ] md2html.py 能把 # 标题转成 <h1>
- [ ] 列表项转成 <li>
- [ ] sample.md 转换后得到 sample.html
"""

SCRIPT = '''"""md2html: the smallest Markdown to HTML converter that passes the demo's goals."""
import html
import sys
from pathlib import Path


def convert(md: str) -> str:
    out, in_list = [], False
    for line in md.splitlines():
        if line.startswith("- "):
            if not in_list:
                out.append("<ul>")
                in_list = True
            out.append(f"<li>{html.escape(line[2:])}</li>")
            continue
        if in_list:
            out.append("</ul>")
            in_list = False
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.append(f"<h{level}>{html.escape(line[level:].strip())}</h{level}>")
        elif line.strip():
            out.append(f"<p>{html.escape(line)}</p>")
    if in_list:
        out.append("</ul>")
    return "\\n".join(out) + "\\n"


if __name__ == "__main__":
    src = Path(sys.argv[1])
    src.with_suffix(".html").write_text(convert(src.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote {src.with_suffix('.html')}")
'''

SAMPLE = "# 你好,flower\n\n这是 demo 生成的示例。\n\n- 能断点续跑\n- 能等网络恢复\n"

# step name -> (marker in its prompt, prompt)
STEPS = {
    "确认需求": ("【demo:需求】",
                 "【demo:需求】帮我写个 md 转 html 的脚本。先把需求写进 {notes}/需求.md。"),
    "设定目标": ("【demo:目标】", "【demo:目标】按需求列出验收清单,写进 {notes}/目标.md。"),
    "干活": ("【demo:干活】", "【demo:干活】按需求和目标实现 md2html.py,并用 sample.md 验证。"),
}
RESUME = "上次干到一半被打断了。看看工作区里已经有什么,接着做完。"


class DemoBrain:
    """The fake model: picks the next action from what already exists on disk."""

    def __init__(self, ws: Path, notes: Path) -> None:
        self.ws, self.notes = ws, notes

    def __call__(self, req: Any) -> Any:
        from flower.testing import delay, reply, text, tool_use

        first = req.first_user_text()
        if STEPS["确认需求"][0] in first:
            move = self._write(self.notes / "需求.md", REQUIREMENT, "需求写好了,四个部分都在。")
        elif STEPS["设定目标"][0] in first:
            move = self._write(self.notes / "目标.md", GOALS, "目标清单写好了,共 3 条。")
        else:
            move = self._work()
        kind, *args = move
        if kind == "text":
            return delay(PAUSE_S, reply(args[0]))
        name, tool_input, say = args
        return delay(PAUSE_S, reply(text(say), tool_use(name, tool_input)))

    def _write(self, path: Path, content: str, done: str) -> tuple:
        if path.is_file():
            return ("text", done)
        return ("tool", "Write", {"file_path": str(path), "content": content},
                f"我先把 {path.name} 写下来。")

    def _work(self) -> tuple:
        ws = self.ws
        if not (ws / "md2html.py").is_file():
            return ("tool", "Write", {"file_path": str(ws / "md2html.py"), "content": SCRIPT},
                    "先写转换脚本。")
        if not (ws / "sample.md").is_file():
            return ("tool", "Write", {"file_path": str(ws / "sample.md"), "content": SAMPLE},
                    "再准备一个示例文件。")
        if not (ws / "sample.html").is_file():
            return ("tool", "Bash", {"command": "python3 md2html.py sample.md"},
                    "跑一下转换。")
        return ("text", "完成:md2html.py 已实现,sample.md 转换成 sample.html,三条目标都满足。")


def _demo_env(fake_url: str, config_dir: Path) -> dict[str, str]:
    """Process env for the demo: the CLI talks to the fake and keeps off the user's config;
    timeouts are roomier than the tests' because a newcomer's machine may be busy."""
    from flower.testing.env import offline_env

    return offline_env(fake_url, config_dir=str(config_dir), api_key="sk-flower-demo-offline",
                       CLAUDE_CODE_MAX_RETRIES="1", API_TIMEOUT_MS="30000",
                       CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS="30000")


def run_demo(workspace: str | None = None) -> int:
    """Run (or continue) the demo flow; returns the process exit code."""
    import anyio
    from rich.console import Console

    ws = Path(workspace or DEMO_DIR).expanduser().resolve()
    ws.mkdir(parents=True, exist_ok=True)
    return anyio.run(_run, ws, Console())


def _flow(ws: Path) -> Any:
    from flower.core.agent import AgentSpec
    from flower.core.workbench import Workbench
    from flower.workflow.base import Step, Workflow

    wb = Workbench(ws).ensure()
    agent = AgentSpec(name="demo", instructions="你是 flower demo 里的 agent。",
                      allowed_tools=["Read", "Write", "Bash"],
                      permission_mode="bypassPermissions", max_turns=12)

    def frozen(name: str):  # a finished document means a finished step
        path = wb.notes / name
        return lambda ctx: path.read_text(encoding="utf-8") if path.is_file() else None

    def prompt(step: str) -> str:
        return STEPS[step][1].format(notes=wb.notes)

    html_ok = lambda r, ctx: "<h1>" in _read(ws / "sample.html")  # noqa: E731
    return Workflow([
        Step("确认需求", agent, prompt("确认需求"), frozen=frozen("需求.md")),
        Step("设定目标", agent, prompt("设定目标"), frozen=frozen("目标.md")),
        Step("干活", agent, prompt("干活"), resume_prompt=RESUME, gate=html_ok, retries=1),
    ], name="demo", workbench=wb)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


async def _run(ws: Path, console: Any) -> int:
    from flower.core.runtime import Runtime
    from flower.testing import FakeServer
    from flower.ui import render_event, step_header
    from flower.workflow.wake import wake_banner, wake_state

    run_dir = ws / "runs"
    state = wake_state(ws, run_dir=run_dir)
    wf = _flow(ws)
    with FakeServer() as fake:
        fake.fallback(DemoBrain(ws, wf.workbench.notes))
        env = _demo_env(fake.url, run_dir / "claude-config")
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        console.rule("[bold]flower demo[/] · 离线 · 假模型服务器 " + fake.url)
        if state["waking"]:
            console.print(f"[bold cyan]{wake_banner(state)}[/]")
        else:
            console.print(f"工作区: {ws}")
        try:
            rt = Runtime(workspace=ws, run_dir=run_dir, workbench=wf.workbench)
            try:
                ctx = await wf.run(rt, on_event=lambda ev: (
                    step_header(console, ev) if ev.kind == "step" else render_event(console, ev)))
            finally:
                rt.close()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    ok = "_failed_at" not in ctx and (ws / "sample.html").is_file()
    console.rule("[green]完成[/]" if ok else "[red]没有完成[/]")
    console.print(f"花费 ${rt.total_cost():.4f}(假模型按标价计) · 清单 {rt.manifest_path}")
    if ok:
        console.print(f"[bold]sample.html[/]:\n{_read(ws / 'sample.html')}")
        console.print(f"再次运行 [bold]flower demo[/] 会在 {ws} 接着上次继续;"
                      "删掉这个目录就重新开始。")
    else:
        failed = ctx.get("_results", {}).get(ctx.get("_failed_at", ""), None)
        console.print(f"[red]{failed.error if failed else '未知错误'}[/]")
    return 0 if ok else 1
