"""Handoff documents move between flower and the original flower in both directions.

A ``notes/交接-<step>.md`` written by one is read by the other (a run folder moves between
the two, and a person may run either on it). ``original_read`` below is the original's
reader as its documentation describes it — written here from that description, not from
its code: five canonical headings plus a few aliases, the brief's heading forms, fenced
code ignored, ``(空)`` meaning empty, and a heading it does not know being plain body text
of the section above it. That last rule is why flower's older ``## 走不通的`` lost every
dead end into 已经定下的 there.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from flower import texts
from flower.core.handoff import HANDOFF_PROMPT, Handoff, degraded

KEYS = ("doing", "decided", "deadends", "next", "scene")
# the original's canonical headings, in field order, and the aliases its reader also knows
ORIGINAL_HEADINGS = ("现在在做什么", "已经定下的", "走不通的路", "下一步", "现场")
ORIGINAL_ALIASES = {
    "当前进度": "doing", "进度": "doing", "现在在做": "doing",
    "已定的事": "decided", "决策": "decided",
    "试过不行的": "deadends", "排除的路": "deadends",
    "文件": "scene",
}
_KNOWN = {**dict(zip(ORIGINAL_HEADINGS, KEYS, strict=True)), **ORIGINAL_ALIASES}
_NAMES = "|".join(re.escape(n) for n in sorted(_KNOWN, key=len, reverse=True))
# heading forms: "## X", "**X**", "X:" / "X：", "3. X"; a body may follow a colon
_HEADING = re.compile(rf"^\s*(#{{1,6}}\s*)?(\d+[.、)]\s*)?(\*\*)?({_NAMES})(?(3)\*\*)"
                      rf"\s*([:：]\s*(.*))?$")


def original_read(text: str) -> dict[str, str]:
    """Sections as the original flower reads them (first filled duplicate wins)."""
    found: dict[str, list[list[str]]] = {}
    current: list[str] | None = None
    fence = False
    for line in text.splitlines():
        if re.match(r"^\s*(```|~~~)", line):
            fence = not fence
            continue
        if fence:
            continue
        m = _HEADING.match(line)
        if m and any(m.group(g) for g in (1, 2, 3, 5)):  # a bare name is body text
            current = [m.group(6)] if m.group(6) else []
            found.setdefault(_KNOWN[m.group(4)], []).append(current)
        elif current is not None:
            current.append(line)
    out = {}
    for key in KEYS:
        bodies = ["\n".join(b).strip() for b in found.get(key, [])]
        bodies = [b for b in bodies if b and b != "(空)"]
        out[key] = bodies[0] if bodies else ""
    return out


def original_write(doc: dict[str, str], step: str) -> str:
    """A document in the original's form: a title, two note lines, one ``##`` section per
    field in order, ``(空)`` for an empty one."""
    parts = [f"# 交接书({step})", "> 上下文快满了,这是写给接手会话的交接。",
             "> 可以直接改这个文件,接手的会话读的就是它。"]
    parts += [f"## {h}\n{doc[k] or '(空)'}" for h, k in zip(ORIGINAL_HEADINGS, KEYS,
                                                           strict=True)]
    return "\n\n".join(parts) + "\n"


FULL = Handoff(
    doing="解析器写完了,正在补测试",
    decided="- 用标准库 html.parser:不引第三方依赖",
    deadends="- markdown-it 插件:版本锁不住\n- 正则硬解析:嵌套列表处理不了",
    next="运行 pytest tests/test_parse.py;失败都是空行就改 split_blocks",
    scene="- src/parse.py\n- tests/test_parse.py",
    step="干活",
)


def fields(doc: Handoff) -> dict[str, str]:
    return {k: getattr(doc, k) for k in KEYS}


def test_the_reader_helper_reproduces_the_documented_fold() -> None:
    """The helper is faithful where it matters: an unknown heading is body text, so the old
    short 走不通的 heading hands the dead ends to 已经定下的."""
    old = "## 现在在做\nA\n\n## 已定的事\nB\n\n## 走不通的\nC\n\n## 下一步\nD\n"
    read = original_read(old)
    assert read["doing"] == "A" and read["next"] == "D" and read["deadends"] == ""
    assert "C" in read["decided"]


@pytest.mark.parametrize("doc", [FULL, Handoff(doing="做A", next="做B", step="s"),
                                 degraded("干活", "原始任务:做个 md2html 工具", why="缺下一步")],
                         ids=["full", "sparse", "degraded"])
def test_flower_documents_read_whole_by_the_original(doc: Handoff, tmp_path: Path) -> None:
    path = doc.write(tmp_path / "交接-干活.md")
    on_disk = path.read_text(encoding="utf-8")
    assert original_read(on_disk) == fields(doc)
    for heading, key in zip(ORIGINAL_HEADINGS, KEYS, strict=True):
        assert f"## {heading}\n" in on_disk, key  # every section under the original's heading


@pytest.mark.parametrize("doc", [FULL, degraded("干活", "原始任务", why="上下文已经装不下")],
                         ids=["full", "degraded"])
def test_the_successor_prompt_uses_the_original_headings(doc: Handoff) -> None:
    block = doc.prompt_block()
    assert block.endswith(texts.HANDOFF_BLOCK_TAIL)
    body = block.removesuffix(texts.HANDOFF_BLOCK_TAIL)
    assert original_read(body) == fields(doc)
    assert Handoff.parse(body) == Handoff(**fields(doc))


def test_original_documents_read_whole_by_flower(tmp_path: Path) -> None:
    for doc in (fields(FULL), {**dict.fromkeys(KEYS, ""), "doing": "做A", "next": "做B"}):
        text = original_write(doc, "干活")
        assert Handoff.parse(text, step="干活") == Handoff(**doc, step="干活")
        path = tmp_path / "交接-干活.md"
        path.write_text(text, encoding="utf-8")
        loaded = Handoff.load(path)
        assert loaded is not None and fields(loaded) == doc and loaded.step == "干活"
        assert loaded.complete()


def test_original_heading_forms_and_aliases_read_by_flower() -> None:
    reply = ("**现在在做什么**:写测试\n\n已经定下的:只用标准库\n\n1. 走不通的路:换库\n\n"
             "## 下一步\n跑测试\n\n## 文件\n- a.py\n")
    want = {"doing": "写测试", "decided": "只用标准库", "deadends": "换库", "next": "跑测试",
            "scene": "- a.py"}
    assert original_read(reply) == want
    assert fields(Handoff.parse(reply)) == want


def test_the_writing_prompt_asks_for_the_original_headings() -> None:
    """A model that follows HANDOFF_PROMPT writes a reply both readers take whole."""
    prompt = HANDOFF_PROMPT.format(used="152.0K", window="200K")
    asked = re.findall(r"^## (\S+)$", prompt, re.MULTILINE)
    assert tuple(asked) == ORIGINAL_HEADINGS
    reply = "\n\n".join(f"## {h}\n{getattr(FULL, k)}"
                        for h, k in zip(asked, KEYS, strict=True))
    assert original_read(reply) == fields(FULL) == fields(Handoff.parse(reply))


def test_flowers_older_documents_still_read() -> None:
    """Files flower wrote before it switched headings keep loading complete."""
    old = ("# 交接书(干活)\n\n## 现在在做\nA\n\n## 已定的事\nB\n\n## 走不通的\nC\n\n"
           "## 下一步\nD\n\n## 现场\nE\n")
    assert fields(Handoff.parse(old)) == dict(zip(KEYS, "ABCDE", strict=True))
