"""Brief: the clarify step's frozen four sections, and the section splitter all documents share."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flower import texts
from flower.core.brief import Brief, split_sections, strip_fences

FULL = """# 需求确认书

## 目标
写个 md 转 html 的脚本

## 验收标准
示例文件转出来和预期一致

## 边界
不引入第三方依赖

## 未知与假设
假设只处理 CommonMark 子集
"""
WANT = Brief("写个 md 转 html 的脚本", "示例文件转出来和预期一致", "不引入第三方依赖",
             "假设只处理 CommonMark 子集")


def test_full_document() -> None:
    assert Brief.parse(FULL) == WANT
    assert WANT.complete() and WANT.missing() == []


def test_missing_names_in_fixed_order() -> None:
    assert Brief().missing() == ["目标", "验收标准", "边界", "未知与假设"]
    assert Brief(accept="x", unknowns="y").missing() == ["目标", "边界"]
    assert not Brief(goal="x").complete()
    assert Brief(goal="  \n").missing()[0] == "目标"


# --- heading forms -------------------------------------------------------------------------


@pytest.mark.parametrize("heading", [
    "# 目标", "## 目标", "###### 目标", "##目标", "## 目标 ##", "**目标**", "目标:", "目标：",
    "1. 目标", "1、目标", "1) 目标", "## 1. 目标", "## **目标**", "**1. 目标**",
    "**目标:**", "**目标**:", "## 目标(一句话)", "## 目标（一句话）", "  ## 目标  ",
])
def test_heading_forms(heading: str) -> None:
    assert Brief.parse(f"{heading}\n做个 X\n").goal == "做个 X"


@pytest.mark.parametrize("line", [
    "目标: 做个X", "目标：做个X", "**目标**:做个X", "**目标**: 做个X", "**目标:** 做个X",
    "## 目标: 做个X", "3. 目标: 做个X", "目标(一句话): 做个X",
])
def test_body_on_the_heading_line(line: str) -> None:
    assert Brief.parse(line).goal == "做个X"


def test_body_on_heading_line_continues_below() -> None:
    assert Brief.parse("目标: 做个X\n给自己用\n边界: 无").goal == "做个X\n给自己用"


@pytest.mark.parametrize("line", [
    "目标是做一个工具", "**目标**是做一个工具", "目标 做一个工具", "### 目标是做一个工具",
    "- 目标: x", "假设条件: x", "未知数: x", "目标", "目标(一句话)",
])
def test_not_a_heading(line: str) -> None:
    b = Brief.parse(f"## 验收标准\n能跑\n{line}\n")
    assert b.accept == f"能跑\n{line}"
    assert b.goal == "" and b.unknowns == ""


@pytest.mark.parametrize(("alias", "key"), [
    ("目标", "goal"),
    ("验收标准", "accept"), ("验收条件", "accept"), ("验收", "accept"),
    ("边界", "bounds"), ("范围边界", "bounds"), ("不做什么", "bounds"),
    ("未知与假设", "unknowns"), ("未知项与假设", "unknowns"), ("未知项", "unknowns"),
    ("已知未知", "unknowns"), ("假设", "unknowns"), ("未知", "unknowns"),
])
def test_aliases(alias: str, key: str) -> None:
    assert getattr(Brief.parse(f"## {alias}\n内容\n"), key) == "内容"


def test_longest_alias_first() -> None:
    # 未知 must not claim 未知与假设 and leave "与假设" behind as junk or a non-heading
    b = Brief.parse("## 未知与假设\n甲\n## 验收\n乙")
    assert (b.unknowns, b.accept) == ("甲", "乙")
    assert Brief.parse("## 未知项与假设\n甲").unknowns == "甲"
    assert Brief.parse("## 未知\n甲").unknowns == "甲"


def test_hash_line_with_more_than_the_name_is_a_foreign_heading() -> None:
    b = Brief.parse("## 验收标准\n能跑\n## 目标是做一个工具\n正文")
    assert (b.accept, b.goal) == ("能跑", "")


def test_body_runs_to_next_recognised_heading_and_sections_in_any_order() -> None:
    b = Brief.parse("边界:不做 GUI\n\n\n\n还有\n目标:做X\n验收:跑\n未知:无")
    assert b == Brief("做X", "跑", "不做 GUI\n\n还有", "无")


# --- traps ---------------------------------------------------------------------------------


def test_title_and_note_never_leak() -> None:
    b = Brief(goal="g", accept="a", bounds="b", unknowns="u")
    md = b.to_markdown()
    assert md.startswith(texts.BRIEF_TITLE + "\n\n" + texts.BRIEF_NOTE)
    assert Brief.parse(md) == b
    # a note repeated inside a section is still not part of it
    assert Brief.parse(f"## 目标\ng\n{texts.BRIEF_NOTE}\n").goal == "g"


def test_closed_fence_content_removed() -> None:
    b = Brief.parse("## 目标\n做X\n```python\n## 边界\nimport os\n```\n还要快\n~~~~\n代码\n~~~~\n")
    assert b.goal == "做X\n还要快"
    assert b.bounds == ""


def test_fence_closes_only_with_same_char_and_length() -> None:
    text = "## 目标\nA\n````\n~~~\n```\n## 边界\nB\n````\n## 验收标准\nC"
    b = Brief.parse(text)
    assert (b.goal, b.bounds, b.accept) == ("A", "", "C")


def test_unclosed_fence_drops_everything_after_it() -> None:
    text = FULL.replace("## 边界", "```\n## 边界")
    b = Brief.parse(text)
    assert b.goal and b.accept
    assert b.bounds == "" and b.unknowns == ""
    assert b.missing() == ["边界", "未知与假设"]
    assert strip_fences("a\n~~~\nb\nc") == ["a"]


def test_inline_backticks_are_not_a_fence() -> None:
    assert Brief.parse("## 目标\n```x``` 行内\n## 边界\nB").bounds == "B"


@pytest.mark.parametrize("rule", ["---", "***", "___", "- - -", "* * *", "------"])
def test_horizontal_rules_dropped(rule: str) -> None:
    assert Brief.parse(f"## 目标\n做X\n{rule}\n## 边界\nB\n{rule}").goal == "做X"
    assert Brief.parse(f"## 目标\n{rule}\n## 边界\nB").goal == ""


def test_blank_runs_collapsed_and_body_stripped() -> None:
    assert Brief.parse("## 目标\n\n\n  甲  \n\n\n\n乙   \n\n").goal == "甲\n\n乙"


def test_duplicate_section_first_non_empty_wins() -> None:
    assert Brief.parse("## 目标\n\n## 目标\n第二\n## 目标\n第三").goal == "第二"
    assert Brief.parse("## 目标\n第一\n## 目标\n第二").goal == "第一"
    assert Brief.parse("## 目标\n(未填)\n## 目标\n第二").goal == "第二"


def test_plain_heading_of_the_open_section_is_body() -> None:
    b = Brief.parse("## 未知与假设\n- 输出格式未确认\n假设: 只处理 UTF-8\n2. 假设: 单文件")
    assert b.unknowns == "- 输出格式未确认\n假设: 只处理 UTF-8\n2. 假设: 单文件"
    # an explicit markdown heading of the same section is still a duplicate
    assert Brief.parse("## 目标\nA\n## 目标\nB").goal == "A"


def test_foreign_heading_closes_a_section() -> None:
    b = Brief.parse("## 验收标准\n(未填)\n\n## 杂项\n示例一致\n## 边界\nB")
    assert b.accept == "" and b.bounds == "B"
    assert Brief.parse("**目标**\nA\n# 附录\n一堆代码").goal == "A"


def test_deeper_foreign_heading_stays_in_the_body() -> None:
    b = Brief.parse("## 验收标准\n### 功能\n- 能转换\n### 性能\n- 1 秒内\n# 附录\nx")
    assert b.accept == "### 功能\n- 能转换\n### 性能\n- 1 秒内"


@pytest.mark.parametrize("placeholder", ["(未填)", "（未填）", "  (未填)  "])
def test_placeholder_counts_as_missing(placeholder: str) -> None:
    assert Brief.parse(f"## 目标\n{placeholder}\n").goal == ""


def test_split_sections_keeps_preamble_and_order() -> None:
    found = split_sections("前言\n## 甲\n1\n## 乙\n2\n## 甲\n3".splitlines(),
                           {"a": ("甲",), "b": ("乙",)})
    assert found == {"": ["前言"], "a": ["1", "3"], "b": ["2"]}


# --- rendering -----------------------------------------------------------------------------


def test_to_markdown_shape() -> None:
    md = Brief(goal="做X", bounds="不做 GUI").to_markdown()
    assert md == (f"{texts.BRIEF_TITLE}\n\n{texts.BRIEF_NOTE}\n\n## 目标\n做X\n\n## 验收标准\n"
                  "(未填)\n\n## 边界\n不做 GUI\n\n## 未知与假设\n(未填)\n")


def test_prompt_block_only_filled_sections() -> None:
    assert Brief(goal="做X", bounds="B").prompt_block() == "## 目标\n做X\n\n## 边界\nB"
    assert Brief().prompt_block() == ""
    assert texts.BRIEF_TITLE not in WANT.prompt_block()
    assert texts.BRIEF_NOTE not in WANT.prompt_block()


def test_unfilled_round_trip() -> None:
    b = Brief(goal="做X")
    again = Brief.parse(b.to_markdown())
    assert again == b and again.missing() == ["验收标准", "边界", "未知与假设"]


# --- write / load --------------------------------------------------------------------------


def test_write_and_load(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "需求.md"
    got = WANT.write(target)
    assert got == target.resolve() == WANT.path
    assert target.read_text(encoding="utf-8") == WANT.to_markdown()
    loaded = Brief.load(target)
    assert loaded == WANT and loaded is not None and loaded.path == target.resolve()


def test_write_is_atomic_and_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "需求.md"
    WANT.write(target)  # a complete brief is simply replaced
    Brief(goal="新").write(target)
    assert [p.name for p in tmp_path.iterdir()] == ["需求.md"]
    assert Brief.load(target) == Brief(goal="新")


@pytest.mark.parametrize("broken", [b"", "## \u76ee\u6807\n\u534a".encode(), b"\xff\xfe\x00",
                                    "dir"], ids=["empty", "half", "binary", "dir"])
def test_write_moves_a_broken_file_aside(tmp_path: Path, broken: bytes | str) -> None:
    """A file that is no complete brief may be a person's half edit: kept, not replaced."""
    target = tmp_path / "需求.md"
    if broken == "dir":
        target.mkdir()
        (target / "x").write_text("inside")
    else:
        target.write_bytes(broken)
    WANT.write(target)
    assert Brief.load(target) == WANT
    [aside] = tmp_path.glob("需求.md.corrupt-*")
    if broken == "dir":
        assert (aside / "x").read_text() == "inside"
    else:
        assert aside.read_bytes() == broken


def test_write_failure_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "需求.md"
    WANT.write(target)

    def boom(*_a: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", boom)
    with pytest.raises(OSError):
        Brief(goal="半截").write(target)
    assert Brief.load(target) == WANT
    assert [p.name for p in tmp_path.iterdir()] == ["需求.md"]


def test_load_restores_unfilled(tmp_path: Path) -> None:
    p = tmp_path / "需求.md"
    p.write_text(FULL.replace("不引入第三方依赖", "(未填)"), encoding="utf-8")
    loaded = Brief.load(p)
    assert loaded is not None and loaded.bounds == "" and loaded.missing() == ["边界"]


@pytest.mark.parametrize("content", [None, b"\xff\xfe\x00garbage\x80", "目标: x\0".encode(), "dir"])
def test_load_unreadable_is_none(tmp_path: Path, content: bytes | str | None) -> None:
    p = tmp_path / "需求.md"
    if content == "dir":
        p.mkdir()
    elif isinstance(content, bytes):
        p.write_bytes(content)
    assert Brief.load(p) is None


def test_load_text_without_sections_is_an_empty_brief(tmp_path: Path) -> None:
    p = tmp_path / "需求.md"
    p.write_text("随便写点什么\n", encoding="utf-8")
    assert Brief.load(p) == Brief()


# --- properties ----------------------------------------------------------------------------

# Body text that cannot form a heading, fence or rule: none of the alias characters, no
# '#', '*', '`', '~', '_', ':' — but bullets, numbering, parentheses, indentation and blanks.
_CHARS = st.sampled_from(list("abcxyzABC 0123456789.,()[]/中文内容测试一二三四五甲乙丙丁"))
_LINE = st.tuples(st.sampled_from(["", "- ", "  - ", "1. ", "2、", "    "]),
                  st.text(_CHARS, max_size=20)).map("".join)
_BODY = st.lists(_LINE, max_size=6).map("\n".join)


def canonical(body: str) -> str:
    """What a body looks like after parsing: rstripped lines, one blank max, stripped."""
    return re.sub(r"\n{3,}", "\n\n", "\n".join(ln.rstrip() for ln in body.split("\n"))).strip()


@given(_BODY, _BODY, _BODY, _BODY)
def test_round_trip(goal: str, accept: str, bounds: str, unknowns: str) -> None:
    b = Brief(*(canonical(x) for x in (goal, accept, bounds, unknowns)))
    assert Brief.parse(b.to_markdown()) == b
    assert Brief.parse(b.prompt_block()) == b


@given(st.text())
def test_parse_never_raises(text: str) -> None:
    b = Brief.parse(text)
    assert all(isinstance(getattr(b, k), str) for k in ("goal", "accept", "bounds", "unknowns"))
