"""``flower demo``: the real thing, offline.

Starts flower's scripted fake model server on loopback and runs a real ``Runtime`` step
through the real SDK and the real bundled ``claude`` CLI against it — no credentials, no
network. What the model "decides" is canned; everything else (tool execution, session
store, manifest) is the production path.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

DEMO_FILE = "hello.md"
DEMO_CONTENT = "# 你好,flower\n\n这个文件是 demo 里的 agent 通过 Write 工具写下的。\n"


def _demo_env(fake_url: str, config_dir: Path) -> dict[str, str]:
    """Process env for the demo: point the CLI at the fake and keep it off the user's config."""
    return {
        "ANTHROPIC_BASE_URL": fake_url,
        "ANTHROPIC_API_KEY": "sk-flower-demo-offline",
        "CLAUDE_CONFIG_DIR": str(config_dir),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_MAX_RETRIES": "1",
        "API_TIMEOUT_MS": "30000",
        "CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS": "30000",
        "DISABLE_AUTOUPDATER": "1",
    }


def run_demo(workspace: str | None = None) -> int:
    """Run the demo; returns the process exit code."""
    import anyio
    from rich.console import Console

    console = Console()
    base = Path(workspace).expanduser().resolve() if workspace else Path(
        tempfile.mkdtemp(prefix="flower-demo-"))
    base.mkdir(parents=True, exist_ok=True)
    return anyio.run(_run, base, console)


async def _run(ws: Path, console) -> int:  # type: ignore[no-untyped-def]
    from flower.core.agent import AgentSpec
    from flower.core.runtime import Runtime
    from flower.testing import FakeServer, reply, text, tool_use
    from flower.ui import render_event

    target = ws / DEMO_FILE
    with FakeServer() as fake:
        fake.script(
            reply(text("我先把问候写进文件。"),
                  tool_use("Write", {"file_path": str(target), "content": DEMO_CONTENT})),
            reply("写好了:hello.md 已经在工作区里。"),
        )
        saved = {k: os.environ.get(k) for k in _demo_env("", ws)}
        os.environ.update(_demo_env(fake.url, ws / ".demo-claude"))
        console.rule("[bold]flower demo[/] · 离线 · 假模型服务器 " + fake.url)
        console.print(f"工作区: {ws}")
        try:
            rt = Runtime(workspace=ws, run_dir=ws / "runs")
            spec = AgentSpec(
                name="demo",
                instructions="你是 flower 的演示 agent。",
                allowed_tools=["Write", "Read"],
                permission_mode="acceptEdits",
                max_turns=4,
            )
            try:
                result = await rt.run(spec, "在工作区写一个 hello.md,问候一下。",
                                      on_event=lambda ev: render_event(console, ev))
            finally:
                rt.close()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    ok = result.ok and target.is_file()
    console.rule("[green]完成[/]" if ok else "[red]失败[/]")
    console.print(f"session {result.session_id} · {result.duration_s}s · attempts {result.attempts}"
                  f" · manifest {rt.manifest_path}")
    if target.is_file():
        console.print(f"[bold]{DEMO_FILE}[/]:\n{target.read_text(encoding='utf-8')}")
    if not ok:
        console.print(f"[red]{result.error}[/]")
    return 0 if ok else 1
