"""Goal (the frozen checklist) and Verdict (the judge's answer for one round)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flower import texts
from flower.core.checklist import STATES, Goal, Verdict

# --- Goal ----------------------------------------------------------------------------------

DOC = "# 目标\n把 md 转成 html\n\n# 判定清单\n- 运行 x 输出 y\n- 示例一致\n"


def test_parse_file_format() -> None:
    g = Goal.parse(DOC)
    assert g == Goal("把 md 转成 html", ["运行 x 输出 y", "示例一致"])
    assert g.complete() and g.missing() == []
    assert g.to_markdown() == DOC


@pytest.mark.parametrize("line", [
    "- 能跑", "* 能跑", "+ 能跑", "1. 能跑", "1.能跑", "12. 能跑", "1、能跑", "1) 能跑", "1）能跑",
    "- [ ] 能跑", "- [x] 能跑", "- [X] 能跑", "* [ ] 能跑", "1. [x] 能跑", "-[ ] 能跑", "能跑",
    "   - 能跑   ", "• 能跑",
])
def test_bullet_forms(line: str) -> None:
    assert Goal.parse(f"# 判定清单\n{line}\n").checks == ["能跑"]


def test_bullet_traps() -> None:
    checks = Goal.parse("# 判定清单\n1.5 秒内返回\n**重要** 能跑\n-v 参数可用\n").checks
    assert checks == ["1.5 秒内返回", "**重要** 能跑", "-v 参数可用"]


@pytest.mark.parametrize("alias", ["判定清单", "判定条件", "验收清单", "检查项", "判定"])
def test_check_aliases(alias: str) -> None:
    assert Goal.parse(f"目标: X\n**{alias}**\n- 一\n- 二").checks == ["一", "二"]


@pytest.mark.parametrize("alias", ["目标", "完成标志"])
def test_statement_aliases(alias: str) -> None:
    assert Goal.parse(f"## {alias}\n做 X\n## 判定清单\n- 一").statement == "做 X"


def test_blank_lines_and_empty_marker_skipped() -> None:
    assert Goal.parse("# 判定清单\n\n- 一\n\n\n- 二\n(空)\n").checks == ["一", "二"]
    assert Goal.parse("# 目标\nX\n\n# 判定清单\n(空)\n").checks == []
    assert Goal.parse("# 目标\nX\n\n# 判定清单\n（空）\n").checks == []


def test_first_non_empty_checklist_wins() -> None:
    assert Goal.parse("# 判定清单\n(空)\n# 检查项\n- 一\n# 判定清单\n- 二").checks == ["一"]


def test_foreign_heading_ends_the_checklist() -> None:
    g = Goal.parse("# 目标\nX\n\n# 判定清单\n- 一\n- 二\n\n# 备注\n- 不算\n")
    assert g.checks == ["一", "二"]


def test_fenced_code_is_not_a_check() -> None:
    assert Goal.parse("# 判定清单\n- 一\n```\n- 代码\n```\n- 二").checks == ["一", "二"]
    assert Goal.parse("# 目标\nX\n```\n# 判定清单\n- 一").checks == []


def test_checkboxes_without_a_checklist_heading() -> None:
    todo = "随手写的\n- [ ] 一\n- [x] 二\n* [ ] 三\n- 不是\n"
    assert Goal.parse(todo).checks == ["一", "二", "三"]
    assert Goal.parse("# 目标\n只有目标\n").checks == []


@pytest.mark.parametrize("item", [
    "能跑 [此环境无法验证:没有 GPU]", "能跑 [此环境无法验证：没有 GPU]", "[无法验证:要真机] 能跑",
    "能跑［此环境无法验证:x］", "能跑 [ 无法验证]",
])
def test_unverifiable_marker_variants(item: str) -> None:
    g = Goal.parse(f"# 目标\nX\n# 判定清单\n- {item}\n- 可以验证的")
    assert g.unverifiable == [item]


def test_verifiable_items_are_not_flagged() -> None:
    assert Goal(checks=["能跑", "说明里写了无法验证的原因", "此环境无法验证"]).unverifiable == []


def test_missing() -> None:
    assert Goal().missing() == ["目标", "判定清单"]
    assert Goal("X").missing() == ["判定清单"]
    assert Goal(checks=["一"]).missing() == ["目标"]
    assert Goal(" \n", ["一"]).missing() == ["目标"]
    assert not Goal("X").complete()


def test_amend_appends() -> None:
    g = Goal("做 X", ["一"])
    assert g.amend("也要支持 Y") is g
    assert g.statement == "做 X\n\n(已修改)也要支持 Y"
    g.amend("还有 Z")
    assert g.statement == "做 X\n\n(已修改)也要支持 Y\n\n(已修改)还有 Z"
    assert Goal.parse(g.to_markdown()) == g


def test_to_markdown_empty() -> None:
    assert Goal().to_markdown() == "# 目标\n(空)\n\n# 判定清单\n(空)\n"
    assert Goal.parse(Goal().to_markdown()) == Goal()


def test_prompt_block() -> None:
    assert Goal("X", ["一", "二"]).prompt_block() == "## 目标\nX\n\n## 判定清单\n- 一\n- 二"
    assert Goal("X").prompt_block() == "## 目标\nX"
    assert Goal().prompt_block() == ""


def test_write_load(tmp_path: Path) -> None:
    g = Goal("X", ["一", "二 [此环境无法验证:没网]"])
    target = tmp_path / "notes" / "目标.md"
    assert g.write(target) == target.resolve() == g.path
    assert [p.name for p in target.parent.iterdir()] == ["目标.md"]
    loaded = Goal.load(target)
    assert loaded == g and loaded is not None and loaded.path == target.resolve()
    assert loaded.unverifiable == ["二 [此环境无法验证:没网]"]


def test_load_empty_marker_means_no_checks(tmp_path: Path) -> None:
    p = tmp_path / "目标.md"
    Goal("X").write(p)
    loaded = Goal.load(p)
    assert loaded is not None and loaded.checks == [] and loaded.missing() == ["判定清单"]


@pytest.mark.parametrize("content", [None, b"\x80\x81\xfe", b"# \xe7\x9b\xae\0"])
def test_load_unreadable_is_none(tmp_path: Path, content: bytes | None) -> None:
    p = tmp_path / "目标.md"
    if content is not None:
        p.write_bytes(content)
    assert Goal.load(p) is None


# --- Verdict: the word table ---------------------------------------------------------------

WORDS = {state: words for state, words in texts.VERDICT_WORDS}


@pytest.mark.parametrize(("state", "word"),
                         [(s, w) for s, ws in texts.VERDICT_WORDS for w in ws])
def test_every_word(state: str, word: str) -> None:
    assert Verdict.parse(f"## 结论\n{word}\n## 理由\nr").state == state
    assert Verdict.parse(f"结论: {word.upper()}").state == state


@pytest.mark.parametrize("word", WORDS["unreachable"])
def test_unreachable_words_never_pass(word: str) -> None:
    v = Verdict.parse(f"结论: 已达成,不过 {word}")
    assert v.unreachable and not v.achieved


@pytest.mark.parametrize(("text", "state"), [
    # 达成 inside the negative words
    ("未达成", "not_yet"), ("尚未达成", "not_yet"), ("没有达成", "not_yet"),
    ("未能达成", "not_yet"),
    ("无法达成", "unreachable"), ("不可达成", "unreachable"), ("已达成", "achieved"),
    # "achieved" inside "not achieved", and other English negations
    ("not achieved", "not_yet"), ("Not yet achieved", "not_yet"),
    ("The goal has not been achieved", "not_yet"), ("It didn't pass", "not_yet"),
    ("cannot be achieved here", "unreachable"),
    # "no" inside nothing / not / know / none
    ("Achieved — nothing missing", "achieved"), ("achieved, nothing missing", "achieved"),
    ("achieved; I know it works", "achieved"), ("Achieved. None failed.", "achieved"),
    ("yes", "achieved"), ("Pass", "achieved"), ("passed", "achieved"),
    # bare "no"
    ("no", "not_yet"), ("No.", "not_yet"), ("NO", "not_yet"), ("No, two items fail", "not_yet"),
    # first clause first
    ("已达成,没有未完成的项", "achieved"), ("未达成,之前以为已达成", "not_yet"),
    ("达成\n但第 3 条未通过", "achieved"),
    # no match in the first line: the rest of the conclusion decides
    ("逐条看过了\n第 2 条未达成", "not_yet"),
])
def test_ordering_traps(text: str, state: str) -> None:
    assert Verdict.parse(f"## 结论\n{text}\n\n## 理由\n见上").state == state


@pytest.mark.parametrize("text", [
    "Unachieved", "the password check is broken", "bypassed the hard part", "the eyes test",
])
def test_english_words_only_as_whole_words(text: str) -> None:
    assert not Verdict.parse(f"## 结论\n{text}").achieved


@pytest.mark.parametrize(("text", "state"), [
    ("1", "achieved"), ("true", "achieved"), ("TRUE", "achieved"), (" True. ", "achieved"),
    ("0", "not_yet"), ("false", "not_yet"), ("False", "not_yet"),
])
def test_bare_boolean_reply(text: str, state: str) -> None:
    assert Verdict.parse(text).state == state


@pytest.mark.parametrize(("text", "state"), [
    ("## 结论\n1", "achieved"), ("## 结论\n0", "not_yet"), ("## 结论\n判定结果 1 分", "achieved"),
    ("## 结论\n得分: 0", "not_yet"), ("## 结论\n第1条", ""),
])
def test_lone_digit_in_conclusion(text: str, state: str) -> None:
    assert Verdict.parse(text).state == state


@pytest.mark.parametrize("text", [
    "", "   ", "我看了一下,还行吧", "## 理由\n已达成全部条目", "## 结论\n\n## 理由\n已达成",
    "```\n## 结论\n已达成\n```", "## 结论\n嗯……", "10", "0.5",
])
def test_unparsable(text: str) -> None:
    v = Verdict.parse(text)
    assert v.state == "" and not v.ok and not v.achieved and not v.unreachable


def test_heading_forms_and_alias() -> None:
    assert Verdict.parse("**结论**:已达成").achieved
    assert Verdict.parse("判定：未达成\n依据：第 2 条没跑通").state == "not_yet"
    assert Verdict.parse("1. 结论\n无法验证\n2. 理由\n没 GPU").unreachable


def test_full_judge_reply() -> None:
    v = Verdict.parse("## 结论\n未达成\n\n## 理由\n第 2 条输出不一致。\n\n"
                      "## 未通过\n- 示例一致\n2. 错误提示\n- [ ] 中文路径\n")
    assert v == Verdict("not_yet", "第 2 条输出不一致。", ["示例一致", "错误提示", "中文路径"])
    assert v.ok and not v.achieved and not v.unreachable


@pytest.mark.parametrize("none", [
    "无", "(无)", "（无）", "没有", "none", "None", "N/A", "无。", "- 无",
])
def test_nothing_failed(none: str) -> None:
    assert Verdict.parse(f"## 结论\n已达成\n## 未通过\n{none}\n").failed == []


def test_conclusion_only_from_its_section() -> None:
    # the reason mentions words of other states; only the conclusion counts
    v = Verdict.parse("## 理由\n之前无法验证,现在可以了\n## 结论\n已达成\n## 未通过\n无")
    assert v.achieved and v.reason == "之前无法验证,现在可以了"


def test_preamble_is_the_conclusion_without_headings() -> None:
    assert Verdict.parse("已达成,全部条目都验证过").achieved
    assert Verdict.parse("看完了\n## 理由\n已达成").state == ""


# --- Verdict: feedback ---------------------------------------------------------------------


def test_feedback_content() -> None:
    v = Verdict("not_yet", "第 2 条输出不一致", ["示例一致", "错误提示"])
    fb = v.feedback()
    assert fb.startswith(texts.VERDICT_FEEDBACK_HEAD)
    assert "第 2 条输出不一致" in fb
    assert "- 示例一致\n- 错误提示" in fb
    assert fb.endswith(texts.VERDICT_FEEDBACK_TAIL)
    for phrase in ("只补", "不要推倒重来", "不要扩大范围"):
        assert phrase in fb


def test_feedback_without_reason_or_items() -> None:
    fb = Verdict().feedback()
    assert texts.VERDICT_NO_REASON in fb and texts.VERDICT_FEEDBACK_FAILED not in fb


# --- properties ----------------------------------------------------------------------------

_SAFE = st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"))
_CHARS = st.sampled_from(list("abcxyzABC 0123456789.,()/中文内容测试一二三四五甲乙丙丁"))
_LINE = st.tuples(st.sampled_from(["", "- ", "1. ", "    "]), st.text(_CHARS, max_size=20)).map(
    "".join)
_CHECK = st.tuples(st.sampled_from(list("abc中文甲乙")), st.text(_CHARS, max_size=20)).map(
    lambda t: (t[0] + t[1]).strip())


@given(st.lists(_LINE, max_size=5).map("\n".join), st.lists(_CHECK, max_size=6))
def test_goal_round_trip(statement: str, checks: list[str]) -> None:
    import re

    statement = re.sub(r"\n{3,}", "\n\n",
                       "\n".join(ln.rstrip() for ln in statement.split("\n"))).strip()
    g = Goal(statement, checks)
    assert Goal.parse(g.to_markdown()) == g
    assert Goal.parse(g.prompt_block()) == g


@given(st.text())
def test_verdict_never_raises(text: str) -> None:
    v = Verdict.parse(text)
    assert v.state in STATES and v.ok == bool(v.state)
    assert isinstance(v.feedback(), str)


@given(st.sampled_from(WORDS["unreachable"]), st.text(_SAFE, max_size=30),
       st.text(_SAFE, max_size=30), st.sampled_from(["## 结论\n", "结论: ", "**结论**\n", ""]))
def test_unreachable_word_is_never_achieved(word: str, before: str, after: str, head: str) -> None:
    v = Verdict.parse(f"{head}{before} {word} {after}")
    assert not v.achieved


@given(st.text(_SAFE, max_size=40))
def test_goal_parse_never_raises(text: str) -> None:
    g = Goal.parse(text)
    assert all(isinstance(c, str) and c for c in g.checks)
