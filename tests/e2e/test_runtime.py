"""Runtime.run end to end: the real SDK and CLI against the fake, one step at a time."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import anyio
import pytest
from peek import assistant_stored

from flower import AgentSpec, Resilience, Runtime, texts
from flower.testing import FakeServer, cut, fault, match, reply, tool_use

STEP_TIMEOUT = 60

SLEEPER = 'python3 -c "import time; time.sleep(30)"'  # the CLI refuses a bare `sleep N`
QUICK = Resilience(base_delay=0.05, max_delay=0.2, probe_interval=0.2, probe_timeout=1.0,
                   max_offline_wait=60.0)


def spec(**kw) -> AgentSpec:
    kw.setdefault("allowed_tools", ["Bash", "Read", "Write"])
    kw.setdefault("permission_mode", "bypassPermissions")
    return AgentSpec(name=kw.pop("name", "worker"), instructions="test agent", **kw)


def manifest(rt: Runtime) -> list[dict]:
    return json.loads(rt.manifest_path.read_text(encoding="utf-8"))


async def run(rt: Runtime, prompt: str, **kw):
    with anyio.fail_after(STEP_TIMEOUT):
        return await rt.run(spec(), prompt, **kw)


async def one_step(workspace: Path, run_dir: Path, prompt: str, **kw):
    """A fresh Runtime, one step, closed again; returns (result, runtime)."""
    rt = Runtime(workspace=workspace, run_dir=run_dir, resilience=QUICK)
    try:
        return await run(rt, prompt, **kw), rt
    finally:
        rt.close()


async def test_successful_step(fake: FakeServer, workspace: Path, run_dir: Path,
                               cli_env: dict[str, str]) -> None:
    fake.script(reply("checking", tool_use("Bash", {"command": "echo hi"})), "all done")
    rt = Runtime(workspace=workspace, run_dir=run_dir, resilience=QUICK)
    seen: list[str] = []
    rt.on_session = seen.append
    try:
        r = await run(rt, "do the thing", step_name="第一步")
    finally:
        rt.close()
    assert r.ok and r.error is None and r.errors == []
    assert r.step == "第一步" and r.attempts == 1 and not r.resumed
    assert r.text == "checking\nall done"
    assert r.num_turns == 2 and r.cost_usd > 0
    assert r.session_id and seen == [r.session_id]  # on_session fired once, right away
    assert r.context > 0 and r.duration_s > 0 and r.ended_at >= r.started_at
    rows = manifest(rt)
    assert len(rows) == 1
    row = rows[0]
    assert row["run"] == rt.run_id and row["step"] == "第一步" and row["session_id"] == r.session_id
    assert set(row) >= {"step", "session_id", "ok", "cost_usd", "num_turns", "text", "error",
                        "started_at", "ended_at", "attempts", "errors", "resumed", "retired",
                        "context", "duration_s", "run"}
    rt2 = Runtime(workspace=workspace, run_dir=run_dir)
    try:
        assert rt2.has_session(r.session_id) and not rt2.has_session("nope")
        assert rt2.context_of(r.session_id) > 0
    finally:
        rt2.close()


async def test_outage_mid_step_resumes_same_session(fake: FakeServer, workspace: Path,
                                                     run_dir: Path,
                                                     cli_env: dict[str, str]) -> None:
    """The network dies mid-step and stays down until flower has said it waits, then 3 s
    more (15 of its probes): flower waits, resumes the same session with the resume prompt,
    and the model never sees the synthetic error. The outage ends on flower's notice, not
    on a clock, so a slow CLI exit cannot make it end before flower looked."""

    def go_dark(req):
        fake.outage()  # until seen() below has the unreachable notice
        return cut(after=0)

    fake.script(reply("step one", tool_use("Bash", {"command": "echo part-1"})), go_dark)
    fake.route(match.last_user_contains("从中断处接着做"), "resumed and finished")
    notices: list[str] = []

    def seen(ev) -> None:
        if ev.kind != "retry":
            return
        notices.append(ev.text)
        # flower's "host:port unreachable, waiting for it" notice (NET_UNREACHABLE, an
        # error's words, also says 不可达: it must not end the outage)
        if texts.OFFLINE_WAIT_SECONDS.split("{seconds}")[0].split("{port}")[-1] in ev.text:
            fake.outage(3)  # still down while flower probes, then back on the same port

    rt = Runtime(workspace=workspace, run_dir=run_dir, resilience=QUICK)
    try:
        with anyio.fail_after(60):
            r = await rt.run(spec(), "long task", on_event=seen)
    finally:
        rt.close()
    assert r.ok, r.error
    assert r.attempts == 2 and r.resumed
    assert r.errors and any("API Error" in e or "Connection" in e for e in r.errors)
    assert "API Error" not in r.text and "resumed and finished" in r.text
    sid = r.session_id
    resumed = fake.last_request()
    assert resumed.session_id == sid  # the SAME session
    assert "从中断处接着做" in resumed.last_user_text()
    assert "API Error" not in resumed.text() and "part-1" in resumed.text()
    assert sum("不可达" in n for n in notices) == 1  # one notice each way, no flood
    assert sum(n.endswith("恢复,继续") for n in notices) == 1


async def test_401_is_fatal_no_retry(fake: FakeServer, workspace: Path, run_dir: Path,
                                     cli_env: dict[str, str]) -> None:
    fake.script(fault(401), fault(401), fault(401))
    r, _rt = await one_step(workspace, run_dir, "hello")
    assert not r.ok and r.attempts == 1
    assert "API key" in r.error or "401" in r.error
    assert len(fake.message_requests()) == 1


async def test_401_circuit_breaker_stops_cli_retries(fake: FakeServer, workspace: Path,
                                                     run_dir: Path, cli_env: dict[str, str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """With the CLI allowed to retry, flower still stops at the first auth failure instead of
    letting the CLI burn minutes retrying a bad key."""
    monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "10")
    for _ in range(11):
        fake.script(fault(401))
    r, _rt = await one_step(workspace, run_dir, "hello")
    assert not r.ok and r.attempts == 1
    assert len(fake.message_requests()) <= 2


async def test_529_then_success_one_retry(fake: FakeServer, workspace: Path, run_dir: Path,
                                          cli_env: dict[str, str]) -> None:
    fake.script(fault(529), "recovered")
    r, rt = await one_step(workspace, run_dir, "hello")
    assert r.ok and r.attempts == 2
    assert r.text == "recovered"
    assert any("529" in e for e in r.errors)
    assert len(manifest(rt)) == 1


async def test_interrupt_from_another_thread_resumes_with_words(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    fake.script(reply("working", tool_use("Bash", {"command": "echo first"})), "carrying on")
    fake.route(match.last_user_contains("改成用中文回答"), "好的,已改用中文")
    rt = Runtime(workspace=workspace, run_dir=run_dir, resilience=QUICK)
    fired = []

    def on_event(ev) -> None:
        if ev.kind == "tool_call" and not fired:
            fired.append(1)
            t = threading.Thread(target=rt.interrupt, args=("改成用中文回答",))
            t.start()
            t.join()

    try:
        r = await run(rt, "start", on_event=on_event)
    finally:
        rt.close()
    assert r.ok and r.resumed and r.attempts == 1
    assert "已改用中文" in r.text
    last = fake.last_request()
    assert last.session_id == r.session_id
    assert "改成用中文回答" in last.last_user_text()
    assert Runtime.INTERRUPT_NOTE in last.last_user_text()


async def test_corrupt_manifest_is_kept_aside(fake: FakeServer, workspace: Path, run_dir: Path,
                                              cli_env: dict[str, str],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    garbage = b'[{"step": "old", "run": "x"'  # truncated JSON
    (run_dir / "manifest.json").write_bytes(garbage)
    fake.script("ok")
    r, rt = await one_step(workspace, run_dir, "hello")
    assert r.ok
    aside = list(run_dir.glob("manifest.json.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == garbage
    assert [row["step"] for row in manifest(rt)] == ["worker"]
    err = capsys.readouterr().err
    assert err.count("unreadable") == 1 and str(aside[0]) in err  # said once, names the file


async def test_no_token_leaks(fake: FakeServer, workspace: Path, run_dir: Path,
                              cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                              caplog: pytest.LogCaptureFixture) -> None:
    secret = "sk-ant-supersecret-0123456789abcdef"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    fake.script(fault(401, message="bad key"))
    events: list[str] = []
    rt = Runtime(workspace=workspace, run_dir=run_dir, resilience=QUICK)
    try:
        r = await run(rt, "hello", on_event=lambda ev: events.append(repr(ev.payload) + str(ev)))
    finally:
        rt.close()
    assert not r.ok
    assert fake.last_request().headers["x-api-key"] == secret  # it really was used
    assert secret not in rt.manifest_path.read_text(encoding="utf-8")
    assert not any(secret in e for e in events)
    assert secret not in caplog.text


async def test_a_token_the_model_echoes_is_masked_in_events_and_manifest(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Even when the key shows up in what the model says and in a tool's output, the UI
    events and the run book only ever carry its mask."""
    secret = "sk-ant-supersecret-0123456789abcdef"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    fake.script(reply(f"the key is {secret}", tool_use("Bash", {"command": f"echo {secret}"})),
                f"done with {secret}")
    events: list[str] = []
    rt = Runtime(workspace=workspace, run_dir=run_dir, resilience=QUICK)
    try:
        r = await run(rt, "hello", on_event=lambda ev: events.append(repr(ev.payload) + str(ev)))
    finally:
        rt.close()
    assert r.ok and secret in r.text  # the model really said it ...
    assert fake.last_request().text().count(secret) >= 2  # ... and the tool printed it
    assert any("sk-a…" in e for e in events)  # the events carried the mask instead
    assert not any(secret in e for e in events)
    manifest_text = rt.manifest_path.read_text(encoding="utf-8")
    assert secret not in manifest_text and "sk-a" in manifest_text  # masked, not dropped


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return "?"


def _processes_in(directory: Path) -> list[int]:
    """PIDs whose working directory is ``directory`` (Linux /proc)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            try:
                if Path(os.readlink(proc / "cwd")) == directory:
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


async def test_cancelled_step_is_recorded_and_leaves_no_cli_behind(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    """Cancelling a step in the middle of a long tool call ends it promptly (not after the
    SDK's 5 s grace wait) and leaves neither the CLI nor its tool running."""
    started = threading.Event()

    def slow(req):
        started.set()
        return reply("working", tool_use("Bash", {"command": SLEEPER}))

    fake.script(slow)
    rt = Runtime(workspace=workspace, run_dir=run_dir, resilience=QUICK)
    cancelled_at: list[float] = []
    try:
        with anyio.move_on_after(30) as scope:
            async with anyio.create_task_group() as tg:
                async def cancel_when_busy() -> None:
                    await anyio.to_thread.run_sync(started.wait, 20)
                    # the tool is running once the CLI has a process in the workspace that
                    # is not the CLI itself (bounded wait on the condition)
                    with anyio.fail_after(10):
                        while not any("time.sleep" in _cmdline(pid)
                                      for pid in _processes_in(workspace.resolve())):
                            await anyio.sleep(0.05)
                    cancelled_at.append(time.monotonic())
                    tg.cancel_scope.cancel()

                tg.start_soon(cancel_when_busy)
                await rt.run(spec(), "start")
        took = time.monotonic() - cancelled_at[0]
        assert not scope.cancelled_caught  # cancelled by the task group, well within 30 s
    finally:
        rt.close()
    assert took < 2.5, f"cancel took {took:.1f} s"
    (row,) = manifest(rt)
    assert row["error"] == "aborted (CancelledError)" and not row["ok"], row
    # the CLI and its tool were shut down (the tool's exit may trail the CLI's by a moment)
    deadline = time.monotonic() + 1.0
    while _processes_in(workspace.resolve()) and time.monotonic() < deadline:
        threading.Event().wait(0.05)
    left = {pid: _cmdline(pid) for pid in _processes_in(workspace.resolve())}
    assert left == {}


async def test_step_cancelled_as_the_words_arrive_keeps_them_in_the_store(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    """Cancelled the moment the model's words reach flower — before the CLI has mirrored
    them — the step still leaves them in sessions.db: a resume must not lose a turn the
    model had already answered (the CLI writes them out as it exits)."""
    fake.script(reply("说到一半的话", tool_use("Bash", {"command": SLEEPER})))
    rt = Runtime(workspace=workspace, run_dir=run_dir, resilience=QUICK)
    sessions: list[str] = []
    try:
        with anyio.fail_after(STEP_TIMEOUT):
            with anyio.CancelScope() as scope:
                def on_event(ev) -> None:
                    if ev.kind == "text" and "说到一半的话" in ev.text:
                        scope.cancel()

                rt.on_session = sessions.append
                await rt.run(spec(), "start", on_event=on_event)
    finally:
        rt.close()
    assert scope.cancelled_caught and sessions
    assert assistant_stored(run_dir, workspace, sessions[-1], saying="说到一半的话")


async def test_words_arriving_as_the_turn_ends_still_reach_the_model(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    """An interrupt that lands after the turn already finished is not lost: the same session
    is resumed with the human's words."""
    fake.script("first answer")
    fake.route(match.last_user_contains("顺便加上测试"), "好,加上了")
    rt = Runtime(workspace=workspace, run_dir=run_dir, resilience=QUICK)

    def on_event(ev) -> None:
        if ev.kind == "result" and ev.text == "success" and len(fake.message_requests()) == 1:
            rt.interrupt("顺便加上测试")

    try:
        r = await run(rt, "start", on_event=on_event)
    finally:
        rt.close()
    assert r.ok and r.resumed and r.attempts == 1
    assert r.text == "好,加上了"
    first, second = fake.message_requests()
    assert second.session_id == first.session_id == r.session_id


async def test_a_failed_mirror_reaches_the_user_and_the_result(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    """When the store refuses an append, the SDK drops the batch and says so once
    (mirror_error): flower turns it into a visible warning and a StepResult error."""
    from flower import texts

    fake.script(reply("checking", tool_use("Bash", {"command": "echo hi"})), "all done")
    rt = Runtime(workspace=workspace, run_dir=run_dir, resilience=QUICK)

    async def refuse(key, entries):
        raise OSError(28, "No space left on device")

    rt.store.append = refuse  # the store itself fails; the SDK and CLI are real
    events = []
    try:
        r = await run(rt, "hello", on_event=events.append)
    finally:
        rt.close()
    assert r.ok  # the step itself goes on
    warned = [e for e in events if e.kind == "error" and e.payload.get("mirror_error")]
    assert warned, [e.kind for e in events]
    assert "No space left on device" in warned[0].text
    assert warned[0].text.startswith(texts.MIRROR_FAILED.split("(")[0])
    assert warned[0].text in r.errors


async def test_words_said_before_a_step_reach_its_first_prompt(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    """Words sent while no step runs (before the first, between two) are not stale: they go
    with the next step's first prompt, under the label."""
    from flower import texts

    label = texts.HUMAN_WORDS_PENDING.split("{")[0].strip()
    fake.script("one", "two")
    rt = Runtime(workspace=workspace, run_dir=run_dir, resilience=QUICK)
    try:
        rt.interrupt("先读 README")  # before any session id exists
        r1 = await run(rt, "第一步", step_name="一")
        rt.interrupt("第二步用中文")  # between two steps
        r2 = await run(rt, "第二步", step_name="二")
    finally:
        rt.close()
    assert r1.ok and r2.ok and r1.attempts == r2.attempts == 1
    first, second = fake.message_requests()
    assert first.session_id == r1.session_id and second.session_id == r2.session_id
    assert "第一步" in first.last_user_text() and "先读 README" in first.last_user_text()
    assert label in first.last_user_text()
    assert "第二步用中文" in second.last_user_text() and "先读 README" not in second.text()


async def test_an_interrupt_cuts_the_offline_wait_short(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    """The network is down and flower probes only every 30 s: a human's words end the wait
    at once and go with the resume."""

    def go_dark(req):
        fake.outage()  # until recover()
        return cut(after=0)

    fake.script(reply("step one", tool_use("Bash", {"command": "echo part-1"})), go_dark)
    fake.route(match.last_user_contains("换个做法"), "按新说法做完了")
    rt = Runtime(workspace=workspace, run_dir=run_dir, resilience=Resilience(
        base_delay=0.05, max_delay=0.2, probe_interval=30, probe_timeout=1.0,
        max_offline_wait=120))
    said: list[float] = []

    def on_event(ev) -> None:
        if ev.kind == "retry" and ev.payload.get("source") == "network" and not said:
            said.append(time.monotonic())
            rt.interrupt("换个做法")
            fake.recover()

    try:
        with anyio.fail_after(60):
            r = await rt.run(spec(), "long task", on_event=on_event)
    finally:
        rt.close()
    assert said and time.monotonic() - said[0] < 15  # not the 30 s probe interval
    assert r.ok, r.error
    last = fake.last_request()
    assert last.session_id == r.session_id and "换个做法" in last.last_user_text()
    assert "按新说法做完了" in r.text


async def test_an_interrupt_cuts_the_retry_backoff_short(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str]) -> None:
    fake.script(reply("step one", tool_use("Bash", {"command": "echo part-1"})), fault(529))
    fake.route(match.last_user_contains("别等了"), "好,接着做完")
    rt = Runtime(workspace=workspace, run_dir=run_dir, resilience=Resilience(
        base_delay=40, max_delay=40, probe_interval=0.2, probe_timeout=1.0))
    said: list[float] = []

    def on_event(ev) -> None:
        if ev.kind == "retry" and ev.payload.get("source") == "failure" and not said:
            said.append(time.monotonic())
            rt.interrupt("别等了")

    try:
        with anyio.fail_after(60):
            r = await rt.run(spec(), "task", on_event=on_event)
    finally:
        rt.close()
    assert said and time.monotonic() - said[0] < 15  # not the 30-50 s back-off
    assert r.ok and r.attempts == 2, r.error
    last = fake.last_request()
    assert last.session_id == r.session_id and "别等了" in last.last_user_text()


async def test_dotenv_credentials_reach_the_agent_not_os_environ(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A key in ./.env authenticates the CLI subprocess, but Runtime() leaves the process
    environment exactly as the user set it."""
    key = "sk-ant-from-dotenv-0123456789abcdef"
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    (workspace / ".env").write_text(f"ANTHROPIC_API_KEY={key}\nMY_SERVICE_TOKEN=tok-123456789\n",
                                    encoding="utf-8")
    before = dict(os.environ)
    fake.script(reply("checking", tool_use("Bash", {"command": "echo hi"})), "done")
    rt = Runtime(workspace=workspace, run_dir=run_dir, resilience=QUICK)
    try:
        assert dict(os.environ) == before
        r = await run(rt, "hello")
    finally:
        rt.close()
    assert dict(os.environ) == before
    assert r.ok, r.error
    assert {q.headers["x-api-key"] for q in fake.message_requests()} == {key}


SPEC_SECRET = 'pa"ss\\wörd-0123456789-xyz'  # a quote, a backslash and non-ASCII


async def test_spec_env_secrets_are_masked_even_json_escaped(
        fake: FakeServer, workspace: Path, run_dir: Path, cli_env: dict[str, str],
        caplog: pytest.LogCaptureFixture) -> None:
    """A secret in AgentSpec.env is masked in events and the run book — also where it shows
    up JSON-escaped (the model quoting a config file, the manifest's own encoding)."""
    forms = {SPEC_SECRET, json.dumps(SPEC_SECRET)[1:-1],
             json.dumps(SPEC_SECRET, ensure_ascii=False)[1:-1]}
    quoted = json.dumps({"token": SPEC_SECRET})
    fake.script(reply(f"raw {SPEC_SECRET}", tool_use("Bash", {"command": "echo hi"})),
                f"as json {quoted}")
    events: list[str] = []
    rt = Runtime(workspace=workspace, run_dir=run_dir, resilience=QUICK)
    try:
        with anyio.fail_after(STEP_TIMEOUT):
            r = await rt.run(spec(env={"MY_SERVICE_TOKEN": SPEC_SECRET}), "hello",
                             on_event=lambda ev: events.append(ev.text + json.dumps(
                                 ev.payload, default=str, ensure_ascii=False)))
    finally:
        rt.close()
    assert r.ok and SPEC_SECRET in r.text  # the model really said it
    assert events and not any(f in e for e in events for f in forms)
    book = rt.manifest_path.read_text(encoding="utf-8")
    assert not any(f in book for f in forms)
    (row,) = json.loads(book)  # still valid JSON after masking
    assert "raw pa" in row["text"]
    assert not any(f in caplog.text for f in forms)
