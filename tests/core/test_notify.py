"""The ``--notify`` runner: the user's command hears of questions, caps and the end of a run
in order, with its four ``FLOWER_*`` variables and no secret, and can never hold the run up —
a failing or hanging command costs one warning line, and exit waits for it only briefly."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from flower import texts
from flower.core.events import Event
from flower.core.notify import Notifier, notify_command, outcome

# appends one line per notification: event, run, workspace, text
RECORD = 'printf "%s|%s|%s|%s\\n" "$FLOWER_EVENT" "$FLOWER_RUN" "$FLOWER_WORKSPACE" ' \
         '"$FLOWER_TEXT" >> "{path}"'


def _lines(path: Path) -> list[list[str]]:
    if not path.exists():
        return []
    return [line.split("|", 3) for line in path.read_text().splitlines()]


def _notifier(command: str, tmp_path: Path, warnings: list[str], **kw: object) -> Notifier:
    return Notifier(command, workspace=tmp_path, run="r1", warn=warnings.append,
                    secrets=kw.pop("secrets", ()), **kw)  # type: ignore[arg-type]


def test_notifications_arrive_in_order_with_their_environment(tmp_path: Path) -> None:
    out, warnings = tmp_path / "got.txt", []
    n = _notifier(RECORD.format(path=out), tmp_path, warnings)
    for i, event in enumerate(["ask", "budget", "ask", "time", "done"]):
        n.send(event, f"第 {i} 条")
    n.close()
    assert warnings == []
    assert _lines(out) == [[e, "r1", str(tmp_path), f"第 {i} 条"] for i, e in
                           enumerate(["ask", "budget", "ask", "time", "done"])]


def test_the_text_is_masked_and_the_process_env_is_passed_as_given(tmp_path: Path) -> None:
    out, warnings = tmp_path / "env.txt", []
    secret = "s3cr3t-value-from-a-dotenv-file"
    n = _notifier(f'env > "{out}"', tmp_path, warnings, secrets=[secret],
                  environ={"PATH": os.environ["PATH"], "KEPT": "yes"})
    n.send("ask", f"用这个吗:{secret} 还有 sk-ant-api03-abcdefghijklmnop")
    n.close()
    env = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    assert env["KEPT"] == "yes" and env["FLOWER_EVENT"] == "ask"
    assert secret not in out.read_text()
    assert "sk-ant-api03-abcdefghijklmnop" not in out.read_text()  # a key flower never knew
    assert env["FLOWER_TEXT"].startswith("用这个吗:s3cr")


def test_by_default_secrets_come_from_the_dotenv_files_too(tmp_path: Path, home: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    secret = "dotenv-only-token-0123456789"
    (tmp_path / "my.env").write_text(f"WEBHOOK_TOKEN={secret}\n")
    monkeypatch.setenv("FLOWER_ENV", str(tmp_path / "my.env"))
    out, warnings = tmp_path / "env.txt", []
    n = Notifier(f'env > "{out}"', workspace=tmp_path, run="r", warn=warnings.append)
    n.send("done", f"token {secret}")
    n.close()
    assert "FLOWER_TEXT=token " in out.read_text()
    assert secret not in out.read_text()  # neither in FLOWER_TEXT nor inherited


def test_a_failing_command_costs_one_warning_line_and_later_ones_still_go(
        tmp_path: Path) -> None:
    out, warnings = tmp_path / "got.txt", []
    cmd = f'[ "$FLOWER_EVENT" = ask ] && {{ echo "no route to host" >&2; exit 3; }}; ' \
          f'{RECORD.format(path=out)}'
    n = _notifier(cmd, tmp_path, warnings)
    n.send("ask", "q")
    n.send("done", "end")
    n.close()
    assert len(warnings) == 1
    assert warnings[0] == texts.NOTIFY_FAILED.format(
        event="ask", why=texts.NOTIFY_EXIT.format(code=3, stderr="no route to host"))
    assert [line[0] for line in _lines(out)] == ["done"]


def test_a_hanging_command_is_killed_with_its_process_group(tmp_path: Path) -> None:
    pidfile, warnings = tmp_path / "pid", []
    # the shell waits on a child of its own: killing only the shell would leave it behind
    n = _notifier(f'sleep 60 & echo $! > "{pidfile}"; wait', tmp_path, warnings,
                  kill_after_s=2.0)
    began = time.monotonic()
    n.send("ask", "q")
    assert time.monotonic() - began < 1.0  # send never waits for the command
    n.close()
    assert warnings == [texts.NOTIFY_HUNG.format(event="ask", s=2.0)]
    assert _dies(int(pidfile.read_text()))


def _dies(pid: int, within_s: float = 10.0) -> bool:
    """SIGKILL is delivered asynchronously: the grandchild is gone a moment after killpg."""
    deadline = time.monotonic() + within_s
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie waiting for init is dead


def test_close_is_bounded_even_when_every_command_hangs(tmp_path: Path) -> None:
    warnings: list[str] = []
    n = _notifier("sleep 60", tmp_path, warnings, kill_after_s=0.6, grace_s=0.2)
    for event in ("ask", "ask", "ask", "done"):
        n.send(event, "x")
    began = time.monotonic()
    n.close()
    assert time.monotonic() - began < 0.6 + 0.2 + 1.0  # kill + grace + a loaded machine
    assert warnings == [texts.NOTIFY_HUNG.format(event="ask", s=0.6),
                        texts.NOTIFY_HUNG.format(event="done", s=0.6),  # tried, then killed
                        texts.NOTIFY_DROPPED.format(n=2)]


def test_the_end_is_delivered_behind_a_hanging_question(tmp_path: Path) -> None:
    out, warnings = tmp_path / "got.txt", []
    cmd = f'[ "$FLOWER_EVENT" = ask ] && sleep 60; {RECORD.format(path=out)}'
    n = _notifier(cmd, tmp_path, warnings, kill_after_s=2.0, grace_s=1.8)
    for event in ("ask", "ask", "ask", "done"):
        n.send(event, "x")
    n.close()
    assert [line[0] for line in _lines(out)] == ["done"]
    assert warnings == [texts.NOTIFY_HUNG.format(event="ask", s=2.0),
                        texts.NOTIFY_DROPPED.format(n=2)]  # stale: the run is over


def test_close_waits_for_the_closing_notification(tmp_path: Path) -> None:
    out, warnings = tmp_path / "got.txt", []
    n = _notifier(f"sleep 0.3; {RECORD.format(path=out)}", tmp_path, warnings)
    n.send("done", "总花费 $0.0100")
    n.close()  # the process is about to exit: the line must be there already
    assert [line[0] for line in _lines(out)] == ["done"]


def test_close_without_any_notification_returns_at_once(tmp_path: Path) -> None:
    n = _notifier("exit 1", tmp_path, [])
    began = time.monotonic()
    n.close()
    assert time.monotonic() - began < 0.1


def test_a_missing_workspace_costs_one_warning(tmp_path: Path) -> None:
    warnings: list[str] = []
    n = Notifier("true", workspace=tmp_path / "gone", run="r", warn=warnings.append,
                 secrets=())
    n.send("done", "x")
    n.close()
    assert len(warnings) == 1 and warnings[0].startswith(texts.NOTIFY_FAILED.split("{")[0])


# --- which events notify ------------------------------------------------------------------

def _asked(question: str, state: str = "asked", **extra: object) -> Event:
    return Event("ask", text=question, payload={"id": "q1", "state": state, **extra})


def test_see_notifies_a_waiting_question_and_a_cap_once_each(tmp_path: Path) -> None:
    sent: list[tuple[str, str]] = []
    n = _notifier("true", tmp_path, [])
    n.send = lambda event, text: sent.append((event, text))  # type: ignore[method-assign]
    cap_line = "预算 $20.00 已用完(已花 $20.31)— 再加多少?"
    for ev in [
        Event("text", text="hello"),
        _asked("要支持表格吗?"),
        _asked("要支持表格吗?", state="answered"),  # settled: nobody is needed any more
        _asked("我顺便说一句", kind="mail"),  # the person's own remark
        Event("cap", text=cap_line, payload={"which": "budget", "spent": 20.31}),
        _asked(cap_line),  # the cap's own question: already told as "budget"
        Event("cap", text="时间到了", payload={"which": "time"}),
        _asked("下一个问题"),
    ]:
        n.see(ev)
    assert sent == [("ask", "要支持表格吗?"), ("budget", cap_line), ("time", "时间到了"),
                    ("ask", "下一个问题")]


def test_see_never_raises(tmp_path: Path) -> None:
    warnings: list[str] = []
    n = _notifier("true", tmp_path, warnings)
    n.see(Event("ask", text=None, payload={"state": "asked"}))  # type: ignore[arg-type]
    assert len(warnings) == 1


@pytest.mark.parametrize(("kw", "event"), [
    ({"ok": True}, "done"),
    ({"ok": False, "why": "rc=1"}, "failed"),
    ({"ok": False, "interrupted": True}, "stopped"),
    ({"ok": False, "why": "budget"}, "stopped"),
    ({"ok": False, "why": "time"}, "stopped"),
    ({"ok": False, "why": "timeout talking to the API"}, "failed"),
])
def test_outcome(kw: dict, event: str) -> None:
    assert outcome(**kw) == event


def test_the_command_comes_from_the_flag_the_env_or_the_users_own_dotenv(
        tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from flower.config import user_env_path

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FLOWER_NOTIFY", raising=False)
    assert notify_command(None) is None
    # a project .env is writable by every worker: a command in it is never run
    (tmp_path / ".env").write_text("FLOWER_NOTIFY=touch planted\n")
    assert notify_command(None) is None
    user_env_path().parent.mkdir(parents=True, exist_ok=True)
    user_env_path().write_text("FLOWER_NOTIFY=notify-send flower\n")
    assert notify_command(None) == "notify-send flower"
    assert "FLOWER_NOTIFY" not in os.environ  # read, not exported
    monkeypatch.setenv("FLOWER_NOTIFY", "from-env")
    assert notify_command(None) == "from-env"
    assert notify_command("from-flag") == "from-flag"
