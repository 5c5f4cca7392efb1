"""Every user-facing string flower prints or hands to a model, in one place so it can be
translated. The reference is Chinese; keep wording stable — tests and users rely on it.

Sections are owned by the module named in the heading; add new strings under it.
"""

from __future__ import annotations

# --- stores (trim / prune) -------------------------------------------------------------

# --- resilience / runtime ---------------------------------------------------------------

# Sent when a step resumes after a failure. Deliberately no error details: the model needs
# "you were cut off, continue", not whether it was ENOTFOUND or 503.
RESUME_PROMPT = (
    "上一轮在中途被打断,没有跑完。检查一下工作台里已经落盘的东西,从中断处接着做,不要重头来过。"
)
OFFLINE_WAIT = "{host}:{port} 不可达,等待恢复(最多 {minutes} 分钟)"
OFFLINE_WAIT_SECONDS = "{host}:{port} 不可达,等待恢复(最多 {seconds} 秒)"
ONLINE_AGAIN = "{host}:{port} 恢复,继续"

# --- env / credentials ------------------------------------------------------------------

# --- lineage / wake / workbench ---------------------------------------------------------

# Workbench INDEX.md: regenerated on every write under the workbench; people read it too.
WB_INDEX_TITLE = "# 工作台索引"
WB_INDEX_NOTE = "自动生成,不要手改。位置:`{root}`"
WB_SECTIONS = ("可复用脚本", "产出", "决策记录")  # scripts/, artifacts/, notes/
WB_ENTRY = "- `{path}` — {desc} ({size})"
WB_NO_DESC = "(无说明)"
WB_EMPTY = "(空)"

# The block the main agent sees once, at the top of a new session's first message.
WB_BLOCK_TITLE = "## 工作台"
WB_BLOCK_HEAD = (
    "工作台在 `{root}`,索引 `{index}`(有文件落盘就自动更新)。"
    "下面是已有的东西:先看,能用就用,别重写。"
)
WB_BLOCK_EMPTY = "(目前为空)"
WB_BLOCK_MORE = "… 还有 {n} 个,ls {dir}"
WB_RULES = (
    "规则:\n"
    "1. 要跑第二次的脚本放进 `{scripts}`,首行写 `# desc: 一句话说明`。\n"
    "2. 超过 2000 字符的产出(报告、数据、日志)写进 `{artifacts}`,回复里只给路径和结论。\n"
    "3. 关键决策写进 `{notes}`,一个决策一个文件。"
)
WB_EXTERNAL = "工作台在仓库外面,一律用绝对路径访问。"
# Wraps the block inside the first user message, so it is recognisable (and never doubled).
WB_INJECT_OPEN = "<workbench-index>"
WB_INJECT_CLOSE = "</workbench-index>"

# Wake banner (seed 000): "<- 在 ~/proj 接上上次  需求已确认 · 目标 15 条 · 干活上下文 80.2K · 第 3 次唤醒"
WAKE_BANNER = "<- 在 {where} 接上上次"
WAKE_BRIEF_OK = "需求已确认"
WAKE_CHECKS = "目标 {n} 条"
WAKE_CONTEXT = "{step}上下文 {size}"
WAKE_ORDINAL = "第 {n} 次唤醒"
WAKE_SEP = " · "
WORK_STEP = "干活"  # the starter flow's work step: its context size goes into the banner

# Headings wake.py falls back on while flower.core.brief / flower.core.goal are absent.
BRIEF_SECTIONS = ("目标", "验收标准", "边界", "未知与假设")
BRIEF_UNFILLED = "(未填)"
GOAL_CHECK_HEADINGS = ("判定清单", "判定条件", "验收清单", "检查项", "判定")
GOAL_EMPTY = "(空)"

# --- cli / demo -------------------------------------------------------------------------
