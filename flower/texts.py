"""Every user-facing string flower prints or hands to a model, in one place so it can be
translated. The reference is Chinese; keep wording stable — tests and users rely on it.

Sections are owned by the module named in the heading; add new strings under it.
"""

from __future__ import annotations

# --- stores (trim / prune) -------------------------------------------------------------

# Replaces an old large tool_result body on resume; the full text is in the spill file.
SPILL_POINTER = "[工具结果已归档:{n} 字符。完整内容在 {path},需要时用 Read 读取]"
# Replaces the body of an old read-only Bash result (git status, ls …) whose truth decays.
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

# Headings wake.py falls back on while flower.core.brief / flower.core.goal are absent.
BRIEF_SECTIONS = ("目标", "验收标准", "边界", "未知与假设")
BRIEF_UNFILLED = "(未填)"
GOAL_CHECK_HEADINGS = ("判定清单", "判定条件", "验收清单", "检查项", "判定")
GOAL_EMPTY = "(空)"

# --- cli / demo -------------------------------------------------------------------------

STEP_RESUMED = "<- 接上次 · 第 {n} 次唤醒"
STEP_FROZEN = "已冻结,跳过"

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
