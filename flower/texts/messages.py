"""What a person reads: UI lines, errors, events, log, setup, demo and distributed lines.

Split from prompts and vocab because these are written for people: rewording one changes
what a person sees, not how an agent behaves or what parses. Keep wording stable anyway —
tests and users rely on it. Sections are owned by the module named in the heading.
"""

# --- stores (trim / prune) -------------------------------------------------------------

# trim_report(): one line for UI logs.
TRIM_NOTHING = "未裁剪"
TRIM_EXPIRED_ONLY = "{expired} 个时效性结果标记为过期"
TRIM_DONE = "裁掉 {cleared} 个工具结果(保留最近 {kept} 个),省下 ~{tokens} tokens"

# --- resilience / runtime ---------------------------------------------------------------

RETRY_AFTER_FAILURE = "{step}: 第 {attempt} 次尝试失败,稍后重试({error})"
OFFLINE_GAVE_UP = "{error}(网络中断过久,放弃重试)"
# The first line of a wait for the network: how long, how to stop it, what sets the bound.
OFFLINE_WAIT = ("{host}:{port} 不可达,等它恢复,最多等 {minutes} 分钟(Ctrl-C 不再等;"
                "上限用 --offline-wait 秒数 或 Resilience.max_offline_wait 改)")
OFFLINE_WAIT_SECONDS = ("{host}:{port} 不可达,等它恢复,最多等 {seconds} 秒(Ctrl-C 不再等;"
                        "上限用 --offline-wait 秒数 或 Resilience.max_offline_wait 改)")
ONLINE_AGAIN = "{host}:{port} 恢复,继续"
# Runtime(): the run dir records whole transcripts; wider modes found there were narrowed.
RUN_DIR_TIGHTENED = "{path} 里有 {n} 个文件或目录别人也能读(里面是完整的对话和工具读过的内容),已改成只有你能读写"

# flower/stores/indexfile.py: a load index whose seal does not match (someone wrote it).
INDEX_FORGED = ("{path} 被改过(封印对不上),不用它:这次续接按数据库里原样的对话重新整理"
                "(只是慢一点)")

# flower/stores/trimming.py: lines of the spill memo whose seal does not match (someone wrote them).
MEMO_FORGED = "{path} 里有 {n} 行被改过(封印对不上),不用它们:那些结果按对话记录重新存一遍"
# flower/core/runstate.py: a spill file whose bytes do not hash to its name (an agent wrote it).
SPILL_ALTERED = "{path} 被改过(内容和文件名的哈希对不上):已删掉,没让模型读到;下次续接从对话记录重新写出"
# flower/core/runstate.py: the run dir / spill dir inside the workspace is, or goes through, a link.
RUN_STATE_SYMLINK = ("{path} 是一个符号链接(指向 {target}),flower 不往里记运行状态:可能是 agent 放的。"
                     "确认后删掉这个链接(rm {path}),或用 --run-dir 指一个真实的目录")

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
# the probe's two certain cases of a wrong setting (resilience.misconfigured decides them)
PROBE_REFUSED = "{url} 在本机,那里没有服务在听(连接被拒绝)"
PROBE_NO_HOST = "{url} 里的主机名解析不了,别的域名却能解析"
PROBE_CA_MISSING = "REQUESTS_CA_BUNDLE / SSL_CERT_FILE 指向的证书文件不存在:{path}"
PROBE_CA_BAD = "REQUESTS_CA_BUNDLE / SSL_CERT_FILE 指向的证书文件读不了:{path}({reason})"

# First line of the file written by write_user_env().
USER_ENV_HEADER = "# 由 flower setup 写入;里面有密钥,不要提交到仓库。"

# --- lineage / wake (workflow/wake.py) ---------------------------------------------------

# Wake banner (seed 000), e.g.
# "<- 在 ~/proj 接上上次  需求已确认 · 目标 15 条 · 干活上下文 80.2K · 第 3 次唤醒"
WAKE_BANNER = "<- 在 {where} 接上上次"
WAKE_BRIEF_OK = "需求已确认"
WAKE_CHECKS = "目标 {n} 条"
WAKE_CONTEXT = "{step}上下文 {size}"
WAKE_ORDINAL = "第 {n} 次唤醒"
WAKE_SEP = " · "

# --- the default job (workflow/clarify.py, workflow/goal.py, workflow/starter.py) -------

# Event("task") at goal-setting time: items that are bound to fail judging here.
UNVERIFIABLE_WARNING = (
    "# 判定清单里有 {n}/{total} 条在这个环境里没法验证:判定时它们必然过不了,"
    "运行会停下来问你。开工前还可以改 {path}"
)
UNVERIFIABLE_ITEM = "  · {item}"

# with_goal: the judge's round as the person sees it, and why a run stops.
JUDGE_ROUND = "# {label}:新开一个判定会话,亲自检查现场"
JUDGE_FAILED = "判定这一步没跑成({error}),没法确认这一轮的结果。修好后重新运行 flower,会在同一个目标上接着判定。"
GOAL_NO_RUNTIME = "没有 ctx['_runtime'],判定没法进行;不会假装通过。用 Workflow.run 来跑这个步骤。"
# Asked of the person when the judge says the goal cannot be reached or verified here.
UNREACHABLE_QUESTION = "判定认为这个目标在这里没法验证或达不成:{reason}\n怎么办?"
UNREACHABLE_OPTIONS = ("接受这个结果,就这样往下走", "修改目标", "你判断错了,继续做")
UNREACHABLE_ABORT = (
    "目标在这里没法验证或达不成,也没人拍板,先停下,不再空耗轮次。"
    "看一眼 {goal}(可以直接改)和 {manifest},然后重新运行 flower 接着做。"
)
AMEND_QUESTION = "新的目标是什么?一句话,会追加到原目标后面。"

# starter_flow
STARTER_NEED_ASK = "要给一句诉求,例如 flower '帮我做一个 X'"
ISOLATE_NOT_GIT = "--isolate 要求 {path} 是 git 仓库(每个 worker 要有自己的 worktree)。先 git init,或者去掉 --isolate。"

# --- cli / demo -------------------------------------------------------------------------

STEP_RESUMED = "<- 接上次 · 第 {n} 次唤醒"
STEP_FROZEN = "已冻结,跳过"
SENT_BACK = "{step}:没通过,把缺口送回同一个会话接着做第 {round} 轮"
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

# --- documents (core/brief.py, core/handoff.py) -------------------------------------------

# The frozen files' headers, for the person who opens them: parsing skips the text before
# the first section, and no prompt_block() carries it. Brief = 需求.md, handoff = 交接-<step>.md.
BRIEF_TITLE = "# 需求确认书"
BRIEF_REQUEST = "> 原始诉求:{request}"  # in the note, not a section
HANDOFF_NOTE = (
    "> 上下文快满了,上一个会话把手上的事写成了这份交接书。\n"
    "> 这个文件可以直接改;接手的新会话读到的就是它。"
)

# --- human channel (core/human.py) ------------------------------------------------------

# Q&A log (notes/问答记录.md), append-only: its title, and the warning when it cannot be written.
QA_LOG_TITLE = "# 需求问答记录"
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
SETUP_ASK_WINDOW = "4. 上下文窗口,单位 token(可不填;回车 = 按模型名猜,现在猜 {guess};例如 1000000、1m、200k):"
SETUP_ASK_WINDOW_KEEP = "4. 上下文窗口,单位 token(现在是 {current};回车 = 不变,- = 改回按模型名猜):"
SETUP_WINDOW_BAD = "  ! 看不懂「{answer}」:要一个 token 数,例如 1000000、1m、200k。窗口这一项不变。"
SETUP_CLEAR = "-"  # typed to a question with a current value: drop it (official URL / default model / guessed window)
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
# `flower lgo`: one ASCII word next to a command name is refused before anything runs (exit 2).
NOT_A_COMMAND = "没有 {word} 这个命令,是想用 flower {command} 吗?(要把它当诉求发出去:flower go {word})"
ONE_WORD = ("没有 {word} 这个命令(有的是:{commands};flower help 看说明)。"
            "要把它当诉求发出去:flower go {word},或者写成一句话")
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
INTERRUPTED = "已打断这一轮。"
# appended to INTERRUPTED only while dispatched workers are running (render.py)
INTERRUPTED_SUBAGENTS = "派出去的 {n} 个子任务还在跑,会丢掉半成品。"
INTERRUPT_PENDING = "还有 {n} 个提问在等回答,打断不影响它们。"
INTERRUPT_SAY = "说点什么?(回车 = 什么也不说,接着做;再按一次 Ctrl+C = 退出)"
NO_INBOX = "这个 workflow 没有接 HumanChannel,说的话送不到 agent 那里。"
INPUT_CLOSED = "输入已关闭"
ASIDE_HEAD = "旁路"
ASIDE_COST = "(${cost:.4f},没有打扰正在跑的运行)"
ASIDE_FAILED = "旁路问答失败:{error}"
ASIDE_WAIT = "(等 {n} 条旁路问答收尾…)"

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

HANDOFF_NOTE_DEGRADED = "交接降级({why})"  # goes into StepResult.errors and manifest.json
# Stops: repeated degradation, and the runaway brake (max_generations).
HANDOFF_STOP_DEGRADED = (
    "连续 {n} 次交接都降级了,停下这一步:再换代也只是烧钱,新会话每次都从零摸索。"
    "多半是窗口猜大了或余量太小,写交接的那一轮已经装不下——把窗口设成真实大小"
    "(--window / FLOWER_WINDOW)或调大 headroom 再跑。"
)
# The brake counts only generations that got nothing done (handoff_control.py): degraded,
# started within {margin} of the line, or fewer than {rounds} API calls. {gens} lists the
# measured start and calls of the last ones, oldest first (HANDOFF_BRAKE_GEN each).
HANDOFF_BRAKE = (
    "连续 {n} 次换代都没干成事(上限 {limit}),这一代又是这样,停下这一步。"
    "最近几代(起步上下文 · 主线程调用次数):{gens}。"
    "白干的一代:交接降级、起步就离换代线 {at} 不到 {margin},或者不到 {rounds} 次调用就又到线。"
    "最可能的原因:换代线低于这个角色的启动底座(系统提示加工作台索引,协调者实测约 34K),"
    "新会话一启动就又到线了。把窗口调大(当前 {window};--window / FLOWER_WINDOW),"
    "或者用 --no-handoff 关掉交接。"
)
HANDOFF_BRAKE_GEN = "{start} · {rounds} 次"
HANDOFF_BRAKE_GEN_DEGRADED = "{start} · {rounds} 次 · 降级"
# Event texts (Event("handoff").text); numbers come pre-formatted (130.0K, 200K).
HANDOFF_NEAR = "上下文 {used}/{window} · 还有约 {left} 到换代"
HANDOFF_WRITING = "上下文 {used}/{window} —— 写交接准备换代"
HANDOFF_DONE = "交接写在 {path},新会话接手,上下文从 0 重新开始"
HANDOFF_DONE_NO_FILE = "没有工作台,交接书只在新会话的提示里;新会话接手,上下文从 0 重新开始"
HANDOFF_DONE_DEGRADED = "交接没写成,用了降级版本,新会话会自己查看现场"
# The terminal's short, aligned labels for four sections of a finished handoff (doing, decided,
# deadends, next); the document's own headings are vocab's HANDOFF_SECTIONS.
HANDOFF_UI_LABELS = ("现在在做", "已定的事", "走不通的", "下一步")
# Once per run, when the gateway answers with another model than the configured one: the
# window (and so every handoff threshold) was guessed from the configured name.
MODEL_MISMATCH = (
    "! 网关实际回答的模型是 {served},不是配置的 {configured}。上下文窗口是按配置的名字猜的"
    "(现在按 {window} 算),可能不对:用 FLOWER_WINDOW=<token 数>(写进 ~/.config/flower/.env,"
    "或运行 flower setup)或 --window <token 数> 给出真实窗口。"
)


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
# A failed transcript mirror (the session store refused an append): a warning, never silent.
MIRROR_FAILED = (
    "会话记录没能存进 sessions.db({error})。这一步照常进行,但中断后可能接不上刚才的进度。"
)
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

# --- a bug in flower: an exception nothing expected (cli/crash.py) -------------------------
BUG = "这是 flower 的 bug:{error}。完整的 traceback 在 {path},报告问题时请附上。"
BUG_NO_FILE = "这是 flower 的 bug:{error}。traceback 没能写进文件({why}),附在下面,报告问题时请附上。"

# --- the command sandbox (--sandbox; flower/core/sandbox.py) -------------------------------
# auto on a machine without one: printed once at start, then the run goes on.
SANDBOX_AUTO_OFF = ("没有命令沙箱({why}):协调者、澄清、判定、旁路问答的 Bash 这次只有 flower 的钩子把关,"
                    "没有操作系统这道墙(不能写、不能联网、看不到凭证)。要它:{how}")
# --sandbox on|strict on such a machine: the one line before exit 1.
SANDBOX_UNAVAILABLE = "--sandbox {mode} 要用命令沙箱,但这台机器没有:{why}。{how},或者改用 --sandbox auto"
SANDBOX_WHY_MISSING = "PATH 里找不到 {names}"
SANDBOX_WHY_BROKEN = "bwrap 起不来沙箱:{detail}"
SANDBOX_WHY_PLATFORM = "{platform} 上不支持"
SANDBOX_HOW_LINUX = "装上即可:apt install bubblewrap socat"
SANDBOX_HOW_BROKEN = "容器里要允许 user namespace(比如 docker run --security-opt seccomp=unconfined)"
SANDBOX_HOW_OTHER = "在 Linux(或 WSL2)、macOS 上运行"
# -v, at every step: which wall its Bash ran behind.
SANDBOX_STEP = "沙箱:{wall}"
SANDBOX_WALLS = {"off": "关", "readonly": "只读、不联网", "workspace": "只能写工作区、不联网",
                 "workspace+net": "只能写工作区、联网限白名单"}

# --- bequest (workflow/bequest.py) and updates (core/update.py, cli/commands/update.py) -----

BEQUEST_RUNNING = "# {label}:运行结束,给下一个工具写交接(CLAUDE.md / AGENTS.md)"
BEQUEST_WRITTEN = "# 交接写进了 {paths}"
BEQUEST_WRITTEN_DEGRADED = "# 收尾交接没写成({why}),写了一份机械的兜底交接:{paths}"
BEQUEST_MALFORMED = "# {path} 里 flower 的标记不成对,新的一段追加在了末尾;多余的那段可以删掉"
BEQUEST_NOT_WRITTEN = "# 交接没写进 {path}:{error}"
BEQUEST_LINK_OUT = ("{name} 是指向工作区外 {target} 的链接,flower 不顺着它写(可能是 agent 放的);"
                    "删掉这个链接或换成普通文件,下次就会写进去")
BEQUEST_NOT_REGULAR = "{name} 不是普通文件(管道、设备或文件夹),flower 不往里写;换成普通文件再运行"
UPDATE_NOTICE = "有新版本 {new}:flower update"
UPDATE_LATEST = "已经是最新:{current}(来源 {source})"
UPDATE_UNREACHABLE = "查不到来源 {source} 的最新版本:{why}"
UPDATE_CHECKOUT = "这是源码检出({path}),flower 不替它更新:在那里 git pull。"
UPDATE_NO_RECORD = (
    "不知道这个 flower 是怎么装的(没找到 install.sh 留下的 {path}),没法替它更新。"
    "用 install.sh 重新装一次,以后 flower update 就知道怎么做了。"
)
UPDATE_RUNNING = "更新:{command}"
UPDATE_DONE = "更新好了:{current},下次运行 flower 生效。"
UPDATE_FAILED = "更新失败(退出码 {code}):{command}"
UPDATE_UNKNOWN_METHOD = "install.sh 记下的安装方式 {method!r} 不认识,没法替它更新。"

# --- --notify CMD (core/notify.py): the user's command, run when they are needed or the run ends
NOTIFY_FLAG_HELP = ("Shell command run (sh -c, never waited for) when a question waits, a cap is "
                    "reached and when the run ends; it reads FLOWER_EVENT, FLOWER_TEXT, "
                    "FLOWER_WORKSPACE, FLOWER_RUN (default: $FLOWER_NOTIFY).")
# One warning line per notification that did not go out; the run goes on.
NOTIFY_FAILED = "通知命令没发出 {event}:{why}"
NOTIFY_EXIT = "退出码 {code} {stderr}"
NOTIFY_HUNG = "通知命令发 {event} 时 {s:g} 秒没结束,已杀掉它的进程组"
NOTIFY_DROPPED = "退出时还有 {n} 条通知没来得及发,已放弃"

# --- spending cap and time cap (core/ledger.py, core/caps.py; shown by cli/tui) -------------

#: The cap question (asked through the human channel) and its options; a typed number is
#: dollars (budget) or hours (time) to add; the last option stops.
CAP_BUDGET_QUESTION = "预算 ${cap:.2f} 已用完(已花 ${spent:.2f})— 再加多少?"
CAP_TIME_QUESTION = "用时上限 {cap} 已到(已用 {spent})— 再加多少?(数字 = 小时)"
CAP_OPTIONS = ("+50%", "+100%", "停下")
CAP_REACHED_UI = {"budget": "预算到顶:已花 ${spent:.2f} / ${cap:.2f}",
                  "time": "用时到顶:{spent} / {cap}"}
CAP_RAISED = {"budget": "# 预算提到 ${cap:.2f},同一个会话接着做",
              "time": "# 用时上限提到 {cap},同一个会话接着做"}
CAP_STOPPED_BUDGET = ("预算 ${cap:.2f} 用完了(已花 ${spent:.2f}),已停下。"
                      "接着做:flower --budget {more}(唤醒同一个会话;flower run 同样加 --budget)")
CAP_STOPPED_TIME = ("用时上限 {cap} 到了,已停下。"
                    "接着做:flower --max-hours {more}(唤醒同一个会话;flower run 同样加 --max-hours)")
CLOSING_CAPPED = "总花费 ${cost:.4f} / ${cap:.2f} · 清单 {manifest}"
STATUS_BUDGET = "上下文 {context} · 累计 ${cost:.2f} / ${cap:.2f} · {elapsed}"
UI_DONE_TOTAL = " · 累计 ${total:.2f} / ${cap:.2f}"
LOG_CAPS = "上限:{caps} · 已花 {spent} · 已用 {elapsed}(整个任务,跨唤醒)"
LOG_CAP_BUDGET = "预算 ${cap:.2f}"
LOG_CAP_TIME = "用时 {cap}"
LOG_NO_CAPS = "无"
LOG_STOPPED_AT = {"budget": "停在预算上限", "time": "停在用时上限"}
LOG_DISPATCH = "派活 {agent} · {cost} · {turns} 轮"

# --- issue 21: a run says what happened, in words (workflow/base.py, render.py, resilience) -

# The abort line and the manifest row of a step whose last attempt the gate refused.
GATE_REJECTED = "验收没通过(试了 {n} 次)"
BRIEF_INCOMPLETE = "澄清的回复里没有完整的需求确认书,缺:{missing}"
GOAL_NOT_MET = "{n} 轮之后判定仍然没通过:{reason}"
# The end of a turn that did not finish its work (render.py; UI_DONE is the finished one).
UI_TURN_FAILED = "这一轮失败 · {turns} 轮 · ${cost:.2f}"
UI_TURN_INTERRUPTED = "这一轮被打断 · {turns} 轮 · ${cost:.2f}"

# in_words() (core/resilience.py): a network or API failure said in words, not a repr.
NET_REFUSED = "连接被拒绝"
NET_NO_HOST = "域名解析不了"
NET_RESET = "连接被重置"
NET_UNREACHABLE = "网络不可达"
NET_TIMEOUT = "连接超时"
FAIL_AUTH = "凭证被拒"
FAIL_OVERLOADED = "服务过载"
FAIL_RATE_LIMITED = "请求太频繁,被限流"
FAIL_SERVER = "服务端出错"
API_FAILED = "调用模型失败:{what}"  # the CLI's "API Error: …"
NO_RESULT = "智能体没给出结果就结束了"  # the CLI went without a result message

# A base URL that cannot be right (misconfigured()): one line, then exit 1 — no waiting.
BASE_URL_REFUSED = (
    "ANTHROPIC_BASE_URL={url}({origin})指向本机的 {host}:{port},那里没有服务在听(连接被拒绝)。"
    "这是配置问题,不是网络中断,所以不等了:改好这个设置(或运行 flower setup)再运行"
)
BASE_URL_NO_HOST = (
    "ANTHROPIC_BASE_URL={url}({origin})里的主机名 {host} 解析不了,别的域名却能解析。"
    "这是配置问题,不是网络中断,所以不等了:改好这个设置(或运行 flower setup)再运行"
)
SETTING_FROM_ENV = "来自进程环境变量"
SETTING_FROM_FILE = "来自 {path}"
SETTING_DEFAULT = "没设置,用的默认值"
ENV_UNTRUSTED = ("{path} 在上次运行时(agent 干活期间)被改过,这次没有读它:看过内容没问题就运行 "
                 "flower trust-env,下次起生效")
ENV_USER_ONLY = ("{path} 里的 {keys} 没用:会执行命令的设置只从环境变量或你自己的 {user} 读"
                 "(项目里的文件 agent 也能写)")
ENV_TRUSTED = "好,{path} 从下次运行起会被读取"
ENV_NOTHING_TO_TRUST = "{path} 不存在,没有要确认的"
# flower checkpoints / rewind / diff (flower.core.checkpoints): snapshots of the project
CP_NONE = "{ws} 还没有检查点:每一步结束、每个子任务回报、每轮判定之前,flower 会自动拍一个"
CP_HEADER = "检查点({ws},从旧到新):"
CP_ROW = "#{id:<4} {when}  {kind:<13}  {step}  新增 {added} · 改动 {changed} · 删除 {removed}"
CP_ROW_SKIPPED = "       没收进去 {n} 个:{names}(单个文件上限 {mb} MB,嵌套的 git 仓库不收)"
CP_ROW_REWIND = "       回退到 #{to} 之前的样子"
CP_HINT = "回到某个检查点:flower rewind ID(先看看:--dry-run);比较:flower diff ID [ID2]"
CP_UNKNOWN = "没有编号为 {id} 的检查点:flower checkpoints 列出有哪些"
CP_NOT_A_NUMBER = "检查点编号是数字(如 3),收到的是 {id!r}:flower checkpoints 列出有哪些"
CP_RUN_ACTIVE = ("{run_dir} 里还有 flower 在跑:文件不能在它脚下换掉。等它结束(或先停掉它)"
                 "再回退")
CP_NO_GIT = "检查点要用 git,这台机器上找不到:装上 git 再试"
CP_FAILED = "检查点读写失败:{error}"
CP_LOG_LINE = "检查点 {n} 个,最新 #{id} {kind} {step} · flower checkpoints 看全部"
REWIND_PLAN = "回退到 #{id}({kind} {step})要改回 {written} 个、恢复 {created} 个、删掉 {removed} 个文件"
REWIND_DRY = "(--dry-run:什么都没动)"
REWIND_DONE = "已回退到 #{id}({kind} {step}):改回 {written} 个、恢复 {created} 个、删掉 {removed} 个文件"
REWIND_UNDO = "回退前的样子存成了检查点 #{before}:反悔就 flower rewind {before}"
REWIND_KEPT = "没动 {n} 个文件(当前快照没收它们:太大或被忽略):{names}"
REWIND_STEPS = "下次运行 flower 会重跑这些步骤:{steps}"
REWIND_DOCS = "它们冻结的文档挪到了 {path}(没删)"
# flower log: the machine-written errors of a stopped step, in words.
LOG_ABORTED_CTRL_C = "被 Ctrl-C 停下"
LOG_ABORTED_CANCELLED = "被取消(运行被停下,这一步没做完)"
LOG_ABORTED_OTHER = "中途停下({what})"
LOG_KILLED = "进程被信号终止(SIGTERM/SIGHUP),这一步没做完"
LOG_INTERRUPTED = "被人打断,接着做了"
LOG_HANDOFF_DUE = "上下文满了,换代接着做"

# the terminal of a run: the closing line's elapsed part, the status bar's names for the
# human tools (a person reads "waiting for your answer", not mcp__human__ask), and the
# second half of a typed remark's receipt (where the remark was kept)
CLOSING_ELAPSED = " · 用时 {elapsed}"
STATUS_TOOL_ASK = "等你回答"
STATUS_TOOL_INBOX = "看收件箱"
UI_MAIL_KEPT = "已追加到 {path}"
UI_MAIL_NOT_KEPT = "没有需求文档可追加,只送到 agent 那里"

# --- flower doctor (flower/core/doctor.py checks, flower/cli/commands/doctor.py prints) ------
DOCTOR_CREDS = "凭证"
DOCTOR_CLI = "claude CLI"
DOCTOR_SANDBOX = "沙箱"
DOCTOR_GIT = "git"
DOCTOR_DOCKER = "docker"
DOCTOR_STORE = "存储"
DOCTOR_DISK = "磁盘"
DOCTOR_CREDS_MISSING = "没有 API 凭证:运行 flower setup 填一个(会存到 {path},权限 600),或 export ANTHROPIC_API_KEY=…"
DOCTOR_CREDS_SET = "{key} {masked} → {url}"
DOCTOR_PROBE_SKIPPED = "没发试探请求(设了 FLOWER_NO_PROBE)"
DOCTOR_PROBE_OK = "试探请求通过"
DOCTOR_PROBE_NET = "试探请求没打通:{detail}(网络问题的话,run 会等它恢复)"
DOCTOR_PROBE_AUTH = "凭证被拒:{detail} —— 运行 flower setup 换一个"
DOCTOR_PROBE_CONFIG = "网关地址或模型名不对:{detail} —— 运行 flower setup 改"
DOCTOR_CLI_MISSING = "自带的 claude 不在 {path}:重装 claude-agent-sdk(pip install --force-reinstall claude-agent-sdk)"
DOCTOR_CLI_BROKEN = "{path} 起不来:{detail} —— 重装 claude-agent-sdk(pip install --force-reinstall claude-agent-sdk)"
DOCTOR_CLI_OK = "{version}({path})"
DOCTOR_SANDBOX_OK = "命令沙箱可用(--sandbox on / strict 都行)"
DOCTOR_SANDBOX_WEAK = "命令沙箱可用(容器里,没有新的 /proc:弱一些的隔离)"
DOCTOR_SANDBOX_NONE = "没有命令沙箱:{why}。{how}(--sandbox auto 照常能跑,on / strict 跑不了)"
DOCTOR_GIT_NONE = "找不到 git:检查点(flower checkpoints / rewind)和 --isolate 要用,装上 git"
DOCTOR_DOCKER_NONE = "没装 docker:只有 docker/flowerbox(在容器里跑 flower)要用,别的都不需要"
DOCTOR_DOCKER_DOWN = "docker 连不上守护进程:{detail}(只有 docker/flowerbox 要用)"
DOCTOR_DOCKER_OK = "docker 守护进程 {version}"
DOCTOR_STORE_SQLITE = "SQLite {path}"
DOCTOR_STORE_READONLY = "SQLite {path}:{folder} 写不进去 —— 用 -r 指一个能写的目录"
DOCTOR_STORE_NO_DRIVER = "{url} 要 PostgreSQL 驱动:pip install 'flower[postgres]'"
DOCTOR_STORE_DOWN = "连不上 {url}:{detail}"
DOCTOR_STORE_PG = "PostgreSQL {version} {url}"
DOCTOR_DISK_OK = "{gb} GB 可用({path})"
DOCTOR_DISK_LOW = "只剩 {gb} GB({path}):长任务的对话记录和检查点可能放不下,腾点地方"
DOCTOR_SUMMARY_OK = "都没问题:flower \"一句话\" 就能开跑"
DOCTOR_SUMMARY_FAIL = "{n} 项要先处理(上面 x 开头的行说了怎么做)"

__all__ = [name for name in dir() if name.isupper()]
