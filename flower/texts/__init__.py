"""Every user-facing string flower prints or hands to a model, in one place so it can be
translated. The reference is Chinese; keep wording stable — tests and users rely on it.

Sections are owned by the module named in the heading; add new strings under it.
"""

from __future__ import annotations

# --- stores (trim / prune) -------------------------------------------------------------

# Replaces an old large tool_result body on resume; the full text is in the spill file.
SPILL_POINTER = "[工具结果已归档:{n} 字符。完整内容在 {path},需要时用 Read 读取]"
# Replaces the body of an old read-only Bash result (ls, git branch …) whose truth decays.
EPHEMERAL_EXPIRED = "[{cmd} 的结果已过期(第 {age} 轮前),当前状态可能已变。需要请重新执行]"
# Replaces the body of a tool_result left behind by an interrupted turn.
INTERRUPTED_RESULT = "[上一轮在此处被中断,该工具结果未产生]"
# Result supplied for a tool_use that never got one (cut off mid-call).
ORPHAN_RESULT = "[这一步被打断了,没有结果。需要的话重做。]"
# trim_report(): one line for UI logs.
TRIM_NOTHING = "未裁剪"
TRIM_EXPIRED_ONLY = "{expired} 个时效性结果标记为过期"
TRIM_DONE = "裁掉 {cleared} 个工具结果(保留最近 {kept} 个),省下 ~{tokens} tokens"

# --- resilience / runtime ---------------------------------------------------------------

# Sent when a step resumes after a failure. Deliberately no error details: the model needs
# "you were cut off, continue", not whether it was ENOTFOUND or 503.
RESUME_PROMPT = (
    "上一轮在中途被打断,没有跑完。检查一下工作台里已经落盘的东西,从中断处接着做,不要重头来过。"
)
RETRY_AFTER_FAILURE = "{step}: 第 {attempt} 次尝试失败,稍后重试({error})"
OFFLINE_GAVE_UP = "{error}(网络中断过久,放弃重试)"
# Appended to the human's words when an interrupt resumes the session.
INTERRUPT_NOTE = (
    "(这是人类在运行中插话。刚才正在执行的工具调用如果显示被中断,那是这次插话造成的,"
    "不是环境故障;按上面的话调整后继续。)"
)
OFFLINE_WAIT = "{host}:{port} 不可达,等待恢复(最多 {minutes} 分钟)"
OFFLINE_WAIT_SECONDS = "{host}:{port} 不可达,等待恢复(最多 {seconds} 秒)"
ONLINE_AGAIN = "{host}:{port} 恢复,继续"

# --- env / credentials ------------------------------------------------------------------

# check_credentials(): what is missing, where flower looked, how to fix it.
CRED_MISSING = (
    "没找到 API 凭证:ANTHROPIC_API_KEY 和 ANTHROPIC_AUTH_TOKEN 都没设置(空值也算没设置)。\n"
    "按优先级找过这些地方:\n"
    "{places}\n"
    "任选一种办法补上:\n"
    "  - 运行 flower setup,按提示填\n"
    "  - export ANTHROPIC_API_KEY=sk-ant-…(走网关就用 ANTHROPIC_AUTH_TOKEN=…)\n"
    "  - 在 {user_env} 里写一行 ANTHROPIC_API_KEY=…"
)
CRED_EMPTY_KEY = "注意:{key} 是空值,它挡住了后面所有来源——删掉那一整行,不要留空。"
CRED_PLACE = "  {n}. {what}"
CRED_PLACE_PROCESS = "进程环境变量(export 的)"
CRED_PLACE_FLOWER_ENV = "$FLOWER_ENV 指向的文件:{path}"
CRED_PLACE_FLOWER_ENV_UNSET = "$FLOWER_ENV(没设置)"
CRED_PLACE_CWD = "当前目录的 .env:{path}"
CRED_PLACE_USER = "用户配置:{path}(flower setup 写这里)"
CRED_PLACE_REPO = "源码仓库根目录的 .env:{path}"
CRED_PLACE_CLAUDE = "Claude Code 的 {path} 与 settings.local.json 里的 env 块(只借 9 个凭证键)"
CRED_PLACE_EXPLICIT = "只读了指定的文件:{path}"

# describe() / mask(): secrets are never shown whole.
MASKED = "{head}…(共 {n} 位)"
MASKED_SHORT = "…(共 {n} 位)"
DESCRIBE_DEFAULT = "{value}(默认)"
DESCRIBE_UNSET = "(未设置)"

# probe_credentials() details (the CLI decides how to present the verdict).
PROBE_NO_CREDS = "没有凭证:ANTHROPIC_API_KEY 和 ANTHROPIC_AUTH_TOKEN 都是空的"
PROBE_BAD_URL = "网关地址不对:{url}"
PROBE_HTTP = "HTTP {status}:{body}"
PROBE_NET = "连不上 {url}:{reason}"

# First line of the file written by write_user_env().
USER_ENV_HEADER = "# 由 flower setup 写入;里面有密钥,不要提交到仓库。"

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

# Wake banner (seed 000), e.g.
# "<- 在 ~/proj 接上上次  需求已确认 · 目标 15 条 · 干活上下文 80.2K · 第 3 次唤醒"
WAKE_BANNER = "<- 在 {where} 接上上次"
WAKE_BRIEF_OK = "需求已确认"
WAKE_CHECKS = "目标 {n} 条"
WAKE_CONTEXT = "{step}上下文 {size}"
WAKE_ORDINAL = "第 {n} 次唤醒"
WAKE_SEP = " · "
WORK_STEP = "干活"  # the starter flow's work step: its context size goes into the banner


# --- roles and guards (core/roles.py, core/guard.py) --------------------------------------

# Role rule texts: prepended to a role's own instructions (appended for workers), so a
# workflow author specialises a role without losing its discipline.
COORDINATOR_RULES = """\
你是协调者:像一个熟练使用 Claude Code 的人那样指挥,而不是自己动手的工人。
- 你不写文件、不改代码、不跑测试。动手的活一律用 Agent 工具派给 subagent:写代码、跑命令、翻长输出都交给它们。
- Bash 只用来瞄一眼现状(git status、git diff --stat、git log --oneline -5、ls、wc、cat 小文件、grep -rn 这类只读命令),别的命令会被拒绝。瞄一眼跑几秒就会被终止、输出会被截断,也读不到 .env、密钥、~/.config 这类存凭据的地方:要细看或要跑得久,就派人。这类结果很快过时,需要时重看,别依赖旧结果。
- 派活时任务说明只写这件事本身:目标、验收标准、相关路径和约束,不转述整段对话。subagent 看不到工作台索引:告诉它工作台在哪,并要求"超过 2000 字符的产出写进工作台的 artifacts/,回复里只给路径和结论"。
- 等 subagent 的报告回来再决定下一步;一件事没做完就不要收尾。
- 每完成一个里程碑查一次收件箱(mcp__human__inbox):人可能在运行中补充了要求。
- mcp__human__ask 会阻塞着等人回答,只在真正的岔路口用;能自己判断的就自己判断,并说明你的假设。
- 全部做完后用几行话收尾:做了什么、怎么验证的、还有什么没验证。"""

WORKER_RULES = """\
回报规则(你的回复会进协调者的上下文,必须短):
- 只用四段回复:结论 / 证据 / 产出 / 未验证,总共不超过 30 行。
- 不贴文件内容、命令输出、日志或原始 diff;需要时给路径。
- 不复述试错过程,只说最后的结果和依据。
- 开工前先看工作台的 scripts/ 里有没有能直接用的脚本。"""

CLARIFIER_RULES = """\
你只负责确认需求,不干活:不写代码、不建文件、不跑命令。
- 用 mcp__human__ask 一次问一个问题;问题要具体,能给选项就给选项。问多少个都可以,问到四个部分都能写清楚为止。
- 人可能不在:没人回答、被跳过或提问额度用完时,自己判断,把这个问题和你采用的假设写进「未知与假设」;不要重问,也不要停下。
- 最后的回复只输出需求确认书的四个部分,每部分一个二级标题:
## 目标
一句话:做什么,给谁用。
## 验收标准
可判定的条件,一行一条("运行 X 输出 Y",而不是"好用")。
## 边界
明确不做什么。
## 未知与假设
所有没问到、没人答、被跳过或你猜的地方,一行一条。
- 回复里不写代码,也不贴文件内容。"""

JUDGE_RULES = """\
你是独立的判定者:只看、只判,不动手修。你有两种活。
一、设定目标:把需求确认书变成一句目标和一份判定清单。
- 清单每一条都必须能在现场当场验证:跑什么、看到什么算通过。
- 条数由可能出错的地方决定,不求多;克隆、构建、运行这类任务 3–5 条就够。
- 「边界」不是检查项:遵守边界就是不越界,不用列进清单。
- 在这个环境里验证不了的条目,末尾标上 [此环境无法验证:原因],让人在开工前就知道。
- 输出格式:
## 目标
一句话。
## 判定清单
- 一条一行
二、判定一轮:
- 亲自检查现场的文件和产物:判定产物本身,不是源码里怎么写,也不是报告里怎么说。
- 逐条核对清单;没有看得见的证据的条目一律算没通过。别因为报告说"做完了"就认为做完了。
- "还没做到"和"在这里没法验证"是两回事:后者写"无法验证",它永远不算通过。
- 输出恰好三段:
## 结论
已达成 / 未达成 / 无法验证,三选一
## 理由
简短的依据。
## 未通过
- 没通过的条目,一行一条;全部通过写"无"。"""

ORACLE_RULES = """\
你是旁路问答:人在运行中顺便问一句,由你来答。
- 只读:不写文件、不跑命令、不打扰正在跑的运行;你的回答不会进入那次运行的上下文。
- 依据只有下面给你的最近事件和工作台里的文件;回答前先看一眼相关文件。
- 不知道就直说不知道。回答要短,几行就够。"""

# The coder worker the starter flow gives its coordinator.
CODER_DESCRIPTION = "写代码和测试;一切动手实现的活都派给它。"
WORKER_PROMPT = "你负责实现。每改一处就跑一次验证,别攒到最后。"

# Deny reasons. The model reads them as the tool result, so each one says what to do instead.
DENY_ROLE = "{role}这个角色不能用 {tool}——这是有意的分工,不是配置错误。别想办法绕过去。{hint}"
DENY_HINTS = {
    "clarifier": "你只负责问清需求:有疑问就用 mcp__human__ask 问人;要记下的东西写进回复里的四个部分"
                 "(目标 / 验收标准 / 边界 / 未知与假设),flower 会替你存档。",
    "judge": "你只负责检查和判定:用 Read / Glob / Grep 看现场;必须运行才能确认的条目,在结论里写"
             "\"无法验证\"并说明缺什么;判定写进 结论 / 理由 / 未通过 三段。",
    "oracle": "你只读:用 Read / Glob / Grep 查清楚,然后直接回答。",
    "": "把你的结论直接写在回复里。",
}
DENY_DELEGATE = (
    "协调者不亲自动手:{tool} 要交给 subagent。用 Agent 工具派活,写清目标和验收标准{artifacts},"
    "让它回复时只给路径和结论。{glance}"
)
DENY_DELEGATE_GLANCE = "只读地瞄一眼(git status、git diff --stat、git log --oneline、ls、cat 小文件)可以直接用 Bash。"
DENY_DELEGATE_ARTIFACTS = ",让它把超过 2000 字符的产出写进 {artifacts}"
DENY_GLANCE_BACKGROUND = "瞄一眼的命令不能放到后台跑(run_in_background):直接前台执行,或者派给 subagent。"

# spill_guard: what stays in context when a big tool result goes to the workbench's spill/.
SPILL_NOTE = "[结果太长({n} 字符),全文已存到 {path};要细看就用 Read 或 Grep 查这个文件。开头 400 字符:]\n{head}"

# --- the default job (workflow/clarify.py, workflow/goal.py, workflow/starter.py) -------

# Sent instead of the raw request when the clarify step continues its own session (after a
# crash mid-clarification): carry on, never start over, never re-ask what was answered.
CLARIFY_RESUME = (
    "上次的需求确认没有做完就中断了。接着做,不要从头开始:已经问过、已经有答案的问题不要再问,"
    "中断的原因与你无关。只把四个部分里还缺的补齐,然后输出完整的需求确认书"
    "(目标 / 验收标准 / 边界 / 未知与假设)。"
)
CLARIFY_RESUME_LOG = "问答记录里已经有这些(标着 [answered] 的人已经回答过,别再问;别的状态说明问过但没人答):"
CLARIFY_NO_REQUEST = "(这次没有给出新的诉求:看问答记录和工作区,接着把需求确认完)"
# The clarifier's reply lacked sections: the same session is asked to finish, not restarted.
CLARIFY_INCOMPLETE = (
    "你的回复里缺了这几部分:{missing}。不用重新问已经问过的问题,"
    "直接输出完整的需求确认书,四个部分都要有(不知道的写进「未知与假设」)。"
)

# goal_step: turn the frozen brief into a checklist a judge can walk.
NO_BRIEF = "(没有确认书)"
SET_PROMPT = """\
把下面这份需求确认书变成一个可以判定的目标:一句话的目标,加一份判定清单。按「设定目标」的规则和格式输出。

{brief}"""
# Event("task") at goal-setting time: items that are bound to fail judging here.
UNVERIFIABLE_WARNING = (
    "# 判定清单里有 {n}/{total} 条在这个环境里没法验证:判定时它们必然过不了,"
    "运行会停下来问你。开工前还可以改 {path}"
)
UNVERIFIABLE_ITEM = "  · {item}"

# with_goal: the judge, a fresh session every round.
NO_GOAL = "(没有设定目标:按需求确认书里的验收标准判定)"
NO_REPORT = "(这一轮干活的人没有留下汇报)"
VERIFY_PROMPT = """\
有人刚做完一轮活。你来判定它有没有达到下面的目标。

{goal}

---
这一轮的汇报(只作线索,不能当证据):
{report}

---
亲自检查现场:用你的工具看文件和产物,逐条核对判定清单。没有看得见的证据的条目一律算没通过;别因为汇报说做完了就当作做完了。按「判定一轮」的格式输出恰好三段:结论 / 理由 / 未通过。"""
JUDGE_ROUND = "# {label}:新开一个判定会话,亲自检查现场"
VERDICT_UNCLEAR = "判定没有给出明确的结论,按未达成处理。"
JUDGE_FAILED = "判定这一步没跑成({error}),没法确认这一轮的结果。修好后重新运行 flower,会在同一个目标上接着判定。"
GOAL_NO_RUNTIME = "没有 ctx['_runtime'],判定没法进行;不会假装通过。用 Workflow.run 来跑这个步骤。"
UNREACHABLE_QUESTION = "判定认为这个目标在这里没法验证或达不成:{reason}\n怎么办?"
UNREACHABLE_OPTIONS = ("接受这个结果,就这样往下走", "修改目标", "你判断错了,继续做")
UNREACHABLE_ABORT = (
    "目标在这里没法验证或达不成,也没人拍板,先停下,不再空耗轮次。"
    "看一眼 {goal}(可以直接改)和 {manifest},然后重新运行 flower 接着做。"
)
AMEND_QUESTION = "新的目标是什么?一句话,会追加到原目标后面。"
GOAL_CHANGED = "人修改了目标:{extra}。按修改后的目标继续。"
MISJUDGED = "人认为判定错了:{words}。继续做,把目标真正做到。"

# starter_flow
WORK_PROMPT = "照这份需求确认书做:\n\n{brief}"
WORK_GOAL = "一个独立的判定者会逐条按下面的目标检查你的成果:\n\n{goal}"
WORK_CARRY_ON = "接着上次停下的地方继续做。先说一句你接下来要动哪里。"
WORK_NEW_GOAL = "目标按新的要求重新设定过,以这一版为准(你上下文里那版已经过时):\n\n{goal}"
STARTER_NEED_ASK = "要给一句诉求,例如 flower '帮我做一个 X'"
ISOLATE_NOT_GIT = "--isolate 要求 {path} 是 git 仓库(每个 worker 要有自己的 worktree)。先 git init,或者去掉 --isolate。"

# --- cli / demo -------------------------------------------------------------------------

STEP_RESUMED = "<- 接上次 · 第 {n} 次唤醒"
STEP_FROZEN = "已冻结,跳过"
SENT_BACK = "{label}:没通过,把缺口送回同一个会话接着做"
UI_DISPATCH = "派人"
UI_REPORT = "回报:"
UI_DONE = "完成 {turns} 轮 · ${cost:.2f}"
UI_ASKS_LEFT = "(还能问 {n} 次)"
UI_MAIL_RECEIVED = "收到 (它下次查收件箱时会看到)"
DEMO_OFFLINE = "离线 · 假模型服务器"
DEMO_START = "工作区: {ws}\n诉求: {ask}"
DEMO_AUTO_ANSWER = "(demo 替你选了第一项)"
DEMO_COST = "花费 ${cost:.4f}(假模型按标价计) · 清单 {manifest}"
DEMO_AGAIN = "再次运行 flower demo 会在 {ws} 接着上次继续;删掉这个目录就重新开始。"
UI_ASK_STATES = {
    "timeout": "! 无人应答 —— 它会自己判断,把假设记进「未知与假设」",
    "over_budget": "! 提问额度用完",
    "declined": ". 已跳过",
    "invalid": "! 问题是空的,没有问出去",
}

# --- documents (core/brief.py, core/goal.py) ---------------------------------------------

# Brief (需求.md): the frozen output of the clarify step. Section names in field order
# (goal, accept, bounds, unknowns); they are what ``Brief.missing()`` reports.
BRIEF_TITLE = "# 需求确认书"
BRIEF_REQUEST = "> 原始诉求:{request}"  # in the note, not a section
BRIEF_NOTE = (
    "> 由「确认需求」这一步生成并冻结。要改需求,直接编辑这个文件;"
    "删掉它再运行,会重新确认需求。"
)
BRIEF_SECTIONS = ("目标", "验收标准", "边界", "未知与假设")
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
GOAL_AMENDED = "(已修改)"  # appended (never overwritten) when a human changes the goal
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

# Verdict.feedback(): sent back to the worker's own session after a failed round. It names
# the gaps and nothing else — never a solution, never a reason to start over.
VERDICT_FEEDBACK_HEAD = "上一轮的结果还没有达到目标。"
VERDICT_FEEDBACK_REASON = "判定理由:{reason}"
VERDICT_NO_REASON = "(判定没有给出明确理由,按未达成处理)"
VERDICT_FEEDBACK_FAILED = "没通过的判定项:"
VERDICT_FEEDBACK_ITEM = "- {item}"
VERDICT_FEEDBACK_TAIL = (
    "在上一轮的基础上接着做,只补上面这些缺口:不要推倒重来,不要扩大范围,"
    "不相关的部分保持不动。补完后自己逐条验证一遍再汇报。"
)


# --- human channel (core/human.py) ------------------------------------------------------

# Tool results when the model gets no real answer. Each one tells it to decide itself and
# record the assumption, so an absent human never stalls a run.
OVER_BUDGET = (
    "提问额度已用完,不要再问了。把剩下的不确定点写进「未知与假设」,按你自己的判断继续。"
)
TIMEOUT = (
    "没有人回答。按你自己的判断继续:把这个问题和你采用的假设写进「未知与假设」。"
    "不要重复提问,也不要停下来等。"
)
DECLINED = "对方跳过了这个问题。你自己判断,把采用的假设写进「未知与假设」。"
DECLINED_REASON = "(对方说:{reason})"  # appended to DECLINED when decline() has a reason
INVALID_QUESTION = (
    "问题是空的,没有问出去。要问就把问题写清楚;否则自己判断,把假设写进「未知与假设」。"
)

# What the model reads about the two tools (mcp__human__ask / mcp__human__inbox).
ASK_TOOL_DESC = (
    "向人提一个问题,一次只问一个。人可能不在:这个调用会阻塞到有人回答、超时或被跳过。"
    "拿不到回答时按返回的说明自己判断。只在真正的岔路口用。"
)
ASK_QUESTION_DESC = "问题本身,写清楚、只问一件事"
ASK_OPTIONS_DESC = "可选:候选答案,人可以直接选一个"
INBOX_TOOL_DESC = (
    "查收人在运行中补充的话。不阻塞,没有消息就立即返回。每完成一个里程碑查一次。"
)

# The inbox tool's result.
NO_MAIL = "收件箱是空的,继续干活。"
INBOX_HEAD = "人在运行中补充了 {n} 条消息(按时间先后):"
INBOX_ITEM = "[{id}] {text}"
INBOX_PERSISTED = "这些话已追加进 {path},后面的步骤也读得到,不用你再记。"
INBOX_NOT_PERSISTED = (
    "这些话没有写进任何需求文件,下一步可能就看不到了;需要一直遵守的,自己记进工作台的 notes/。"
)

# amend(): a human remark appended to the brief so it survives step boundaries.
AMEND_LIVE = "运行中补充"  # typed while the run is going (send())
AMEND_WAKE = "唤醒时追加"  # typed at the wake prompt (starter flow)
AMEND_BLOCK = "\n\n**{label}**({time}):\n{text}\n"

# Q&A log (notes/问答记录.md): for people only, append-only.
QA_LOG_TITLE = "# 需求问答记录"
QA_LOG_NOTE = "> 人和 agent 之间的问答留档,只给人看;不在任何 agent 的上下文里。"
QA_QUESTION = "**Q {id}**({time}):{question}"
QA_OPTIONS = "选项:{options}"
QA_OPTION_SEP = " / "
QA_ANSWER = "**A [{state}]**:{answer}"
QA_WAITING = "(还在等回答)"  # transcript() line for a question not settled yet
QA_MAIL = "**M {id}** [{state}]({time}):{text}"
QA_LOG_FAILED = "问答记录写不进 {path}(只影响留档,不影响运行)"  # goes into ui_errors

# --- setup screen (setup_screen.py) -----------------------------------------------------

# The interactive credential screen: `flower setup`, first run, re-entry after a failure.
SETUP_TITLE = "配置 flower"  # rendered as "== 配置 flower ====…"
SETUP_REASON_FIRST = "还没配过凭证。"
SETUP_REASON_AGAIN = "重新配置。"
SETUP_SAVE_TO = "会存到 {path}(只有你能读,权限 600)。Ctrl-C 取消。"
SETUP_INPUT = "> "  # the input marker after each question
SETUP_ASK_TOKEN = "1. API key 或网关 token(必填;输入不会显示):"
SETUP_ASK_URL = "2. 网关地址(回车 = 官方 {default};只写根地址,不带 /v1):"
SETUP_ASK_URL_KEEP = "2. 网关地址(现在是 {current};回车 = 不变,- = 改回官方 {default};不带 /v1):"
SETUP_ASK_MODEL = "3. 模型名(回车 = 默认;例如 claude-opus-5[1m]):"
SETUP_ASK_MODEL_KEEP = "3. 模型名(现在是 {current};回车 = 不变,- = 改回默认):"
SETUP_CLEAR = "-"  # typed to a question with a current value: drop it (official URL / default model)
SETUP_NO_TOKEN = "没给 token,取消。"
SETUP_CANCELLED = "已取消,什么都没改。"
SETUP_URL_STRIPPED = "  (去掉了末尾的 {tail}:填根地址就行,flower 自己会加 /v1/messages)"
SETUP_URL_NO_SCHEME = "  ! 网关地址一般以 http:// 或 https:// 开头:{url}"
SETUP_SAVED = "+ 存好了:{path}"
SETUP_SAVED_KEY = "  {key} = {value}"
SETUP_SAVED_DROPPED = "  去掉了 {key}"
SETUP_SAVE_FAILED = "x 存不进 {path}:{error}"
SETUP_SHADOWED = "! 注意:{key} 在 {where} 里也有设置,下次启动它会盖过这里的值——去那里改掉或删掉那一行。"
SETUP_SHADOWED_STALE = "! 注意:{where} 里还有 {key},下次启动它会比刚存的 {new} 优先——去那里删掉它。"
SETUP_SHADOW_PROCESS = "进程环境变量(export 的)"

# Gate 2, the probe (ensure_credentials / run_setup).
SETUP_PROBING = "- 验一下凭证…"
SETUP_PROBE_AUTH = "! 凭证被拒:{detail}"
SETUP_PROBE_CONFIG = "! 网关地址或模型名不对:{detail}"
SETUP_PROBE_NET = "(探针没打通:{detail} —— 当作网络问题,照常开跑)"
SETUP_PROBE_OK = "+ 凭证可用"
SETUP_PROBE_NET_SAVED = "(探针没打通:{detail} —— 可能只是网络问题,配置已经存好)"
SETUP_GIVE_UP = "凭证还是不能用。检查 {path},或者再运行一次 flower setup。"
SETUP_RETRY_HINT = "配置已经存下,但还不能用。改好后再运行一次 flower setup。"

# After a failed step (go/run): the error looked like a credential problem.
SETUP_FAILED_CRED = "! 看起来是凭证不对:{error}"
SETUP_RERUN = "配好了。用同一条命令再跑一次,会在同一个目录接着做。"

# describe_config(): what -v prints before starting.
SETUP_DESCRIBE_HEAD = "# 配置:"
SETUP_DESCRIBE_LINE = "  {key} = {value}"

# --- command line (cli.py, commands.py, terminal.py) -------------------------------------

START_FRESH = "要做什么?一句话就够,回车开始(Ctrl-C 退出)"
START_WAKE = "接着上次?直接回车 = 接着做;也可以说点新的;/new = 重开一件事(Ctrl-C 退出)"
CANCELLED = "已取消"
EMPTY_ASK = "诉求是空的。运行 flower 后输入一句话,或者直接 flower \"帮我做一个 X\"。"
CLARIFY_ONLY_DONE = "需求已经确认过了({path}),这次不再重复。要重新确认就加 --new(旧的会归档)。"
RUN_NEED_COLON = "需要 模块:属性 形式,例如 flows.py:main 或 mypkg.flows:main(收到的是 {target!r})"
RUN_NO_FILE = "找不到 {path}(当前目录 {cwd})。按模块名导入时别带 .py,例如 mypkg.flows:main"
RUN_IMPORT = "导入 '{module}' 失败:{error}"
RUN_NO_ATTR = "'{module}' 里没有 '{attr}'"
RUN_CALL = "调用 {target} 失败:{error}"
RUN_NOT_WORKFLOW = "{target} 不是 Workflow,也不是返回 Workflow 的函数(是 {kind})"
CLOSING = "总花费 ${cost:.4f} · 清单 {manifest}"
ABORTED_AT = "在步骤 '{step}' 中止:{why}"
DISK_REFUSED = "磁盘拒绝写入:{error}。检查这个文件夹的权限和剩余空间,再运行 flower 接着做。"
STOPPED = "按了两次 Ctrl-C:已停下。清单已写好,再运行同一条命令会接着做。"
ONCE_SESSION = "会话 {session}(接着聊:flower once --resume {session} \"…\")"
STATUS = "上下文 {context} · 累计 ${cost:.2f} · {elapsed}"
PROMPT_ANSWER = "你的回答 (回车=跳过,让它自己判断) > "
PROMPT_IDLE = "(直接说 = 加需求,下个检查点送达;? 开头 = 顺便问一句,不打扰它干活) > "
PROMPT_INTERRUPTED = "说点什么 (回车 = 什么也不说,接着做) > "
INTERRUPTED = "已打断这一轮。正在跑的 subagent 会丢掉半成品。"
INTERRUPT_PENDING = "还有 {n} 个提问在等回答,打断不影响它们。"
INTERRUPT_SAY = "说点什么?(回车 = 什么也不说,接着做;再按一次 Ctrl+C = 退出)"
NO_INBOX = "这个 workflow 没有接 HumanChannel,说的话送不到 agent 那里。"
INPUT_CLOSED = "输入已关闭"
ASIDE_HEAD = "旁路"
ASIDE_COST = "(${cost:.4f},没有打扰正在跑的运行)"
ASIDE_FAILED = "旁路问答失败:{error}"
ASIDE_WAIT = "(等 {n} 条旁路问答收尾…)"
ORACLE_NO_EVENTS = "(还没有事件)"
ORACLE_PROMPT = """\
人在运行中顺便问了一句:{question}

最近发生的事(从旧到新,每条截断):
{events}

工作台在 {workbench}:需求确认书、目标、笔记和汇报都在那里,需要背景就去读。回答要短。"""

# --- flower log (runlog.py) -------------------------------------------------------------

LOG_NO_RUN_DIR = "没有找到运行记录:目录 {path} 不存在。在跑过 flower 的目录里运行,或者 flower log <run_dir>"
LOG_NO_MANIFEST = "没有找到运行记录:{path} 不存在。在跑过 flower 的目录里运行,或者 flower log <run_dir>"
LOG_CORRUPT = (
    "运行记录读不了:{path} 不是有效的 manifest.json({reason})。"
    "文件原样没动;下次运行 flower 会把它挪到一边另起一份"
)
LOG_EMPTY = "{path} 里还没有记录任何步骤"
# One block per run (a process invocation): its id, start time, steps, cost, agent time.
LOG_RUN = "运行 {run} · 开始于 {start} · {steps} 步 · {cost} · {duration}"
LOG_RUN_NO_ID = "(无编号)"  # rows written before runs had ids
LOG_UNKNOWN = "?"  # a time or duration the manifest does not give
LOG_ATTEMPTS = "尝试 {n}"
LOG_TURNS = "{n} 轮"
LOG_RESUMED = "续接"  # a mid-step resume happened
LOG_NO_SESSION = "无会话"
LOG_RETIRED = "已换代: {ids}"  # sessions burned by handoffs, oldest first
LOG_ERROR = "错误: {error}"
# The chart after each step: one cell per main-thread API call, scaled to the step's own
# smallest..largest context (the two numbers printed after it).
LOG_CHART = "每轮上下文图:一格一次主线程 API 调用;{lo} 是该步最小值,{hi} 是最大值(图后标出,单位 tokens)"
LOG_RANGE = "{lo}→{hi}"
LOG_DB_MISSING = "没有 {path}:画不出每轮上下文"
LOG_DB_UNREADABLE = "{path} 读不了:画不出每轮上下文"
LOG_TOTALS = "合计 {runs} 次运行 · {steps} 步(成功 {ok},失败 {failed})· {sessions} 个会话 · {cost} · {duration}"
LOG_COST = "${cost:.4f}"
LOG_SECONDS = "{s:.1f}s"
LOG_MINUTES = "{m}m{s:02d}s"
LOG_HOURS = "{h}h{m:02d}m"

# --- handoff (core/handoff.py) -------------------------------------------------------------

# Handoff (交接-<step>.md): what a session near a full context leaves its successor. Section
# names in field order (doing, decided, deadends, next, scene); missing() reports these.
HANDOFF_SECTIONS = ("现在在做", "已定的事", "走不通的", "下一步", "现场")
HANDOFF_EMPTY = "(空)"  # placeholder for an empty section; still counts as missing
# Headings accepted when parsing, per field (matched longest first, whole heading only).
HANDOFF_ALIASES = {
    "doing": ("现在在做", "现在在做什么", "在做什么", "当前进度", "进度", "当前状态"),
    "decided": ("已定的事", "已经定下的", "已经定下的事", "已定", "决策", "已做的决定"),
    "deadends": ("走不通的", "走不通的路", "试过不行的", "排除的路", "死路", "踩过的坑"),
    "next": ("下一步", "下一步做什么", "接下来", "下一步要做的"),
    "scene": ("现场", "文件", "关键文件", "现场指针"),
}
HANDOFF_TITLE = "# 交接书({step})"
HANDOFF_NOTE = (
    "> 上下文快满了,上一个会话把手上的事写成了这份交接书。\n"
    "> 这个文件可以直接改;接手的新会话读到的就是它。"
)
# prompt_block(): the successor's whole first message (the original task is NOT re-sent).
HANDOFF_BLOCK_HEAD = (
    "你是来接手一件没做完的事的。上一个会话的上下文满了,它已经退场;你没有它的任何记忆,"
    "只有下面这份交接书和磁盘上的东西。需求和目标已经冻结在工作台的 notes/ 里,需要时去读。"
)
HANDOFF_BLOCK_TAIL = (
    "从「下一步」接着做:不要从头再来,不要重做「走不通的」里排除过的路。"
    "背景都在交接书和磁盘上,不要去问人要上下文;交接书说得不清楚的,自己去现场查。"
)
# Sent to the *current* session (not a new role: only it holds the context) to write the
# document. Placeholders: {used} and {window} (already formatted, e.g. 152.0K and 200K).
HANDOFF_PROMPT = (
    "上下文已经用了 {used}(上限约 {window}),快满了。停下手上的事,给接手你的新会话写一份交接书。"
    "新会话没有你的任何记忆,只读得到这份交接书和磁盘。\n\n"
    "只写下面五节,用这五个标题,不要多也不要少:\n\n"
    "## 现在在做\n做到哪一步了,手上那件事的当前状态。\n\n"
    "## 已定的事\n已经定下来的决定,每条带上为什么这样定。\n\n"
    "## 走不通的\n试过、已经排除的路,每条写清为什么不行。这一节最值钱:接手的人不知道哪条路"
    "走过,就会再走一遍——实测有过一整个小时绕着同一个编译问题打转。真的没有就写「(暂无)」,"
    "不要编。\n\n"
    "## 下一步\n具体到拿来就能做:「运行 X;如果 Y 就改 Z」。\n\n"
    "## 现场\n关键文件、产出、分支的路径。\n\n"
    "三条规矩:\n"
    "1. 自成一体:新会话只看这份东西也能接着干。\n"
    "2. 给指针,不给内容:写路径和命令,不要贴代码、日志或大段输出。\n"
    "3. 不要复述需求和目标:它们冻结在工作台的 notes/ 里,新会话自己会读。\n\n"
    "直接输出交接书,不要调用工具,不要再做别的事。"
)
# degraded(): the mechanical fallback when no usable document could be written.
HANDOFF_DEGRADED = "[降级:交接没写成]"
HANDOFF_DEGRADED_DOING = (
    "{marker} 「{step}」这一步的上下文满了,没能写出交接书(原因:{why})。"
    "下面是机械生成的兜底版本,不知道做到了哪里。"
)
HANDOFF_DEGRADED_NEXT = (
    "先查看现场再动手:工作台的 notes/ 和产出、工作区里的文件、git status / git log。"
    "不要假设什么都还没做——前一个会话很可能已经做了不少;弄清做到哪里后,从那里接着做。"
)
HANDOFF_DEGRADED_SCENE = "这一步原来的任务(前 {n} 个字):\n\n{prompt}"
# why = ... in 交接降级(<why>)
HANDOFF_WHY_MISSING = "缺{names}"
HANDOFF_WHY_OVERFLOW = "上下文已经装不下"
HANDOFF_WHY_EMPTY = "交接轮没有输出"
HANDOFF_WHY_UNKNOWN = "原因不明"
HANDOFF_NOTE_DEGRADED = "交接降级({why})"  # goes into StepResult.errors and manifest.json
# Stops: repeated degradation, and the runaway brake (max_generations).
HANDOFF_STOP_DEGRADED = (
    "连续 {n} 次交接都降级了,停下这一步:再换代也只是烧钱,新会话每次都从零摸索。"
    "多半是窗口猜大了或余量太小,写交接的那一轮已经装不下——把窗口设成真实大小"
    "(--window / FLOWER_WINDOW)或调大 headroom 再跑。"
)
HANDOFF_BRAKE = (
    "已经换代 {n} 次(上限 {limit}),停下这一步。最可能的原因:换代线 {at} 低于这个角色的"
    "启动底座(系统提示加工作台索引,协调者实测约 34K),新会话一启动就又到线了。"
    "把窗口调大(当前 {window};--window / FLOWER_WINDOW),或者用 --no-handoff 关掉交接。"
)
# Appended to the successor's prompt when a person spoke while the handoff was being written.
HANDOFF_HUMAN_WORDS = "交接期间人插了话,按这个调整:\n{words}"
# Event texts (Event("handoff").text); numbers come pre-formatted (130.0K, 200K).
HANDOFF_NEAR = "上下文 {used}/{window} · 还有约 {left} 到换代"
HANDOFF_WRITING = "上下文 {used}/{window} —— 写交接准备换代"
HANDOFF_DONE = "交接写在 {path},新会话接手,上下文从 0 重新开始"
HANDOFF_DONE_NO_FILE = "没有工作台,交接书只在新会话的提示里;新会话接手,上下文从 0 重新开始"
HANDOFF_DONE_DEGRADED = "交接没写成,用了降级版本,新会话会自己查看现场"


# --- stores: PostgreSQL backend, store selection, store copy -------------------------------
# One line each; {url} is always shown with the password masked.
STORE_BAD_URL = "会话库地址不对:{url}({reason})。形如 postgresql://用户:密码@主机:5432/库名,或者一个 sessions.db 的路径"
STORE_UNREACHABLE = "连不上会话库 {url}:{reason}"
STORE_NEWER_SCHEMA = "会话库 {url} 的表结构是更新的版本({found},这个 flower 只认到 {known}),拒绝读写;请升级 flower"
STORE_NO_DRIVER = "要用 PostgreSQL 会话库,先安装:pip install 'flower[postgres]'"
STORE_UNSTORABLE = "会话库存不下 {key} 的第 {position} 条记录(uuid {uid}):{reason};同批其余记录已存好"
# flower store copy SRC DST
STORE_COPY_DONE = "已复制 {sessions} 个会话({transcripts} 份记录,{entries} 条),逐条核对一致:{src} → {dst}"
STORE_COPY_MISMATCH = "复制后核对不一致:{key} 第 {index} 条不同"
STORE_COPY_SAME = "源和目标是同一个会话库,不复制"

# --- reliability fixes ---
# `python -m flower.testing --script FILE`: a script it cannot use (one line on stderr, exit 2).
FAKE_SCRIPT_UNREADABLE = "flower.testing: cannot read the script {path}: {error}"
FAKE_SCRIPT_NOT_JSON = "flower.testing: the script {path} is not valid JSON: {error}"
FAKE_SCRIPT_BAD_SHAPE = (
    "flower.testing: the script {path} must be a JSON object with \"steps\"/\"routes\"/"
    "\"fallback\" (or a bare list of steps), got {got}"
)
FAKE_SCRIPT_BAD_PART = "flower.testing: the script {path} is not usable: {error}"
# A failed transcript mirror (the session store refused an append): a warning, never silent.
MIRROR_FAILED = (
    "会话记录没能存进 sessions.db({error})。这一步照常进行,但中断后可能接不上刚才的进度。"
)
# Words a human said while no turn could take them (before the step, between steps, during a
# network wait or a retry back-off): delivered with the next prompt under this label.
HUMAN_WORDS_PENDING = "【人类插话】你还没看到的这段话是人类刚才说的,按它调整后继续:\n{words}"
# Event("retry").text when an interrupt resumes the step.
RETRY_INTERRUPT = "{name}: 按人类插话接着做"

# --- stores: the run book in PostgreSQL, outages of the store server ------------------------
# --run NAME (global flag): which run of a shared store this folder continues.
RUN_FLAG_HELP = ("Run name in a shared store (default: $FLOWER_RUN, else the workspace "
                 "folder's name); another machine wakes the run with the same name.")
# The wake line's extra part when the lineage came from the store, not from lineage.json.
WAKE_REMOTE = "从会话库接上 {name}"
# A lost server. Each is one line; {url} is masked. The run itself goes on.
STORE_LOST = "会话库 {url} 断了({reason}),等它回来;这期间的会话记录先留在本进程里"
STORE_BACK = "会话库 {url} 回来了(断了 {seconds} 秒)"
STORE_OFFLINE = "会话库 {url} {seconds} 秒内没连上:{reason}"
STORE_HELD = "会话库连不上:{key} 有 {n} 条记录暂存在本进程,等它回来先补写它们"
STORE_CAUGHT_UP = "会话库已补写 {key} 暂存的 {n} 条记录"
STORE_LOST_AT_CLOSE = "退出时会话库 {url} 还是连不上:{n} 条会话记录没能写进去,只在本机"
# The run book rows (lineage, manifest) mirrored into the store; the files stay authoritative.
BOOK_FAILED = "运行记录 {name} 没写进会话库({reason});本机的 lineage.json / manifest.json 照常,稍后再补"
BOOK_BACK = "运行记录 {name} 已补写进会话库"
BOOK_LOST_AT_CLOSE = "退出时运行记录 {name} 还没写进会话库;本机文件是完整的"


# --- distributed runs on Temporal (flower worker / run --temporal / status --temporal) -----
DIST_NO_TEMPORAL = "要用 Temporal 分布式运行,先安装:pip install 'flower[temporal]'"
DIST_UNREACHABLE = "连不上 Temporal 服务 {address}:{reason}。本机试用可以先起一个:temporal server start-dev"
DIST_WORKER_READY = "worker 已就绪:{address} · 队列 {queue} · 会话库 {store}"
DIST_WORKER_STOPPED = "worker 已停下"
DIST_SUBMITTED = "已提交分布式运行 {run}(队列 {queue});清单在 {run_dir}"
DIST_DETACHED = "不再跟随运行 {run};它在 worker 上照常进行,flower status --temporal 可以查看"
DIST_RUN_FAILED = "分布式运行失败:{why}"
DIST_RESUMING = "「{step}」换了一台 worker 接着做:续上会话 {session},不从头开始"
DIST_CTX_DROPPED = "「{step}」写进 ctx 的 {keys} 不能存成 JSON,没有带到下一步(分布式运行里步骤之间只传 JSON)"
DIST_DUP_STEPS = "{target} 里有重名的步骤;分布式运行按步骤名续接会话,名字必须各不相同"
DIST_STATUS_EMPTY = "Temporal 上还没有 flower 运行"
DIST_STATUS_HEAD = ("运行", "状态", "步骤", "花费", "开始于")
DIST_STATES = {"planning": "准备中", "running": "进行中", "done": "完成", "failed": "失败",
               "terminated": "被终止", "canceled": "已取消", "timed_out": "超时",
               "completed": "完成", "running?": "进行中"}
