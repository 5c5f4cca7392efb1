"""Write the transcript-shape fixtures under tests/stores/fixtures/shapes/ (issue 30, item 4).

    python tests/stores/shapes.py

A user resumes whatever their CLI wrote, and the CLI wrote other shapes in other versions:
inline sidechains (1.0.x), subagent files (2.x), compaction boundaries, progress and queue
entries, retry records. Every shape must resume into a request the API accepts, through
flower's store as well as straight from disk. The entries are written here by hand from
the public JSONL format — uuid/parentUuid/sessionId/type/message/timestamp/version/
isSidechain — none is copied from a real transcript, and each shape is a directory laid
out as the CLI lays out a project dir: ``<session>.jsonl`` and, for subagents,
``<session>/subagents/agent-<id>.jsonl`` (+ ``.meta.json``). The tests read the files,
not this module, so a fixture stays what it was when it was reviewed; re-run this after
changing a shape and look at the diff. ``Transcript`` is also the entry writer of the
generated transcripts in test_resume_valid.py.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

SHAPES_DIR = Path(__file__).parent / "fixtures" / "shapes"
CWD = "/home/dev/shop"
_NS = uuid.UUID("0c3e8a52-7d1f-4b6e-9a40-5f2d6c1b7e93")
Entry = dict[str, Any]
LAST = object()  # parent: the entry written before


def uid(*parts: object) -> str:
    """A stable uuid for a name: the same shape is written byte for byte every time."""
    return str(uuid.uuid5(_NS, "/".join(map(str, parts))))


class Transcript:
    """Entries of one transcript file, with the fields the CLI writes, in its key order.

    ``version`` picks the family: 1.0.x lines have no ``gitBranch``-era extras and put
    ``toolUseResult`` after the timestamp; 2.x lines add ``gitBranch``/``slug`` and
    ``sourceToolAssistantUUID``. ``agent_id`` makes a 2.x subagent transcript (every
    entry ``isSidechain`` and tagged with the agent). Ids are derived from ``name``.
    """

    def __init__(self, name: str, session_id: str, version: str, *, cwd: str = CWD,
                 agent_id: str | None = None, sidechain: bool = False,
                 clock: list[int] | None = None) -> None:
        self.name = name
        self.session_id = session_id
        self.version = version
        self.cwd = cwd
        self.agent_id = agent_id
        self.sidechain = sidechain or agent_id is not None
        self.entries: list[Entry] = []
        self.lines: list[str] = []  # what the file holds (a torn line is text only)
        self._n = 0
        self._last: str | None = None
        self.clock = clock if clock is not None else [0]  # shared by files written together

    # ------------------------------------------------------------------ plumbing
    @property
    def v1(self) -> bool:
        return self.version.startswith("1.")

    def _next(self, kind: str) -> str:
        self._n += 1
        return uid(self.name, self.agent_id, kind, self._n)

    def stamp(self) -> str:
        self.clock[0] += 1
        tick = self.clock[0]
        minute, second = divmod(tick, 60)
        return f"2025-10-14T09:{minute:02d}:{second:02d}.{(tick * 37) % 1000:03d}Z"

    def _chain(self, kind: str, parent: Any, body: Entry, tail: Entry | None = None,
               sidechain: bool | None = None) -> Entry:
        side = self.sidechain if sidechain is None else sidechain
        e: Entry = {"parentUuid": self._last if parent is LAST else parent,
                    "isSidechain": side, "userType": "external", "cwd": self.cwd,
                    "sessionId": self.session_id, "version": self.version}
        if not self.v1:
            e["gitBranch"] = "main"
            if self.agent_id:
                e["agentId"] = self.agent_id
        e["type"] = kind
        e.update(body)
        e["uuid"] = self._next("entry")
        e["timestamp"] = self.stamp()
        e.update(tail or {})
        return self.add(e, link=True)

    def add(self, entry: Entry, *, link: bool = False, first: bool = False) -> Entry:
        """Append ``entry`` as it is (``first``: put it at the top of the file); ``link``:
        it becomes the parent of the next one."""
        line = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
        if first:
            self.entries.insert(0, entry)
            self.lines.insert(0, line)
        else:
            self.entries.append(entry)
            self.lines.append(line)
        if link:
            self._last = entry["uuid"]
        return entry

    @property
    def last(self) -> str | None:
        return self._last

    def message_id(self) -> str:
        return "msg_01" + uuid.UUID(self._next("msg")).hex[:22]

    def tool_id(self) -> str:
        return "toolu_01" + uuid.UUID(self._next("tool")).hex[:22]

    # ------------------------------------------------------------------ entries
    def prompt(self, text: Any, *, parent: Any = LAST, **extra: Any) -> Entry:
        """A user line: a typed prompt (``text`` a string) or any user content."""
        return self._chain("user", parent, {"message": {"role": "user", "content": text}},
                           extra)

    def assistant(self, blocks: list[Entry], *, msg: str | None = None, parent: Any = LAST,
                  model: str = "claude-sonnet-4-5-20250929", stop: str | None = None,
                  **extra: Any) -> Entry:
        """One assistant line (the CLI writes one per content block; lines of one API
        response share ``msg``, the ``message.id``)."""
        msg = msg or self.message_id()
        message = {"id": msg, "type": "message", "role": "assistant", "model": model,
                   "content": blocks, "stop_reason": stop, "stop_sequence": None,
                   "usage": {"input_tokens": 4 + self._n, "cache_creation_input_tokens": 0,
                             "cache_read_input_tokens": 9000 + 17 * self._n,
                             "output_tokens": 3 + self._n % 50}}
        return self._chain("assistant", parent,
                           {"message": message, "requestId": "req_011" + msg[6:24]}, extra)

    def say(self, text: str, **kw: Any) -> Entry:
        return self.assistant([{"type": "text", "text": text}], **kw)

    def call(self, name: str, tool_input: Entry, **kw: Any) -> str:
        tid = self.tool_id()
        self.assistant([{"type": "tool_use", "id": tid, "name": name, "input": tool_input}],
                       stop="tool_use", **kw)
        return tid

    def result(self, tid: str, body: Any, *, is_error: bool = False, record: Any = None,
               parent: Any = LAST, **extra: Any) -> Entry:
        """The user line answering ``tid``; ``record`` is its ``toolUseResult``."""
        block = {"tool_use_id": tid, "type": "tool_result", "content": body,
                 "is_error": is_error}
        if record is None:
            record = {"stdout": body if isinstance(body, str) else "", "stderr": "",
                      "interrupted": False, "isImage": False}
        caller = self._last if parent is LAST else parent
        if self.v1:
            return self._chain("user", parent, {"message": {"role": "user",
                                                            "content": [block]}},
                               {"toolUseResult": record, **extra})
        return self._chain("user", parent, {"message": {"role": "user", "content": [block]}},
                           {"toolUseResult": record, "sourceToolAssistantUUID": caller,
                            **extra})

    def bash(self, command: str, out: str, **kw: Any) -> str:
        tid = self.call("Bash", {"command": command, "description": "Run " + command})
        self.result(tid, out, **kw)
        return tid

    def system(self, subtype: str, *, parent: Any = LAST, **fields: Any) -> Entry:
        return self._chain("system", parent, {"subtype": subtype, **fields})

    def progress(self, data: Entry, tool_use_id: str, parent_tool_use_id: str, *,
                 parent: Any = LAST, link: bool = True) -> Entry:
        """A 2.x ``progress`` line; ``link=False`` leaves it a leaf beside the chain."""
        keep = self._last
        e = self._chain("progress", parent, {"data": data, "toolUseID": tool_use_id,
                                             "parentToolUseID": parent_tool_use_id})
        if not link:
            self._last = keep
        return e

    def queue(self, operation: str, content: str | None = None) -> Entry:
        e: Entry = {"type": "queue-operation", "operation": operation,
                    "timestamp": self.stamp(), "sessionId": self.session_id}
        if content is not None:
            e["content"] = content
        return self.add(e)

    def last_prompt(self) -> Entry:
        return self.add({"type": "last-prompt", "lastPrompt": "", "leafUuid": self._last,
                         "sessionId": self.session_id})

    def api_error(self, status: int, text: str, **kw: Any) -> Entry:
        """The synthetic assistant a failed turn ends with (``isApiErrorMessage``)."""
        return self.assistant([{"type": "text", "text": text}], msg=self._next("synthetic"),
                              model="<synthetic>", stop="stop_sequence",
                              isApiErrorMessage=True, apiErrorStatus=status, **kw)

    def retry(self, attempt: int, status: int = 529, delay: int = 500) -> Entry:
        """A 2.1.x ``system``/``api_error`` retry record."""
        return self.system("api_error", level="error", error={
            "message": f'{status} {{"type":"error","error":{{"type":"overloaded_error",'
                       f'"message":"Overloaded"}}}}', "status": status,
            "requestId": "req_011" + uid(self.name, "retry", attempt)[:18]},
            retryInMs=delay * attempt, retryAttempt=attempt, maxRetries=10)

    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)


def _agent_result(report: str, agent: str, prompt: str) -> Entry:
    return {"status": "completed", "prompt": prompt, "agentId": agent,
            "content": [{"type": "text", "text": report}], "totalDurationMs": 8123,
            "totalTokens": 1234, "totalToolUseCount": 2}


def _big(label: str, lines: int = 40) -> str:
    """A result over the e2e trim threshold (400 chars): what trim spills."""
    return "\n".join(f"{label} {i:03d} " + "ok " * 6 for i in range(lines))


# --------------------------------------------------------------------------- the shapes
# Each returns {relative path: file text}; the first file is the main transcript.

Files = dict[str, str]


def v1_inline_sidechain(sid: str) -> Files:
    t = Transcript("v1-inline-sidechain", sid, "1.0.24")
    t.prompt("P1 what is in this repository?")
    msg = t.message_id()
    t.say("I'll have an agent survey it.", msg=msg)
    task_prompt = "Survey the repository and report its top-level layout."
    task = t.call("Task", {"description": "Survey repo", "prompt": task_prompt}, msg=msg)
    main = t.last
    side = Transcript("v1-inline-sidechain/side", sid, "1.0.24", sidechain=True,
                      clock=t.clock)
    side.prompt(task_prompt, parent=None)
    ls = side.call("LS", {"path": CWD})
    side.result(ls, "- /home/dev/shop/\n  - src/\n  - tests/\n  - README.md\n",
                record="- /home/dev/shop/\n  - src/\n  - tests/\n  - README.md\n")
    glance = side.call("Bash", {"command": "git status", "description": "status"})
    side.result(glance, "On branch main\nnothing to commit")
    side.say("src/, tests/ and README.md; the tree is clean.")
    for e in side.entries:
        t.add(e)
    report = [{"type": "text", "text": "src/, tests/ and README.md; the tree is clean."}]
    t.result(task, report, parent=main, record={"content": report, "totalDurationMs": 9120,
                                                "totalTokens": 2210, "totalToolUseCount": 2})
    t.say("It has src/, tests/ and a README; nothing is uncommitted.")
    t.prompt("P2 show me git status yourself")
    t.bash("git status", "On branch main\nnothing to commit, working tree clean")
    t.say("Clean.")
    t.add({"type": "summary", "summary": "Survey the shop repository", "leafUuid": t.last},
          first=True)
    return {f"{sid}.jsonl": t.text()}


def v2_subagent_files(sid: str) -> Files:
    t = Transcript("v2-subagent-files", sid, "2.1.19")
    t.queue("enqueue", "P1 find where prices are rounded")
    t.queue("dequeue")
    t.prompt("P1 find where prices are rounded", permissionMode="default")
    agent = "a3f9c21"
    task_prompt = "Find the code that rounds prices and name the file and function."
    task = t.call("Task", {"description": "Find rounding", "prompt": task_prompt,
                           "subagent_type": "general-purpose"})
    report = "Prices are rounded in src/money.py:round_price (banker's rounding)."
    sub = Transcript("v2-subagent-files", sid, "2.1.19", agent_id=agent, clock=t.clock)
    sub.prompt(task_prompt, parent=None)
    sub.bash("grep -rn round src", _big("src/money.py:12: round_price"))
    read = sub.call("Read", {"file_path": f"{CWD}/src/money.py"})
    sub.result(read, "     1\tfrom decimal import Decimal, ROUND_HALF_EVEN\n",
               record={"type": "text", "file": {"filePath": f"{CWD}/src/money.py",
                                                "numLines": 1}})
    sub.say(report)
    for n in range(2):
        t.progress({"type": "agent_progress", "agentId": agent, "prompt": task_prompt,
                    "message": {"type": "assistant", "message": {"role": "assistant",
                                "content": [{"type": "text", "text": f"searching {n}"}]}}},
                   f"agent_msg_{n}", task)
    t.result(task, [{"type": "text", "text": report}],
             record=_agent_result(report, agent, task_prompt))
    t.say("The rounding is in src/money.py, round_price.")
    t.last_prompt()
    t.prompt("P2 is it banker's rounding?")
    t.say("Yes: it calls round() on a Decimal with ROUND_HALF_EVEN.")
    meta = json.dumps({"agentType": "general-purpose"}) + "\n"
    return {f"{sid}.jsonl": t.text(), f"{sid}/subagents/agent-{agent}.jsonl": sub.text(),
            f"{sid}/subagents/agent-{agent}.meta.json": meta}


def v2_compact_boundary(sid: str) -> Files:
    t = Transcript("v2-compact-boundary", sid, "2.1.7")
    t.prompt("OLD1 read the checkout module")
    read = t.call("Read", {"file_path": f"{CWD}/src/checkout.py"})
    t.result(read, _big("checkout.py line"), record={"type": "text"})
    t.say("checkout.py builds the order, then charges the card.")
    t.prompt("OLD2 and the tests?")
    t.bash("ls tests", "test_checkout.py\ntest_money.py")
    t.say("Two test files.")
    before = t.last
    agent = "acompact-7d41e0"
    fork = Transcript("v2-compact-boundary", sid, "2.1.7", agent_id=agent, clock=t.clock)
    fork.prompt("Your task is to create a detailed summary of the conversation so far, "
                "paying close attention to the user's explicit requests.", parent=before)
    fork.say("<summary>\n1. The user asked about checkout.py and its tests.\n"
             "2. Two test files exist.\n</summary>")
    boundary = t.system("compact_boundary", parent=None, content="Conversation compacted",
                        isMeta=False, level="info", logicalParentUuid=before,
                        compactMetadata={"trigger": "manual", "preTokens": 48213})
    t.prompt("This session is being continued from a previous conversation that ran out "
             "of context. The conversation is summarized below:\nSummary:\n1. The user "
             "asked about checkout.py and its tests.\n2. Two test files exist.",
             parent=boundary["uuid"], isVisibleInTranscriptOnly=True, isCompactSummary=True)
    t.prompt("P1 now add a test for refunds")
    t.bash("pytest -q tests/test_checkout.py", _big("PASSED test_checkout"))
    t.say("Added test_refund; the suite passes.")
    return {f"{sid}.jsonl": t.text(), f"{sid}/subagents/agent-{agent}.jsonl": fork.text()}


def v1_compact_summary(sid: str) -> Files:
    t = Transcript("v1-compact-summary", sid, "1.0.44")
    t.prompt("OLD explain the cart")
    t.say("The cart keeps line items in a dict keyed by SKU.")
    t.prompt("This session is being continued from a previous conversation that ran out "
             "of context. The conversation is summarized below:\nThe user asked how the "
             "cart stores items.", parent=None, isCompactSummary=True)
    t.prompt("P1 where is it persisted?")
    t.bash("grep -rn session src/cart.py", "src/cart.py:40: session['cart'] = items")
    t.say("In the web session, line 40.")
    return {f"{sid}.jsonl": t.text()}


def v2_progress(sid: str) -> Files:
    t = Transcript("v2-progress", sid, "2.1.14")
    t.prompt("P1 run the test suite")
    msg = t.message_id()
    t.say("Running it.", msg=msg)
    tid = t.call("Bash", {"command": "pytest -q", "description": "Run tests"}, msg=msg)
    call = t.last
    for n in range(2):
        t.progress({"type": "bash_progress", "output": f"{n * 40} passed",
                    "fullOutput": f"{n * 40} passed", "elapsedTimeSeconds": 2 + n,
                    "totalLines": n + 1}, f"bash-progress-{n}", tid)
    t.result(tid, _big("PASSED tests/test_cart.py::test"), parent=call)
    t.progress({"type": "hook_progress", "hookEvent": "PostToolUse",
                "hookName": "PostToolUse:Bash", "command": "./hooks/lint.sh"},
               tid, tid, link=False)
    t.say("All 80 tests pass.")
    t.prompt("P2 and the linter, and the slowest tests?")
    t.bash("ruff check .", "All checks passed!")
    t.bash("pytest -q --durations=40", _big("slowest durations"))
    t.say("Lint is clean; the slowest test takes 0.4 s.")
    t.progress({"type": "hook_progress", "hookEvent": "Stop", "hookName": "Stop",
                "command": "./hooks/notify.sh"}, "stop-hook", "stop-hook", link=False)
    return {f"{sid}.jsonl": t.text()}


def v2_queue_operations(sid: str) -> Files:
    t = Transcript("v2-queue-operations", sid, "2.1.3")
    t.queue("enqueue", "P1 bump the version")
    t.queue("dequeue")
    t.prompt("P1 bump the version")
    edit = t.call("Edit", {"file_path": f"{CWD}/pyproject.toml", "old_string": "0.4.1",
                           "new_string": "0.4.2"})
    t.queue("enqueue", "DROPPED never mind the changelog")
    t.queue("remove")
    t.queue("enqueue", "P2 also tag it")
    t.result(edit, "The file has been updated.", record={"filePath": f"{CWD}/pyproject.toml"})
    t.say("Bumped to 0.4.2.")
    t.last_prompt()
    t.queue("dequeue")
    t.prompt("P2 also tag it")
    t.bash("git tag v0.4.2", "")
    t.say("Tagged v0.4.2.")
    t.queue("popAll")
    return {f"{sid}.jsonl": t.text()}


def v21_api_error_retries(sid: str) -> Files:
    t = Transcript("v21-api-error-retries", sid, "2.1.31")
    t.prompt("P1 summarise the README")
    t.retry(1)
    t.retry(2, delay=1100)
    t.say("It describes a small shop backend.")
    t.prompt("P2 and the license?")
    for n in range(1, 4):
        t.retry(n, delay=700)
    t.api_error(529, "API Error: Repeated 529 Overloaded errors · check status.claude.com",
                error="rate_limit")
    t.prompt("P3 try again please")
    t.say("MIT.")
    return {f"{sid}.jsonl": t.text()}


def v1_api_error_message(sid: str) -> Files:
    t = Transcript("v1-api-error-message", sid, "1.0.31")
    t.prompt("P1 list the source files")
    t.bash("ls src", "cart.py\ncheckout.py\nmoney.py")
    t.api_error(500, 'API Error: 500 {"type":"error","error":{"type":"api_error",'
                     '"message":"Internal server error"}}')
    t.prompt("P2 continue")
    t.say("Three modules: cart, checkout, money.")
    return {f"{sid}.jsonl": t.text()}


def v1_tool_result_string(sid: str) -> Files:
    t = Transcript("v1-tool-result-string", sid, "1.0.17")
    t.prompt("P1 open the config")
    read = t.call("Read", {"file_path": f"{CWD}/config.yml"})
    t.result(read, "File does not exist.", is_error=True, record="Error: File does not exist.")
    edit = t.call("Write", {"file_path": f"{CWD}/config.yml", "content": "debug: false\n"})
    t.result(edit, "The user doesn't want to proceed with this tool use. The tool use was "
                   "rejected (eg. if it was a file edit, the new_string was NOT written to "
                   "the file). STOP what you are doing and wait for the user to tell you "
                   "how to proceed.", is_error=True, record="User rejected tool use")
    t.prompt([{"type": "text", "text": "[Request interrupted by user for tool use]"}])
    t.prompt("P2 do not create it, just tell me the default")
    t.say("Without a config file the defaults apply: debug is off.")
    return {f"{sid}.jsonl": t.text()}


def v2_split_response(sid: str) -> Files:
    """As CLI 2.1.x writes parallel calls: one line per block, each result below its own
    call's line (so they are siblings), in the order the calls finished, and the rest of
    the turn below the result written last."""
    t = Transcript("v2-split-response", sid, "2.1.22")
    t.prompt("P1 check the tree, then clean the build dir")
    msg = t.message_id()
    t.assistant([{"type": "thinking", "thinking": "Status and a listing first.",
                  "signature": "EqoBCkYIBxgCKkBsig" + "A" * 40}], msg=msg)
    t.say("Checking both.", msg=msg)
    status = t.call("Bash", {"command": "git status", "description": "status"}, msg=msg)
    status_line = t.last
    ls = t.call("Bash", {"command": "ls build", "description": "list"}, msg=msg)
    t.result(ls, "app.whl\nlog.txt", parent=t.last)
    t.result(status, "On branch main\nnothing to commit", parent=status_line)
    # no text before the calls; the user took a while to deny the first one, so its
    # result is the last written and the turn goes on below it
    msg = t.message_id()
    rm = t.call("Bash", {"command": "rm -rf build", "description": "clean"}, msg=msg)
    rm_line = t.last
    cat = t.call("Read", {"file_path": f"{CWD}/build/log.txt"}, msg=msg)
    t.result(cat, _big("build log"), parent=t.last, record={"type": "text"})
    t.result(rm, "Permission to use Bash with command rm -rf build has been denied.",
             is_error=True, parent=rm_line, toolDenialKind="permission-rule")
    t.say("The clean was denied; the log shows a clean build.")
    t.prompt("P2 try deleting just the wheel")
    again = t.call("Bash", {"command": "rm build/app.whl", "description": "delete"})
    t.result(again, "Permission to use Bash with command rm build/app.whl has been denied.",
             is_error=True, toolDenialKind="permission-rule")
    msg = t.message_id()
    t.say("That was denied as well; ", msg=msg)
    t.say("you may want to delete it yourself.", msg=msg)
    return {f"{sid}.jsonl": t.text()}


def several_roots(sid: str) -> Files:
    t = Transcript("several-roots", sid, "2.0.14")
    t.prompt("ELSEWHERE an old question about Docker", parent=None)
    t.say("Use a multi-stage build.")
    t.prompt("P1 how are orders numbered?", parent=None)
    t.bash("grep -rn order_number src", "src/checkout.py:88: order_number = next(seq)")
    t.say("From a sequence, in checkout.py.")
    fork = t.last
    t.prompt("ELSEWHERE can it wrap around?")
    t.say("Not before 2**63.")
    t.prompt("P2 (rewound) is the sequence per shop?", parent=fork)
    t.say("Yes, one sequence per shop id.")
    return {f"{sid}.jsonl": t.text()}


def v1_resumed_two_sessions(sid: str) -> Files:
    old = uid("v1-resumed-two-sessions", "old session")
    t = Transcript("v1-resumed-two-sessions", old, "1.0.30")
    t.prompt("P1 what does money.py export?")
    t.bash("grep -n '^def ' src/money.py", "12:def round_price(x):\n30:def to_cents(x):")
    t.say("round_price and to_cents.")
    t.session_id, t.version = sid, "1.0.51"
    t.prompt("P2 (resumed) document to_cents")
    t.say("Added a docstring to to_cents.")
    return {f"{sid}.jsonl": t.text()}


def torn_last_line(sid: str) -> Files:
    t = Transcript("torn-last-line", sid, "2.1.9")
    t.prompt("P1 start the dev server")
    t.say("Which port?")
    t.prompt("P2 8080")
    t.bash("ls", "manage.py\nsrc")
    t.assistant([{"type": "text", "text": "Starting it on 8080 now."}])
    t.entries.pop()
    t.lines[-1] = t.lines[-1][: len(t.lines[-1]) * 2 // 3]  # the CLI was killed mid-write
    return {f"{sid}.jsonl": t.text()[:-1]}  # no newline after a torn line


def redacted(sid: str) -> Files:
    t = Transcript("redacted", sid, "2.1.26", cwd="[REDACTED]")
    t.prompt("P1 call the payments API with key [REDACTED]")
    msg = t.message_id()
    t.assistant([{"type": "thinking", "thinking": "[REDACTED]", "signature": "[REDACTED]"}],
                msg=msg)
    t.say("[REDACTED]", msg=msg)
    curl = t.call("Bash", {"command": "curl -s -H 'Authorization: Bearer [REDACTED]' "
                                      "https://[REDACTED]/v1/charges",
                           "description": "[REDACTED]"}, msg=msg)
    t.result(curl, "[REDACTED]", record={"stdout": "[REDACTED]", "stderr": "",
                                         "interrupted": False, "isImage": False})
    t.say("The call returned [REDACTED] charges.")
    t.prompt("P2 [REDACTED]")
    t.say("Done.")
    return {f"{sid}.jsonl": t.text()}


SHAPES: dict[str, tuple[Callable[[str], Files], str]] = {
    "v1-inline-sidechain": (v1_inline_sidechain, "CLI 1.0.x: a Task call's subagent "
        "written inline in the main file (isSidechain entries, their own parentUuid:null "
        "root) between the call and its result; a leading `summary` entry with leafUuid."),
    "v2-subagent-files": (v2_subagent_files, "CLI 2.x: the subagent in "
        "`<session>/subagents/agent-<id>.jsonl` (+ .meta.json); agent_progress lines with "
        "parentToolUseID in the main file; queue-operation and last-prompt bookkeeping."),
    "v2-compact-boundary": (v2_compact_boundary, "CLI 2.x compaction: a system "
        "compact_boundary (parentUuid null, logicalParentUuid, compactMetadata), the "
        "isCompactSummary user entry, and the compaction agent's file whose first parent "
        "is the main session's last pre-compaction entry. OLD prompts are not resumed."),
    "v1-compact-summary": (v1_compact_summary, "CLI 1.0.x compaction: no boundary entry; "
        "the isCompactSummary user entry starts a new parentUuid:null root."),
    "v2-progress": (v2_progress, "CLI 2.1.x: bash_progress lines chained between a "
        "tool_use and its result, hook_progress lines as side leaves (one the file's last "
        "line), each with toolUseID/parentToolUseID; a text and a tool_use sharing a "
        "message.id."),
    "v2-queue-operations": (v2_queue_operations, "CLI 2.1.x: queue-operation "
        "enqueue/dequeue/remove/popAll lines (no uuid), a prompt queued mid-turn and one "
        "removed before it was sent (DROPPED: never resumed)."),
    "v21-api-error-retries": (v21_api_error_retries, "CLI 2.1.x: system api_error retry "
        "records (retryAttempt/retryInMs/maxRetries) in the chain, once before a success, "
        "once before the synthetic isApiErrorMessage assistant of a failed turn."),
    "v1-api-error-message": (v1_api_error_message, "CLI 1.0.x: a failed call as an "
        "isApiErrorMessage assistant (model <synthetic>) and no retry records."),
    "v1-tool-result-string": (v1_tool_result_string, "CLI 1.0.x: toolUseResult as a "
        "string (an error, a rejected Write), then the '[Request interrupted by user for "
        "tool use]' user line."),
    "v2-split-response": (v2_split_response, "CLI 2.1.x: API responses split over several "
        "assistant lines sharing message.id (thinking, text, parallel tool_use), each "
        "result below its own call's line (siblings off the chain), the turn going on "
        "below the last-written one; two permission-rule denials, the older one the "
        "first call of a response whose result was written last."),
    "several-roots": (several_roots, "CLI 2.0.x: two parentUuid:null roots in one file "
        "and a rewound branch; only the last line's chain is resumed (ELSEWHERE prompts "
        "are not)."),
    "v1-resumed-two-sessions": (v1_resumed_two_sessions, "CLI 1.0.x `--resume`: the new "
        "file carries the old session's lines (old sessionId, 1.0.30) then its own "
        "(new sessionId, 1.0.51)."),
    "torn-last-line": (torn_last_line, "CLI 2.1.x killed mid-write: the last line is cut "
        "off mid-JSON, with no newline."),
    "redacted": (redacted, "A transcript passed through a redactor: `[REDACTED]` in "
        "prompts, tool input, results, thinking and signature, cwd."),
}


def session_of(shape: str) -> str:
    return uid("session", shape)


def write_all(root: Path = SHAPES_DIR) -> None:
    lines = ["# Transcript shapes the Claude Code CLI has written", "",
             "Hand-written from the public JSONL format by `tests/stores/shapes.py` (not "
             "copied from any real transcript); each directory is laid out as the CLI lays "
             "out a project dir. Prompts the resume must carry start with `P<n>`; "
             "`OLD`, `ELSEWHERE` and `DROPPED` ones must not be sent.", ""]
    for name, (build, what) in SHAPES.items():
        for rel, text in build(session_of(name)).items():
            path = root / name / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        lines.append(f"- `{name}/`: {what}")
    (root / "README.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else SHAPES_DIR)
