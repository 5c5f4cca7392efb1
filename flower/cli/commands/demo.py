"""``flower demo``: the default job (``starter_flow``) offline, on the production path.

flower's scripted fake model server runs on loopback; everything else is real — the SDK,
the bundled ``claude`` CLI executing tools, the hooks walling each role, the session
store, manifest and lineage. There is no demo-only workflow: this is exactly what
``flower "写个 md 转 html 的脚本"`` runs, with a fake model playing every role:

* the clarifier asks one question (the demo answers it and shows the answer) and writes
  the four-section brief;
* the goal-setter turns it into a three-item checklist;
* the coordinator dispatches a ``coder`` worker (a subagent) that writes and runs the
  script — forgetting lists the first time;
* a fresh judge reads ``sample.html``, finds the missing ``<li>`` and sends the gap back;
  the second round closes it and the judge says achieved;
* a read-only closing session looks at the script and writes the handover for the next
  tool into ``CLAUDE.md`` and ``AGENTS.md`` (``sample.html`` is generated: don't edit it).

It is built to be interrupted: kill it (even ``kill -9``) and run ``flower demo`` again —
it wakes up, skips what is frozen, and the work step resumes its own session. The fake
model decides from the state of the workspace and the conversation, not from a fixed list
of replies, so it makes the right next move wherever a crash left things.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from flower import texts
from flower.cli.exitcodes import ExitCode
from flower.core.human import TOOL_NAME as ASK_TOOL

DEMO_DIR = "flower-demo"
# the fake "thinks" before each reply, so there is time to press Ctrl-C or kill
PAUSE_S = float(os.environ.get("FLOWER_DEMO_PAUSE", "0.6"))
ASK = "写个 md 转 html 的脚本"

QUESTION = "转换要支持哪些 Markdown 写法?"
OPTIONS = ["标题、段落和列表就够了", "再加上代码块和表格"]

BRIEF = """## 目标
写一个把 Markdown 转成 HTML 的命令行小脚本 md2html.py,给想快速预览笔记的人用。

## 验收标准
- `python3 md2html.py sample.md` 生成 sample.html
- `# 标题` 变成 <h1>,`- 列表项` 变成 <li>

## 边界
- 支持范围按人的回答:{answer}
- 只用 Python 标准库,不做样式

## 未知与假设
- 没说输出编码,按 UTF-8 处理
"""

GOAL = """## 目标
md2html.py 能把 sample.md 转成结构正确的 sample.html。

## 判定清单
- 运行 python3 md2html.py sample.md 之后 sample.html 存在
- sample.html 里 # 标题变成了 <h1>
- sample.html 里 - 列表项变成了 <li>
"""

TASK_BUILD = ("按工作台 notes/需求.md 实现 md2html.py;准备一个 sample.md,"
              "运行 python3 md2html.py sample.md 验证。"
              "超过 2000 字符的产出写进工作台的 artifacts/。")
TASK_FIX = "判定说 sample.html 里没有 <li>:给 md2html.py 补上列表支持,重新生成 sample.html 并验证。"
FIX_MARK = "补上列表"

SCRIPT_HEAD = '''"""md2html: a small Markdown to HTML converter (headings, paragraphs, lists)."""
import html
import sys
from pathlib import Path


def convert(md: str) -> str:
    out, in_list = [], False
    for line in md.splitlines():
'''
SCRIPT_LISTS = '''        if line.startswith("- "):
            if not in_list:
                out.append("<ul>")
                in_list = True
            out.append(f"<li>{html.escape(line[2:])}</li>")
            continue
        if in_list:
            out.append("</ul>")
            in_list = False
'''
SCRIPT_TAIL = '''        if line.startswith("#"):
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
SCRIPT_V1 = SCRIPT_HEAD + SCRIPT_TAIL  # the first round forgets lists — the judge notices
SCRIPT = SCRIPT_HEAD + SCRIPT_LISTS + SCRIPT_TAIL

BEQUEST = """## 这是什么
md2html.py:把 Markdown 转成 HTML 的命令行小脚本(标题、段落、列表),只用标准库。
运行 `python3 md2html.py sample.md`。

## 验收:达成与未达成
- 达成:sample.html 由 md2html.py 生成,# 标题是 <h1>,- 列表项是 <li>
- 未达成:(无)

## 哪些文件是生成的、由什么生成
- `sample.html` ← `python3 md2html.py sample.md`:别手改它,改 md2html.py 或 sample.md 再重新生成

## 走不通的路
(无)

## 工作台在哪、怎么读
工作台在 `.flower/`,先读索引 `.flower/INDEX.md`;
需求在 `.flower/notes/需求.md`,判定清单在 `.flower/notes/目标.md`。
"""

SAMPLE = "# 你好,flower\n\n这是 demo 生成的示例。\n\n- 能断点续跑\n- 能等网络恢复\n"


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0]


class DemoBrain:
    """The fake model: tells the roles apart by their rules, then picks the next move from
    the conversation so far and what exists on disk."""

    def __init__(self, ws: Path, *, pause: float = PAUSE_S) -> None:
        self.ws = ws
        self.pause = pause

    def __call__(self, req: Any) -> Any:
        from flower.testing import delay

        if req.agent_id:
            move = self._coder(req)
        elif _first_line(texts.CLARIFIER_RULES) in req.system_text:
            move = self._clarify(req)
        elif _first_line(texts.JUDGE_RULES) in req.system_text:
            move = self._judge(req)
        elif _first_line(texts.BEQUEST_RULES) in req.system_text:
            move = self._bequeath(req)
        else:
            move = self._coordinate(req)
        return delay(self.pause, move) if self.pause else move

    # -- roles ----------------------------------------------------------------------------

    def _clarify(self, req: Any) -> Any:
        from flower.testing import reply, tool_use

        asked = req.tool_uses(ASK_TOOL)
        answer = req.result_of(asked[-1]["id"]) if asked else None
        if answer is None or answer.startswith(texts.ORPHAN_RESULT[:6]):
            return reply("先确认一件事。", tool_use(ASK_TOOL, {"question": QUESTION,
                                                          "options": OPTIONS}))
        return reply(BRIEF.format(answer=answer.strip().splitlines()[0]))

    def _judge(self, req: Any) -> Any:
        from flower.testing import reply, tool_use

        if _first_line(texts.SET_PROMPT) in req.first_user_text():
            return reply(GOAL)
        reads = req.tool_uses("Read")
        if not reads:
            return reply("先亲眼看看产物。",
                         tool_use("Read", {"file_path": str(self.ws / "sample.html")}))
        seen = req.result_of(reads[-1]["id"]) or ""
        if "<h1>" in seen and "<li>" in seen:
            return reply("## 结论\n已达成\n\n## 理由\nsample.html 存在,标题是 <h1>,"
                         "列表项是 <li>。\n\n## 未通过\n无")
        if "<h1>" in seen:
            return reply("## 结论\n未达成\n\n## 理由\nsample.html 里的列表还是普通段落,"
                         "没有 <li>。\n\n## 未通过\n- sample.html 里 - 列表项变成了 <li>")
        return reply("## 结论\n未达成\n\n## 理由\n没找到可用的 sample.html。\n\n## 未通过\n"
                     "- 运行 python3 md2html.py sample.md 之后 sample.html 存在")

    def _bequeath(self, req: Any) -> Any:
        from flower.testing import reply, tool_use

        if not req.tool_uses("Read"):  # look at the script before saying what it generates
            return reply("先看一眼脚本。",
                         tool_use("Read", {"file_path": str(self.ws / "md2html.py")}))
        return reply(BEQUEST)

    def _coordinate(self, req: Any) -> Any:
        from flower.testing import reply, tool_use

        if req.last_tool_results():  # a worker's report came back
            return reply("coder 回报做完了:md2html.py 写好并跑过,sample.html 已生成。"
                         "交给判定去检查。")
        page = _read(self.ws / "sample.html")
        if texts.WORK_CARRY_ON in req.last_user_text() and "<li>" in page:
            return reply("上次已经做完:sample.html 里标题和列表都对。交给判定再确认一次。")
        fix = texts.VERDICT_FEEDBACK_HEAD in req.text()
        task = TASK_FIX if fix else TASK_BUILD
        return reply("派 coder 去做。", tool_use("Agent", {
            "description": "补上列表支持" if fix else "实现 md2html.py",
            "prompt": task, "subagent_type": "coder"}))

    def _coder(self, req: Any) -> Any:
        from flower.testing import reply, text, tool_use

        ws = self.ws
        fix = FIX_MARK in req.first_user_text()
        script = _read(ws / "md2html.py")
        if not script or (fix and "<li>" not in script):
            content, say = (SCRIPT, "补上列表。") if fix else (SCRIPT_V1, "先写转换脚本。")
            return reply(text(say), tool_use("Write", {
                "file_path": str(ws / "md2html.py"), "content": content}))
        if not (ws / "sample.md").is_file():
            return reply(text("再准备一个示例文件。"), tool_use("Write", {
                "file_path": str(ws / "sample.md"), "content": SAMPLE}))
        page = _read(ws / "sample.html")
        if not page or ("<li>" in script) != ("<li>" in page):
            return reply(text("跑一下转换。"),
                         tool_use("Bash", {"command": "python3 md2html.py sample.md"}))
        return reply("结论:md2html.py 可以把 sample.md 转成 sample.html。\n"
                     "证据:python3 md2html.py sample.md 输出 wrote sample.html。\n"
                     "产出:md2html.py、sample.md、sample.html。\n"
                     "未验证:没有试过更大的文件。")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def _demo_env(fake_url: str, config_dir: Path) -> dict[str, str]:
    """Process env for the demo: the CLI talks to the fake and keeps off the user's config;
    timeouts are roomier than the tests' because a newcomer's machine may be busy."""
    from flower.testing.env import offline_env

    return offline_env(fake_url, config_dir=str(config_dir), api_key="sk-flower-demo-offline",
                       CLAUDE_CODE_MAX_RETRIES="1", API_TIMEOUT_MS="30000",
                       CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS="30000",
                       FLOWER_NO_UPDATE="1")  # offline: no look for a newer version


@contextmanager
def _sealed(env: dict[str, str]) -> Iterator[None]:
    """``os.environ`` for the demo's duration: the user's own ``ANTHROPIC_*``/``CLAUDE*``
    variables removed (a real token or header would otherwise travel to the fake next to
    the demo's key), ``env`` set; all of it put back afterwards."""
    from flower.testing.env import foreign_keys

    saved = {k: os.environ.get(k) for k in [*foreign_keys(os.environ), *env]}
    for key in saved:
        os.environ.pop(key, None)
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_demo(workspace: str | None = None, notify: str | None = None) -> ExitCode:
    """Run (or continue) the demo flow; returns the process exit code. ``notify``
    (``--notify``) shows what that command hears in a real run: the question, the end.

    It is driven by the terminal session ``flower "…"`` uses (``run_workflow``), so Ctrl-C
    behaves the same: once stops the turn and waits for words, twice exits 130 with the
    run's own line (not click's ``Aborted!`` and exit 1)."""
    from rich.console import Console

    from flower.cli.context import notifier
    from flower.cli.tui.terminal import run_workflow
    from flower.core.runtime import Runtime
    from flower.testing import FakeServer
    from flower.workflow.starter import starter_flow
    from flower.workflow.wake import wake_banner, wake_state

    console = Console(highlight=False)
    ws = Path(workspace or DEMO_DIR).expanduser().resolve()
    ws.mkdir(parents=True, exist_ok=True)
    notes = notifier(console, notify, ws)  # made before the demo seals its environment
    run_dir = ws / "runs"
    state = wake_state(ws, run_dir=run_dir)
    wf = starter_flow("" if state["waking"] else ASK, workspace=ws, run_dir=run_dir,
                      timeout_s=60.0)
    with FakeServer() as fake:
        fake.fallback(DemoBrain(ws))
        console.rule(f"[bold]flower demo[/] · {texts.DEMO_OFFLINE} " + fake.url)
        if state["waking"] or state["woke"]:
            console.print(f"[bold cyan]{wake_banner(state)}[/]", highlight=False)
        else:
            console.print(texts.DEMO_START.format(ws=ws, ask=ASK), highlight=False)
        with _sealed(_demo_env(fake.url, run_dir / "claude-config")):
            # dotenv=False: the user's .env files and ~/.claude settings stay out of it too
            rt = Runtime(workspace=ws, run_dir=run_dir, workbench=wf.workbench, dotenv=False)
            wf.channel.on_event = _Story(console, wf.channel, notes)  # questions answer themselves
            try:
                code = run_workflow(console, replace(wf, channel=_DemoInbox(wf.channel)), rt,
                                    notify=notes)
            finally:
                if notes is not None:
                    notes.close()
    if code == ExitCode.INTERRUPTED:
        return code
    ok = code == ExitCode.OK
    console.rule("[green]完成[/]" if ok else "[red]没有完成[/]")  # the reason is printed above
    console.print(texts.DEMO_COST.format(cost=rt.total_cost(), manifest=rt.manifest_path),
                  highlight=False)
    if ok:
        console.print("[bold]sample.html[/]:", highlight=False)
        console.print(_read(ws / "sample.html"), highlight=False, markup=False)
        console.print(texts.DEMO_AGAIN.format(ws=ws), highlight=False)
    return code


class _Story:
    """The demo's automatic human: shows each question of the clarifier and answers it with
    the first option (and says so). It is the channel's own ``on_event``, so the terminal
    session renders everything else."""

    def __init__(self, console: Any, channel: Any, notes: Any = None) -> None:
        from flower.cli.tui.render import Renderer

        self.render = Renderer(console)
        self.channel = channel
        self.notes = notes  # --notify hears the question, as it would in a real run

    def __call__(self, ev: Any) -> None:
        self.render(ev)
        if self.notes is not None:
            self.notes.see(ev)
        p = ev.payload
        if ev.kind == "ask" and p.get("kind") != "mail" and p.get("state") == "asked":
            options = p.get("options") or [""]
            self.render.line(f"     {texts.DEMO_AUTO_ANSWER}", "dim")
            self.channel.answer(p["id"], options[0])


class _DemoInbox:
    """The channel as the terminal session sees it: everything passes through, except that
    input running out (piped stdin at EOF) does not make the demo's questions time out —
    the demo answers them itself."""

    def __init__(self, channel: Any) -> None:
        object.__setattr__(self, "_channel", channel)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._channel, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name != "timeout_s":
            setattr(self._channel, name, value)
