"""What a model reads: role rules, step prompts, deny texts, tool descriptions and results,
handoff prompts, notes injected into a session.

Split from messages and vocab because editing these changes how an agent behaves, and
should be reviewed as such. Sections are owned by the module named in the heading.
"""

# --- stores (trim / prune) -------------------------------------------------------------

# Replaces an old large tool_result body on resume; the full text is in the spill file.
SPILL_POINTER = "[工具结果已归档:{n} 字符。完整内容在 {path},需要时用 Read 读取]"
# Replaces the body of an old read-only Bash result (ls, git branch …) whose truth decays.
EPHEMERAL_EXPIRED = "[{cmd} 的结果已过期(第 {age} 轮前),当前状态可能已变。需要请重新执行]"
# Replaces the body of a tool_result left behind by an interrupted turn.
INTERRUPTED_RESULT = "[上一轮在此处被中断,该工具结果未产生]"
# Result supplied for a tool_use that never got one (cut off mid-call).
ORPHAN_RESULT = "[这一步被打断了,没有结果。需要的话重做。]"

# --- resilience / runtime ---------------------------------------------------------------

# Sent when a step resumes after a failure. Deliberately no error details: the model needs
# "you were cut off, continue", not whether it was ENOTFOUND or 503.
RESUME_PROMPT = (
    "上一轮在中途被打断,没有跑完。检查一下工作台里已经落盘的东西,从中断处接着做,不要重头来过。"
)
# Appended to the human's words when an interrupt resumes the session.
INTERRUPT_NOTE = (
    "(这是人类在运行中插话。刚才正在执行的工具调用如果显示被中断,那是这次插话造成的,"
    "不是环境故障;按上面的话调整后继续。插话之后紧接着出现的工具失败(被中断、没有结果、"
    "报错)也是插话的副作用:直接重试那一步,不要去排查原因,也不要因此加防御性的规则或检查。)"
)

# --- workbench (core/workbench.py) -------------------------------------------------------

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

# --- roles and guards (core/roles.py, core/guard.py) --------------------------------------

# Role rule texts: prepended to a role's own instructions (appended for workers), so a
# workflow author specialises a role without losing its discipline. CLARIFIER_RULES and
# JUDGE_RULES spell out headings that vocab's *_ALIASES parse: change them together.
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
# These three become the verdict's reason, which the worker reads in Verdict.feedback().
VERDICT_UNCLEAR = "判定没有给出明确的结论,按未达成处理。"
GOAL_CHANGED = "人修改了目标:{extra}。按修改后的目标继续。"
MISJUDGED = "人认为判定错了:{words}。继续做,把目标真正做到。"

# starter_flow
WORK_PROMPT = "照这份需求确认书做:\n\n{brief}"
WORK_GOAL = "一个独立的判定者会逐条按下面的目标检查你的成果:\n\n{goal}"
WORK_CARRY_ON = "接着上次停下的地方继续做。先说一句你接下来要动哪里。"
WORK_NEW_GOAL = "目标按新的要求重新设定过,以这一版为准(你上下文里那版已经过时):\n\n{goal}"

# --- documents (core/brief.py, core/checklist.py) ---------------------------------------------

GOAL_AMENDED = "(已修改)"  # appended (never overwritten) when a human changes the goal

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

# Q&A log entries (notes/问答记录.md): people read the log, and a resumed clarify step hands
# the entries to the clarifier under CLARIFY_RESUME_LOG.
QA_QUESTION = "**Q {id}**({time}):{question}"
QA_OPTIONS = "选项:{options}"
QA_OPTION_SEP = " / "
QA_ANSWER = "**A [{state}]**:{answer}"
QA_WAITING = "(还在等回答)"  # transcript() line for a question not settled yet
QA_MAIL = "**M {id}** [{state}]({time}):{text}"

# --- the side question (cli/tui/terminal.py) ---------------------------------------------

# A side question ("? …" at the prompt): the oracle's whole prompt.
ORACLE_NO_EVENTS = "(还没有事件)"
ORACLE_PROMPT = """\
人在运行中顺便问了一句:{question}

最近发生的事(从旧到新,每条截断):
{events}

工作台在 {workbench}:需求确认书、目标、笔记和汇报都在那里,需要背景就去读。回答要短。"""

# --- handoff (core/handoff.py) -------------------------------------------------------------

# prompt_block(): the successor's whole first message (the original task is NOT re-sent).
HANDOFF_BLOCK_HEAD = (
    "你是来接手一件没做完的事的。上一个会话的上下文满了,它已经退场;你没有它的任何记忆,"
    "只有下面这份交接书和磁盘上的东西。需求和目标已经冻结在工作台的 notes/ 里,需要时去读。"
)
HANDOFF_BLOCK_TAIL = (
    "从「下一步」接着做:不要从头再来,不要重做「走不通的路」里排除过的路。"
    "背景都在交接书和磁盘上,不要去问人要上下文;交接书说得不清楚的,自己去现场查。"
)
# Sent to the *current* session (not a new role: only it holds the context) to write the
# document. Placeholders: {used} and {window} (already formatted, e.g. 152.0K and 200K).
# The five headings it asks for are vocab's HANDOFF_SECTIONS: change them together.
HANDOFF_PROMPT = (
    "上下文已经用了 {used}(上限约 {window}),快满了。停下手上的事,给接手你的新会话写一份交接书。"
    "新会话没有你的任何记忆,只读得到这份交接书和磁盘。\n\n"
    "只写下面五节,用这五个标题,不要多也不要少:\n\n"
    "## 现在在做什么\n做到哪一步了,手上那件事的当前状态。\n\n"
    "## 已经定下的\n已经定下来的决定,每条带上为什么这样定。\n\n"
    "## 走不通的路\n试过、已经排除的路,每条写清为什么不行。这一节最值钱:接手的人不知道哪条路"
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
# degraded(): the mechanical fallback when no usable document could be written; {marker}
# is vocab's HANDOFF_DEGRADED.
HANDOFF_DEGRADED_DOING = (
    "{marker} 「{step}」这一步的上下文满了,没能写出交接书(原因:{why})。"
    "下面是机械生成的兜底版本,不知道做到了哪里。"
)
HANDOFF_DEGRADED_NEXT = (
    "先查看现场再动手:工作台的 notes/ 和产出、工作区里的文件、git status / git log。"
    "不要假设什么都还没做——前一个会话很可能已经做了不少;弄清做到哪里后,从那里接着做。"
)
HANDOFF_DEGRADED_SCENE = "这一步原来的任务(前 {n} 个字):\n\n{prompt}"
# why = ... in 交接降级(<why>); also written into the degraded document the successor reads.
HANDOFF_WHY_MISSING = "缺{names}"
HANDOFF_WHY_OVERFLOW = "上下文已经装不下"
HANDOFF_WHY_EMPTY = "交接轮没有输出"
HANDOFF_WHY_UNKNOWN = "原因不明"
# Appended to the successor's prompt when a person spoke while the handoff was being written.
HANDOFF_HUMAN_WORDS = "交接期间人插了话,按这个调整:\n{words}"

# --- words a human said between turns (core/runtime.py) ------------------------------------

# Words a human said while no turn could take them (before the step, between steps, during a
# network wait or a retry back-off): delivered with the next prompt under this label.
HUMAN_WORDS_PENDING = "【人类插话】你还没看到的这段话是人类刚才说的,按它调整后继续:\n{words}"

# A looking role (coordinator …) asked to run a command outside its sandbox.
# flower/core/runstate.py: the second layer behind the permission rules and the sandbox.
DENY_CREDENTIAL_READ = ("{path} 是凭证所在的位置,任何角色都不能读它。"
                        "需要其中某个配置值就在报告里向用户要,别从文件里读")
DENY_RUN_STATE = ("这条命令涉及 flower 的运行记录(runs/ 里的对话库、清单、预算,或 .flower/spill/),"
                  "任何角色都不能写它们。换一条不碰这些路径的命令;只是看看的话用只读命令(ls、cat、grep)")
DENY_SPILL_ALTERED = ("{path} 被人改过(内容和文件名的哈希对不上),已删掉,不能信它。"
                      "原来的内容还在对话记录里:下次续接会重新写出来;现在要用就重新运行产生它的命令")
DENY_STATE_KEY = "这条命令涉及 flower 的封印密钥(~/.local/state/flower),任何角色都不能读写它。"
SANDBOX_NO_ESCAPE = ("这个角色的命令只能在沙箱里跑(只读、不联网),不能用 dangerouslyDisableSandbox。"
                     "去掉它再试;要改东西或联网,派给 subagent。")

# --- bequest: the handover to the next tool (workflow/bequest.py, core/roles.py) ------------

# The bequest role's rules; the demo's fake model tells the role apart by the first line.
BEQUEST_RULES = """\
你是收尾交接:这次运行结束了,接手这个文件夹的下一个人多半用 Claude Code 或 Codex,而不是 flower。
- 你写的东西会原样放进工作区根目录的 CLAUDE.md 和 AGENTS.md,接手的工具每个会话都会读它:要短、要准,总共不超过 40 行。
- 只读:用 Read / Glob / Grep 查看现场,不写文件、不跑命令。
- 只写看得见证据的事;不知道就写不知道,不要编。"""
# The whole prompt of the bequest session. The five headings are vocab's BEQUEST_SECTIONS:
# change them together.
BEQUEST_PROMPT = """\
这次运行结束了。给接手这个文件夹的下一个工具写一份交接,它会被放进 {root} 下的 CLAUDE.md 和 AGENTS.md。

需求确认书:
{brief}

目标:
{goal}

最后一次判定:{verdict}

最后一轮干活的汇报(只作线索,不能当证据):
{report}

工作台在 {workbench},索引 {index}。

先查现场:生成文件的脚本常常只在自己的开头注释里说"这个文件是生成的,别改"——用 Grep 找 generated、自动生成、不要手改、DO NOT EDIT 之类的字样,看脚本写出了哪些文件。

只输出下面五节,用这五个标题,每节几行:

## 这是什么
一两句:这个文件夹里是什么东西,给谁用,怎么运行。

## 验收:达成与未达成
按目标逐条:哪些达成了,哪些没有。

## 哪些文件是生成的、由什么生成
每行一条:`文件` ← `生成它的命令或脚本`(要改就改源头,再重新生成)。没有就写「(无)」。

## 走不通的路
试过、已经排除的做法,每条写清为什么不行。没有就写「(无)」,不要编。

## 工作台在哪、怎么读
工作台的路径、索引,以及 notes/ 里的需求、目标、交接书各是什么。

直接输出这五节,不要写文件。"""
# How the prompt and the mechanical block name a verdict's state (core/checklist.py states).
BEQUEST_VERDICT_STATES = {"achieved": "已达成", "not_yet": "未达成", "unreachable": "无法验证"}
BEQUEST_NO_VERDICT = "(没有判定:这次没有设定目标)"
BEQUEST_NO_REPORT = "(没有汇报)"
# The block's head, read by the next tool before the sections.
BEQUEST_TITLE = "## flower 交接"
BEQUEST_STAMP = "> {when} 运行结束时写的。需求、目标和全部记录在工作台里;这里只是入口。"
BEQUEST_CUT = "…(还有 {n} 行,见工作台)"
# mechanical(): what flower knows without a model. {marker} is vocab's BEQUEST_DEGRADED.
BEQUEST_MECH_WHAT = (
    "{marker} 收尾的会话没能写出交接({why}),下面是 flower 机械生成的兜底版本。\n目标:{goal}"
)
BEQUEST_MECH_ACCEPT = "最后一次判定:{verdict}"
BEQUEST_MECH_UNKNOWN = "不知道:去工作台的 notes/ 和 scripts/、git log 里查,别假设。"
BEQUEST_MECH_WORKBENCH = (
    "工作台在 `{root}`,先读索引 `{index}`:notes/需求.md 是冻结的需求,notes/目标.md 是判定清单,"
    "notes/交接-*.md 是上下文满时的交接书,scripts/ 是可复用的脚本。"
)
BEQUEST_NO_GOAL = "(不知道)"
BEQUEST_WHY_MISSING = "缺{names}"
BEQUEST_WHY_FAILED = "会话失败:{error}"
BEQUEST_WHY_EMPTY = "没有输出"

__all__ = [name for name in dir() if name.isupper()]
