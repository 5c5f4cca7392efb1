"""What parsers accept: the headings, markers and keyword tables that flower's own code
matches against when it reads a model reply, a hand-edited file or its own records.

Split from prompts and messages because these look like translatable prose but are not:
changing one changes what parses, and files written with the old words stop being read.
Headings that flower both writes and parses live here, and the writer uses them from here.
"""

# --- lineage / wake / workbench ---------------------------------------------------------

# Wraps the block inside the first user message, so it is recognisable (and never doubled):
# inject_index() looks for the opening tag before adding a block.
WB_INJECT_OPEN = "<workbench-index>"
WB_INJECT_CLOSE = "</workbench-index>"

# The starter flow's work step name; its context size goes into the wake banner. A step name
# is also the key of its session in lineage.json: renaming it orphans a running job's session.
WORK_STEP = "干活"  # the starter flow's work step: its context size goes into the banner

# --- documents (core/brief.py, core/checklist.py) ---------------------------------------------

# Brief (需求.md): the frozen output of the clarify step. Section names in field order
# (goal, accept, bounds, unknowns); they are what ``Brief.missing()`` reports.
BRIEF_SECTIONS = ("目标", "验收标准", "边界", "未知与假设")
# The file's note; Brief.parse() drops this exact line wherever it appears.
BRIEF_NOTE = (
    "> 由「确认需求」这一步生成并冻结。要改需求,直接编辑这个文件;"
    "删掉它再运行,会重新确认需求。"
)
BRIEF_UNFILLED = "(未填)"  # placeholder for an empty section; still counts as missing
# Headings accepted when parsing, per field (matched longest first, whole heading only).
BRIEF_ALIASES = {
    "goal": ("目标",),
    "accept": ("验收标准", "验收条件", "验收"),
    "bounds": ("边界", "范围边界", "不做什么"),
    "unknowns": ("未知与假设", "未知项与假设", "未知项", "已知未知", "假设", "未知"),
}

# Goal (目标.md): the statement and the checklist the judge walks item by item.
GOAL_SECTIONS = ("目标", "判定清单")  # statement, checks
GOAL_EMPTY = "(空)"  # placeholder for an empty statement or checklist
GOAL_ALIASES = {
    "statement": ("目标", "完成标志"),
    "checks": ("判定清单", "判定条件", "验收清单", "检查项", "判定"),
}
# A check carrying this marker cannot be verified here, e.g. "[此环境无法验证:没有 GPU]";
# the shorter form "[无法验证…" is accepted too.
GOAL_UNVERIFIABLE_MARKS = ("此环境无法验证", "无法验证")

# Verdict: the judge's three sections.
VERDICT_ALIASES = {
    "state": ("结论", "判定"),
    "reason": ("理由", "依据"),
    "failed": ("未通过",),
}
# Conclusion words, checked in this order (the first state with a hit wins), so 达成 never
# pre-empts 未达成/无法达成 and "achieved" never pre-empts "not achieved". ASCII words are
# matched as whole words; a bare "no" counts only as the whole conclusion (VERDICT_BARE_NO).
VERDICT_WORDS = (
    ("unreachable", (
        "无法验证", "没法验证", "验证不了", "无法判定",
        "无法达成", "不可达成", "达成不了", "做不到",
        "unverifiable", "not verifiable", "cannot verify", "can not verify", "can't verify",
        "can’t verify", "unable to verify", "cannot be achieved", "can't be achieved",
        "unreachable", "impossible",
    )),
    ("not_yet", (
        "尚未达成", "未达成", "没达成", "没有达成", "未能达成", "没能达成", "不算达成",
        "未完成", "没完成", "没有完成", "未通过", "没通过", "不通过",
        "not_yet", "not yet", "not achieved", "not met", "not done", "incomplete",
    )),
    ("achieved", ("已达成", "达成", "已完成", "achieved", "yes", "pass", "passed")),
)
VERDICT_BARE_NO = "no"
# Lines of the 未通过 section that mean "nothing failed".
VERDICT_NONE = ("无", "(无)", "没有", "none", "n/a", "nothing", "无未通过项")

# --- human channel (core/human.py) ------------------------------------------------------

# Q&A log (notes/问答记录.md): a resumed clarify step reads the entries after this line.
QA_LOG_NOTE = "> 人和 agent 之间的问答留档,只给人看;不在任何 agent 的上下文里。"

# --- handoff (core/handoff.py) -------------------------------------------------------------

# Handoff (交接-<step>.md): what a session near a full context leaves its successor. Section
# names in field order (doing, decided, deadends, next, scene); missing() reports these, and
# the document, its prompt form and HANDOFF_PROMPT use them as headings. They are the original
# flower's headings: it reads only these (and a few aliases), and it does not know flower's
# older short 走不通的 — a document with that heading loses its dead ends into 已经定下的.
HANDOFF_SECTIONS = ("现在在做什么", "已经定下的", "走不通的路", "下一步", "现场")
HANDOFF_EMPTY = "(空)"  # placeholder for an empty section; still counts as missing
# Headings accepted when parsing, per field (matched longest first, whole heading only).
# The short headings flower wrote before (现在在做 / 已定的事 / 走不通的) are still read.
HANDOFF_ALIASES = {
    "doing": ("现在在做什么", "现在在做", "在做什么", "当前进度", "进度", "当前状态"),
    "decided": ("已经定下的", "已定的事", "已经定下的事", "已定", "决策", "已做的决定"),
    "deadends": ("走不通的路", "走不通的", "试过不行的", "排除的路", "死路", "踩过的坑"),
    "next": ("下一步", "下一步做什么", "接下来", "下一步要做的"),
    "scene": ("现场", "文件", "关键文件", "现场指针"),
}
# Handoff.load() reads the step name back from this title.
HANDOFF_TITLE = "# 交接书({step})"
# Marks a degraded() document (the mechanical fallback); ``Handoff.degraded`` looks for it.
HANDOFF_DEGRADED = "[降级:交接没写成]"

# --- bequest (core/bequest.py) ---------------------------------------------------------------

# The handover block flower keeps in CLAUDE.md and AGENTS.md at the workspace root. A rerun
# finds its own block by these two marker lines (a line holding only ``<!-- flower:begin … -->``
# and one holding only ``<!-- flower:end -->``): changing them strands every block already
# written, and the next run appends a second one.
BEQUEST_BEGIN = "<!-- flower:begin 这一段由 flower 在运行结束时生成,重跑会整段替换;标记之外的内容归你 -->"
BEQUEST_END = "<!-- flower:end -->"
# The five sections of the handover, in field order (what, accept, generated, deadends,
# workbench); ``Bequest.missing()`` reports the required ones (the first and the last) by name.
BEQUEST_SECTIONS = ("这是什么", "验收:达成与未达成", "哪些文件是生成的、由什么生成", "走不通的路",
                    "工作台在哪、怎么读")
# Headings accepted when parsing, per field (matched longest first, whole heading only).
BEQUEST_ALIASES = {
    "what": ("这是什么", "这是什么项目", "项目是什么"),
    "accept": ("验收:达成与未达成", "验收：达成与未达成", "验收", "验收结果", "达成与未达成"),
    "generated": ("哪些文件是生成的、由什么生成", "哪些文件是生成的", "生成的文件", "生成文件",
                  "生成的文件与来源"),
    "deadends": ("走不通的路", "走不通的", "试过不行的", "死路"),
    "workbench": ("工作台在哪、怎么读", "工作台在哪", "工作台在哪里", "工作台", "怎么读工作台"),
}
BEQUEST_NONE = "(无)"  # an honestly empty section; in a required one it counts as missing
# Marks the mechanical fallback block; ``Bequest.degraded`` looks for it.
BEQUEST_DEGRADED = "[降级:收尾交接没写成]"

__all__ = [name for name in dir() if name.isupper()]
