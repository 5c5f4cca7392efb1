"""The credential screens (reference-cli-workflow §2.7/§2.8, reference-ops §4.5): the setup
screen, the two gates before a run, the probe against the fake API, re-entry after a
credential failure, ``flower setup``'s body and the ``-v`` description."""

from __future__ import annotations

import builtins
import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from flower import config, texts
from flower.cli.tui import setup_screen
from flower.cli.tui.setup_screen import (
    configure,
    describe_config,
    ensure_credentials,
    looks_like_credential_error,
    normalize_base_url,
    read_stdin_line,
    reconfigure_after_failure,
    run_setup,
)
from flower.core import env as envmod
from flower.testing import FakeServer, fault

KEY = "sk-ant-api03-SECRETSECRETSECRET-0123456789"
KEY2 = "sk-ant-api03-OTHERKEYOTHERKEY-9876543210"
TOKEN = "gw-token-SECRETSECRETSECRET-abcdef"
TOKEN2 = "gw-token-ANOTHERANOTHER-fedcba"
MODEL_KEYS = ("ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL")


class Answers:
    """A fake ``read_line``: hands out the scripted answers in order, records the prompts,
    and fails the test if the screen asks more than was scripted."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        assert self.answers, "the screen asked more questions than the test scripted"
        return self.answers.pop(0)

    @property
    def used(self) -> int:
        return len(self.prompts)


@pytest.fixture
def sandbox(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Scratch HOME/XDG/cwd, no source-repo .env, no proxies, fast probe; ``os.environ``
    restored afterwards (the screen writes to it directly). Yields the user .env path."""
    cwd = tmp_path / "project"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(config, "source_env_path", lambda: tmp_path / "repo" / ".env")
    monkeypatch.setattr(setup_screen, "PROBE_TIMEOUT", 5.0)
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy",
                "ALL_PROXY", "FLOWER_NO_PROBE"):
        monkeypatch.delenv(var, raising=False)
    saved = dict(os.environ)
    yield home / ".config" / "flower" / ".env"
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture
def server(sandbox) -> Iterator[FakeServer]:
    with FakeServer(auxiliary=False) as fake:  # these tests script the probe's answer
        yield fake


def new_console() -> Console:
    return Console(file=io.StringIO(), width=1000, color_system=None)  # no wrapping


def out(console: Console) -> str:
    return console.file.getvalue()  # type: ignore[attr-defined]


def read_env(path: Path) -> dict[str, str]:
    return dict(envmod.parse_dotenv(path.read_text(encoding="utf-8")))


def put(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --- the screen: what gets written ----------------------------------------------------------

def test_api_key_url_and_model_are_written_0600(sandbox):
    con = new_console()
    ans = Answers(KEY, "https://gw.example.com/v1/", "claude-opus-5[1m]", "")
    assert configure(con, reason="还没配过凭证。", read_line=ans) is True
    assert ans.used == 4
    assert stat.S_IMODE(sandbox.stat().st_mode) == 0o600
    assert sandbox.read_text(encoding="utf-8").startswith(texts.USER_ENV_HEADER)
    assert read_env(sandbox) == {
        "ANTHROPIC_API_KEY": KEY,
        "ANTHROPIC_BASE_URL": "https://gw.example.com",
        **dict.fromkeys(MODEL_KEYS, "claude-opus-5[1m]"),
    }
    # loaded at once
    assert os.environ["ANTHROPIC_API_KEY"] == KEY
    assert os.environ["ANTHROPIC_BASE_URL"] == "https://gw.example.com"
    assert all(os.environ[k] == "claude-opus-5[1m]" for k in MODEL_KEYS)
    text = out(con)
    assert text.startswith("== 配置 flower ====")
    assert "还没配过凭证。" in text
    assert str(sandbox) in text  # where it will save
    assert texts.SETUP_URL_STRIPPED.format(tail="/v1").strip() in text  # and says so
    assert f"+ 存好了:{sandbox}" in text
    assert envmod.mask(KEY) in text


def test_gateway_token_goes_to_auth_token_and_blanks_write_nothing_else(sandbox):
    con = new_console()
    assert configure(con, reason="r", read_line=Answers(TOKEN, "", "", "")) is True
    assert read_env(sandbox) == {"ANTHROPIC_AUTH_TOKEN": TOKEN}
    assert os.environ["ANTHROPIC_AUTH_TOKEN"] == TOKEN
    assert "ANTHROPIC_API_KEY" not in os.environ


@pytest.mark.parametrize(("typed", "root", "tail"), [
    ("https://gw.example.com", "https://gw.example.com", ""),
    ("https://gw.example.com/", "https://gw.example.com", ""),
    ("https://gw.example.com/v1", "https://gw.example.com", "/v1"),
    ("https://gw.example.com/v1/", "https://gw.example.com", "/v1"),
    ("https://gw.example.com/V1", "https://gw.example.com", "/V1"),
    ("https://gw.example.com/v1/messages", "https://gw.example.com", "/v1/messages"),
    ("https://gw.example.com/api/v1", "https://gw.example.com/api", "/v1"),
    ("  http://127.0.0.1:8080/v1  ", "http://127.0.0.1:8080", "/v1"),
    ("https://gw.example.com/v10", "https://gw.example.com/v10", ""),
])
def test_normalize_base_url(typed, root, tail):
    assert normalize_base_url(typed) == (root, tail)


def test_url_without_scheme_is_flagged_but_saved(sandbox):
    con = new_console()
    assert configure(con, reason="r", read_line=Answers(TOKEN, "gw.example.com", "", ""))
    assert read_env(sandbox)["ANTHROPIC_BASE_URL"] == "gw.example.com"
    assert "http://" in out(con)


def test_pasted_quotes_and_whole_env_line_are_unwrapped(sandbox):
    assert configure(new_console(), reason="r",
                     read_line=Answers(f"export ANTHROPIC_API_KEY='{KEY}'", '"https://x.io"', "",
                                       ""))
    assert read_env(sandbox) == {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": "https://x.io"}


def test_blank_token_cancels_and_writes_nothing(sandbox):
    con = new_console()
    ans = Answers("   ")
    assert configure(con, reason="r", read_line=ans) is False
    assert ans.used == 1  # no further questions
    assert not sandbox.exists()
    assert "没给 token,取消。" in out(con)
    assert "ANTHROPIC_API_KEY" not in os.environ and "ANTHROPIC_AUTH_TOKEN" not in os.environ


def test_blank_token_leaves_existing_file_byte_for_byte(sandbox):
    original = f"# mine\nANTHROPIC_API_KEY = '{KEY}'\nFOO=bar # note\n".encode()
    put(sandbox, "")
    sandbox.write_bytes(original)
    sandbox.chmod(0o640)
    mtime = sandbox.stat().st_mtime_ns
    assert configure(new_console(), reason="r", read_line=Answers("")) is False
    assert sandbox.read_bytes() == original
    assert stat.S_IMODE(sandbox.stat().st_mode) == 0o640
    assert sandbox.stat().st_mtime_ns == mtime


def test_ctrl_c_cancels_and_writes_nothing(sandbox):
    def interrupted(prompt: str) -> str:
        raise KeyboardInterrupt

    con = new_console()
    assert configure(con, reason="r", read_line=interrupted) is False
    assert not sandbox.exists()
    assert texts.SETUP_CANCELLED in out(con)


@pytest.mark.parametrize(("old_key", "old_val", "new_val", "new_key"), [
    ("ANTHROPIC_API_KEY", KEY, TOKEN, "ANTHROPIC_AUTH_TOKEN"),
    ("ANTHROPIC_AUTH_TOKEN", TOKEN, KEY, "ANTHROPIC_API_KEY"),
])
def test_switching_kind_drops_the_stale_credential_keeps_the_rest(
        sandbox, old_key, old_val, new_val, new_key):
    put(sandbox, f"{old_key}={old_val}\nANTHROPIC_BASE_URL=https://gw.example.com\n"
                 "CLAUDE_CODE_EFFORT_LEVEL=high\nANTHROPIC_DEFAULT_HAIKU_MODEL=h-1\nFOO=bar\n")
    envmod.load_dotenv()
    assert os.environ[old_key] == old_val
    con = new_console()
    assert configure(con, reason="重新配置。", read_line=Answers(new_val, "", "", "")) is True
    assert read_env(sandbox) == {
        new_key: new_val,
        "ANTHROPIC_BASE_URL": "https://gw.example.com",
        "CLAUDE_CODE_EFFORT_LEVEL": "high",
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": "h-1",
        "FOO": "bar",
    }
    assert old_key not in os.environ  # a stale API key would otherwise beat the new token
    assert os.environ[new_key] == new_val
    assert texts.SETUP_SAVED_DROPPED.format(key=old_key) in out(con)
    assert stat.S_IMODE(sandbox.stat().st_mode) == 0o600


def test_blank_keeps_current_url_and_model_dash_clears(sandbox):
    put(sandbox, f"ANTHROPIC_AUTH_TOKEN={TOKEN}\nANTHROPIC_BASE_URL=https://gw.example.com\n"
                 + "".join(f"{k}=m-1\n" for k in MODEL_KEYS))
    con = new_console()
    assert configure(con, reason="r", read_line=Answers(TOKEN2, "", "", "")) is True
    assert read_env(sandbox) == {"ANTHROPIC_AUTH_TOKEN": TOKEN2,
                                 "ANTHROPIC_BASE_URL": "https://gw.example.com",
                                 **dict.fromkeys(MODEL_KEYS, "m-1")}
    assert "现在是 https://gw.example.com" in out(con) and "现在是 m-1" in out(con)

    envmod.load_dotenv()
    assert configure(new_console(), reason="r", read_line=Answers(TOKEN2, "-", "-", "")) is True
    assert read_env(sandbox) == {"ANTHROPIC_AUTH_TOKEN": TOKEN2}
    assert "ANTHROPIC_BASE_URL" not in os.environ
    assert not any(k in os.environ for k in MODEL_KEYS)


def test_new_model_replaces_all_three(sandbox):
    put(sandbox, f"ANTHROPIC_AUTH_TOKEN={TOKEN}\n" + "".join(f"{k}=old\n" for k in MODEL_KEYS))
    assert configure(new_console(), reason="r", read_line=Answers(TOKEN, "", "new-model", ""))
    assert all(read_env(sandbox)[k] == "new-model" for k in MODEL_KEYS)


@pytest.mark.parametrize(("typed", "window"), [
    ("1000000", 1_000_000), ("1m", 1_000_000), ("1M", 1_000_000), ("200k", 200_000),
    ("200K", 200_000), ("1_000_000", 1_000_000), ("1,000,000", 1_000_000),
    ("1.5m", 1_500_000), (" 300000 ", 300_000),
])
def test_the_window_is_asked_and_written_0600(sandbox, typed, window):
    con = new_console()
    ans = Answers(KEY, "", "claude-opus-5", typed)
    assert configure(con, reason="r", read_line=ans) is True
    assert ans.used == 4
    assert read_env(sandbox)["FLOWER_WINDOW"] == str(window)
    assert stat.S_IMODE(sandbox.stat().st_mode) == 0o600
    assert os.environ["FLOWER_WINDOW"] == str(window)  # in force at once
    from flower.core.agent import HandoffPolicy

    assert HandoffPolicy().window == window  # the handoff thresholds follow it
    assert "上下文窗口" in out(con)


def test_enter_keeps_the_model_name_guess(sandbox):
    con = new_console()
    assert configure(con, reason="r", read_line=Answers(KEY, "", "claude-haiku-4-5", ""))
    assert "FLOWER_WINDOW" not in read_env(sandbox) and "FLOWER_WINDOW" not in os.environ
    assert texts.SETUP_ASK_WINDOW.format(guess="200K") in out(con)  # guessed for that model


@pytest.mark.parametrize("typed", ["abc", "0", "-5", "1g", "1e6"])
def test_a_window_that_is_not_a_number_changes_nothing(sandbox, typed):
    put(sandbox, f"ANTHROPIC_API_KEY={KEY}\nFLOWER_WINDOW=400000\n")
    con = new_console()
    assert configure(con, reason="r", read_line=Answers(KEY, "", "", typed)) is True
    assert read_env(sandbox)["FLOWER_WINDOW"] == "400000"
    assert texts.SETUP_WINDOW_BAD.format(answer=typed).strip() in out(con)


def test_a_saved_window_is_kept_or_cleared(sandbox):
    put(sandbox, f"ANTHROPIC_API_KEY={KEY}\nFLOWER_WINDOW=400000\n")
    con = new_console()
    assert configure(con, reason="r", read_line=Answers(KEY, "", "", "")) is True
    assert read_env(sandbox)["FLOWER_WINDOW"] == "400000"
    assert texts.SETUP_ASK_WINDOW_KEEP.format(current="400000") in out(con)
    assert configure(new_console(), reason="r", read_line=Answers(KEY, "", "", "-")) is True
    assert "FLOWER_WINDOW" not in read_env(sandbox)


def test_the_window_reaches_a_runtime_from_the_file_alone(sandbox):
    """Next start: the file is read without exporting it, and the Runtime's handoff
    thresholds still use the saved window."""
    assert configure(new_console(), reason="r", read_line=Answers(KEY, "", "", "250k"))
    # what configure exported is dropped by hand: the sandbox fixture restores the
    # environment afterwards, and a monkeypatch here would put the value back after it
    for key in ("FLOWER_WINDOW", "ANTHROPIC_API_KEY"):
        os.environ.pop(key, None)
    from flower.core.runtime import Runtime

    rt = Runtime(workspace=sandbox.parent / "ws", run_dir=sandbox.parent / "runs")
    try:
        assert "FLOWER_WINDOW" not in os.environ
        rt._handoff_ctl.begin_step()
        assert rt._handoff_ctl.limits.window == 250_000
    finally:
        rt.close()


def test_token_never_shown_or_stored_elsewhere(sandbox, tmp_path, capsys):
    con = new_console()
    assert configure(con, reason="r", read_line=Answers(KEY, "https://gw/v1", "m", ""))
    assert KEY not in out(con)
    assert envmod.mask(KEY) in out(con)
    captured = capsys.readouterr()
    assert KEY not in captured.out and KEY not in captured.err
    holders = [p for p in tmp_path.rglob("*") if p.is_file()
               and KEY.encode() in p.read_bytes()]
    assert holders == [sandbox]


def test_save_failure_reports_and_changes_nothing(sandbox, monkeypatch):
    def boom(values):
        raise OSError(f"disk full while writing {values['ANTHROPIC_API_KEY']}")

    monkeypatch.setattr(envmod, "write_user_env", boom)
    con = new_console()
    assert configure(con, reason="r", read_line=Answers(KEY, "", "", "")) is False
    assert "x 存不进" in out(con) and KEY not in out(con)
    assert "ANTHROPIC_API_KEY" not in os.environ


def test_shadowing_sources_are_named(sandbox, monkeypatch):
    put(Path.cwd() / ".env", "ANTHROPIC_BASE_URL=https://project.example.com\n")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "exported-old-token-123456")
    con = new_console()
    assert configure(con, reason="r",
                     read_line=Answers(TOKEN, "https://gw.example.com", "", "")) is True
    text = out(con)
    assert texts.SETUP_SHADOWED.format(key="ANTHROPIC_BASE_URL",
                                       where=Path.cwd() / ".env") in text
    assert texts.SETUP_SHADOWED.format(key="ANTHROPIC_AUTH_TOKEN",
                                       where=texts.SETUP_SHADOW_PROCESS) in text
    assert "exported-old-token-123456" not in text


def test_stale_exported_key_of_the_other_kind_is_named(sandbox, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    con = new_console()
    assert configure(con, reason="r", read_line=Answers(TOKEN, "", "", "")) is True
    assert "ANTHROPIC_API_KEY" not in os.environ  # gone for this process
    assert texts.SETUP_SHADOWED_STALE.format(key="ANTHROPIC_API_KEY",
                                             where=texts.SETUP_SHADOW_PROCESS,
                                             new="ANTHROPIC_AUTH_TOKEN") in out(con)
    assert KEY not in out(con)


def test_no_shadow_warning_for_values_from_the_user_file(sandbox):
    put(sandbox, f"ANTHROPIC_AUTH_TOKEN={TOKEN}\n")
    envmod.load_dotenv()
    con = new_console()
    assert configure(con, reason="r", read_line=Answers(TOKEN2, "", "", ""))
    assert "注意" not in out(con)


# --- the default line reader ----------------------------------------------------------------

class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_default_reader_hides_the_token_on_a_tty(sandbox, monkeypatch):
    calls: list[tuple[str, str]] = []

    def fake_getpass(prompt="Password: ", stream=None):
        calls.append(("getpass", prompt))
        return KEY

    answers = iter(["", "m-1", ""])

    def fake_input(prompt=""):
        calls.append(("input", prompt))
        return next(answers)

    monkeypatch.setattr("sys.stdin", FakeTty())
    monkeypatch.setattr(setup_screen.getpass, "getpass", fake_getpass)
    monkeypatch.setattr(builtins, "input", fake_input)
    assert configure(new_console(), reason="r") is True
    assert [c[0] for c in calls] == ["getpass", "input", "input", "input"]
    assert read_env(sandbox)["ANTHROPIC_API_KEY"] == KEY


def test_default_reader_piped_reads_plain_lines(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{KEY}\r\nsecond\n"))
    assert read_stdin_line("> ", secret=True) == KEY
    assert read_stdin_line("> ") == "second"
    assert read_stdin_line("> ") == ""  # EOF = blank
    captured = capsys.readouterr()
    assert KEY not in captured.out + captured.err


def test_default_reader_closed_or_missing_stdin_is_blank(monkeypatch):
    closed = io.StringIO("x\n")
    closed.close()
    monkeypatch.setattr("sys.stdin", closed)
    assert read_stdin_line("> ") == ""
    monkeypatch.setattr("sys.stdin", None)
    assert read_stdin_line("> ") == ""


def test_default_reader_eof_on_tty_is_blank(monkeypatch):
    def eof(prompt=""):
        raise EOFError

    monkeypatch.setattr("sys.stdin", FakeTty())
    monkeypatch.setattr(builtins, "input", eof)
    assert read_stdin_line("> ") == ""


# --- gate 1: present? ------------------------------------------------------------------------

def test_missing_and_not_interactive_prints_the_message(sandbox):
    con = new_console()
    assert ensure_credentials(con, interactive=False) is False
    text = out(con)
    assert "没找到 API 凭证" in text and "flower setup" in text
    assert str(sandbox) in text  # where to put it
    assert "配置 flower" not in text  # no screen
    assert not sandbox.exists()


def test_missing_and_interactive_runs_the_screen_then_probes(server, sandbox):
    con = new_console()
    ans = Answers(KEY, server.url, "", "")
    assert ensure_credentials(con, interactive=True, read_line=ans) is True
    text = out(con)
    assert texts.SETUP_REASON_FIRST in text and "+ 存好了" in text
    assert texts.SETUP_PROBING in text
    assert len(server.message_requests()) == 1
    assert server.message_requests()[0].headers["x-api-key"] == KEY


def test_missing_and_interactive_cancelled_is_false(sandbox):
    assert ensure_credentials(new_console(), interactive=True, read_line=Answers("")) is False


def test_present_credentials_from_user_file_are_loaded(server, sandbox):
    put(sandbox, f"ANTHROPIC_AUTH_TOKEN={TOKEN}\nANTHROPIC_BASE_URL={server.url}\n")
    con = new_console()
    assert ensure_credentials(con, interactive=True, read_line=Answers()) is True
    assert "ANTHROPIC_AUTH_TOKEN" not in os.environ  # seen and used, but never exported
    assert server.message_requests()[0].headers["authorization"] == f"Bearer {TOKEN}"
    assert "!" not in out(con)  # ok is silent


# --- gate 2: usable? (against the fake API) ---------------------------------------------------

def configured(server: FakeServer, token: str = KEY) -> None:
    key = "ANTHROPIC_API_KEY" if token.startswith("sk-ant-") else "ANTHROPIC_AUTH_TOKEN"
    os.environ[key] = token
    os.environ["ANTHROPIC_BASE_URL"] = server.url


@pytest.mark.parametrize(("status", "line"), [
    (401, "! 凭证被拒:"),
    (404, "! 网关地址或模型名不对:"),
])
def test_rejected_gets_one_reconfigure_then_passes(server, status, line):
    configured(server)
    server.script(fault(status))  # then the default queue answers 200
    con = new_console()
    ans = Answers(KEY2, "", "", "")
    assert ensure_credentials(con, interactive=True, read_line=ans) is True
    text = out(con)
    assert line in text and f"HTTP {status}" in text
    assert texts.SETUP_REASON_AGAIN in text
    assert text.count(texts.SETUP_PROBING) == 2
    reqs = server.message_requests()
    assert [r.headers["x-api-key"] for r in reqs] == [KEY, KEY2]
    assert KEY not in text and KEY2 not in text


@pytest.mark.parametrize("status", [401, 403, 404])
def test_second_failure_gives_up(server, status):
    configured(server)
    server.script(fault(status), fault(status))
    con = new_console()
    ans = Answers(KEY2, "", "", "")
    assert ensure_credentials(con, interactive=True, read_line=ans) is False
    assert ans.used == 4  # one screen only
    text = out(con)
    assert text.count(texts.SETUP_PROBING) == 2
    assert text.count("配置 flower") == 1
    assert "flower setup" in text
    assert len(server.message_requests()) == 2


def test_reconfigure_cancelled_after_rejection_is_false(server):
    configured(server)
    server.script(fault(401))
    assert ensure_credentials(new_console(), interactive=True, read_line=Answers("")) is False
    assert len(server.message_requests()) == 1


def test_rejection_detail_is_redacted(server):
    configured(server)
    server.script(fault(401, f"invalid x-api-key {KEY}"), fault(401, f"invalid x-api-key {KEY2}"))
    con = new_console()
    ensure_credentials(con, interactive=True, read_line=Answers(KEY2, "", "", ""))
    assert KEY not in out(con) and KEY2 not in out(con)


@pytest.fixture
def remote(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake's outage refuses on loopback, which on its own is a wrong setting (nothing
    listens on this machine); here it stands for a gateway elsewhere that is down."""
    import flower.core.env as envmod_

    monkeypatch.setattr(envmod_, "misconfigured", lambda base: None)


def test_outage_is_net_and_runs_anyway(server, remote):
    configured(server)
    server.outage()
    con = new_console()
    ans = Answers()
    assert ensure_credentials(con, interactive=True, read_line=ans) is True
    assert ans.used == 0  # a network problem never triggers reconfiguration
    text = out(con)
    assert "(探针没打通:" in text and "—— 当作网络问题,照常开跑)" in text
    detail = text.split("(探针没打通:", 1)[1].split(" —— ", 1)[0]
    assert 0 < len(detail) <= 80
    # in words, whole: not "ConnectionRefusedError: [Errno 111] Connectio"
    assert detail.endswith(texts.NET_REFUSED) and "Errno" not in detail


def test_5xx_is_net(server):
    configured(server)
    server.script(fault(529))
    assert ensure_credentials(new_console(), interactive=True, read_line=Answers()) is True


def test_closed_port_on_this_machine_is_a_wrong_setting(sandbox):
    """Nothing listens at the loopback address: the screen comes up once (the run would
    stop on the same refusal at its first step), never "a network problem, running anyway"."""
    with FakeServer() as fake:
        url = fake.url
    os.environ["ANTHROPIC_API_KEY"] = KEY
    os.environ["ANTHROPIC_BASE_URL"] = url
    con = new_console()
    ans = Answers(KEY, "", "", "")  # the screen once, the same values kept
    assert ensure_credentials(con, interactive=True, read_line=ans) is False
    text = out(con)
    assert "探针没打通" not in text
    assert "! 网关地址或模型名不对:" in text and "没有服务在听" in text
    assert texts.SETUP_REASON_AGAIN in text and KEY not in text


@pytest.mark.parametrize("how", ["env", "arg", "not-interactive"])
def test_probe_skipped(server, how, monkeypatch):
    configured(server)
    server.script(fault(401))
    if how == "env":
        monkeypatch.setenv("FLOWER_NO_PROBE", "1")
    con = new_console()
    assert ensure_credentials(con, interactive=how != "not-interactive",
                              probe=how != "arg", read_line=Answers()) is True
    assert server.message_requests() == []
    assert texts.SETUP_PROBING not in out(con)


def test_no_probe_from_a_dotenv_file(server, sandbox):
    put(sandbox, f"ANTHROPIC_API_KEY={KEY}\nANTHROPIC_BASE_URL={server.url}\nFLOWER_NO_PROBE=1\n")
    server.script(fault(401))
    assert ensure_credentials(new_console(), interactive=True, read_line=Answers()) is True
    assert server.message_requests() == []


# --- after a failed step ---------------------------------------------------------------------

CRED_TABLE = [
    ("API Error: 401 {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\"}}", True),
    ("Failed to authenticate. API Error: 401", True),
    ("Invalid API key · Please run /login", True),
    ("invalid x-api-key", True),
    ("HTTP 401", True),
    ("status 401", True),
    ("(401)", True),
    ("Unauthorized", True),
    ("authentication_failed", True),
    ("OAuth token has expired", True),
    ("无效的令牌", True),
    ("无效的 API key", True),
    ("无效的key", True),
    ("密钥无效,请检查", True),
    ("令牌已过期", True),
    ("token 无效", True),
    ("认证失败", True),
    ("API Error: 529 overloaded_error", False),
    ("Connection error: ECONNREFUSED", False),
    ("took 401ms", False),
    ("4010 tokens", False),
    ("version 1.401", False),
    ("rate limit (429)", False),
    ("prompt is too long", False),
    ("model not found", False),
    ("", False),
    (None, False),
]


@pytest.mark.parametrize(("text", "expected"), CRED_TABLE)
def test_looks_like_credential_error(text, expected):
    assert looks_like_credential_error(text) is expected


def test_reconfigure_after_credential_failure(sandbox):
    os.environ["ANTHROPIC_API_KEY"] = KEY
    error = f"API Error: 401 invalid x-api-key {KEY} " + "x" * 300
    con = new_console()
    assert reconfigure_after_failure(con, error, interactive=True,
                                     read_line=Answers(KEY2, "", "", "")) is True
    text = out(con)
    head = text.split("! 看起来是凭证不对:", 1)[1].splitlines()[0]
    assert len(head) <= 120 and envmod.mask(KEY) in head
    assert KEY not in text and KEY2 not in text
    assert texts.SETUP_REASON_AGAIN in text
    assert text.rstrip().endswith(texts.SETUP_RERUN)
    assert read_env(sandbox)["ANTHROPIC_API_KEY"] == KEY2


def test_reconfigure_after_failure_cancelled_still_handled(sandbox):
    con = new_console()
    assert reconfigure_after_failure(con, "401 Unauthorized", interactive=True,
                                     read_line=Answers("")) is True
    assert texts.SETUP_RERUN not in out(con)
    assert not sandbox.exists()


@pytest.mark.parametrize(("error", "interactive"), [
    ("401 Unauthorized", False),
    ("Connection error: ECONNREFUSED", True),
    ("", True),
])
def test_reconfigure_after_failure_not_applicable(sandbox, error, interactive):
    con = new_console()
    ans = Answers()
    assert reconfigure_after_failure(con, error, interactive=interactive, read_line=ans) is False
    assert out(con) == "" and ans.used == 0


# --- flower setup ------------------------------------------------------------------------------

def test_run_setup_with_piped_stdin(server, sandbox, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{KEY}\n{server.url}/v1\nclaude-x\n"))
    con = new_console()
    assert run_setup(con) == 0
    assert read_env(sandbox) == {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": server.url,
                                 **dict.fromkeys(MODEL_KEYS, "claude-x")}
    assert stat.S_IMODE(sandbox.stat().st_mode) == 0o600
    text = out(con)
    assert texts.SETUP_REASON_FIRST in text and "+ 凭证可用" in text
    req = server.message_requests()[0]
    assert req.headers["x-api-key"] == KEY and req.body["model"] == "claude-x"
    captured = capsys.readouterr()
    assert KEY not in text + captured.out + captured.err


def test_run_setup_reason_again_when_file_exists(sandbox):
    put(sandbox, "FOO=bar\n")
    con = new_console()
    assert run_setup(con, read_line=Answers(TOKEN, "", "", ""), probe=False) == 0
    assert texts.SETUP_REASON_AGAIN in out(con)
    assert read_env(sandbox) == {"ANTHROPIC_AUTH_TOKEN": TOKEN, "FOO": "bar"}
    assert texts.SETUP_PROBING not in out(con)


def test_run_setup_cancelled_is_1(sandbox):
    assert run_setup(new_console(), read_line=Answers("")) == 1
    assert not sandbox.exists()


@pytest.mark.parametrize(("status", "code"), [(401, 1), (404, 1), (503, 0)])
def test_run_setup_probe_verdicts(server, sandbox, status, code):
    server.script(fault(status))
    con = new_console()
    assert run_setup(con, read_line=Answers(KEY, server.url, "", "")) == code
    assert read_env(sandbox)["ANTHROPIC_API_KEY"] == KEY  # saved either way
    assert "+ 凭证可用" not in out(con)
    assert ("探针没打通" in out(con)) is (code == 0)


def test_run_setup_outage_is_0(server, sandbox, remote):
    server.outage()
    assert run_setup(new_console(), read_line=Answers(KEY, server.url, "", "")) == 0


def test_run_setup_flower_no_probe(server, sandbox, monkeypatch):
    monkeypatch.setenv("FLOWER_NO_PROBE", "yes")
    assert run_setup(new_console(), read_line=Answers(KEY, server.url, "", "")) == 0
    assert server.message_requests() == []


# --- -v -------------------------------------------------------------------------------------------

def test_describe_config_masks_the_credential(sandbox):
    os.environ["ANTHROPIC_AUTH_TOKEN"] = TOKEN
    os.environ["CLAUDE_CODE_EFFORT_LEVEL"] = "high"
    con = new_console()
    describe_config(con)
    text = out(con)
    assert TOKEN not in text
    assert f"ANTHROPIC_AUTH_TOKEN = {TOKEN[:4]}" in text and f"共 {len(TOKEN)} 位" in text
    assert "ANTHROPIC_BASE_URL = https://api.anthropic.com(默认)" in text
    assert f"ANTHROPIC_MODEL = {texts.DESCRIBE_UNSET}" in text
    assert "CLAUDE_CODE_EFFORT_LEVEL = high" in text
    assert "ANTHROPIC_API_KEY" not in text


def test_describe_config_with_nothing_set(sandbox):
    con = new_console()
    describe_config(con)
    assert f"ANTHROPIC_API_KEY = {texts.DESCRIBE_UNSET}" in out(con)


def test_import_is_light():
    """cli.py imports this for every `go`/`run`: no SDK, no rich until something is printed."""
    import subprocess
    import sys

    code = ("import sys, flower.cli.tui.setup_screen\n"
            "print(','.join(m for m in ('rich', 'claude_agent_sdk') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == ""


GW_PW = "gw-password-0123456789"
GW_URL = f"https://flower:{GW_PW}@gw.example.com"


@pytest.mark.parametrize("where", ["process", "file"])
def test_describe_config_masks_a_password_in_the_base_url(sandbox, where):
    """``flower -v`` shows which gateway is used, not the password in its URL (also when the
    URL comes from the file ``flower setup`` wrote)."""
    os.environ["ANTHROPIC_API_KEY"] = KEY
    if where == "process":
        os.environ["ANTHROPIC_BASE_URL"] = GW_URL
    else:
        put(sandbox, f"ANTHROPIC_BASE_URL={GW_URL}\n")
    con = new_console()
    describe_config(con)
    assert GW_PW not in out(con)
    assert "ANTHROPIC_BASE_URL = https://flower:***@gw.example.com" in out(con)


def test_setup_screen_never_shows_a_gateway_password(sandbox):
    """The screen echoes the URL three ways — the one on file (keep it?), a URL typed
    without a scheme (a warning) and the saved values — none with the password."""
    put(sandbox, f"ANTHROPIC_API_KEY={KEY}\nANTHROPIC_BASE_URL={GW_URL}\n")
    con = new_console()
    assert configure(con, reason="r", read_line=Answers(KEY, "", "", ""))  # keeps the URL
    assert configure(con, reason="r",
                     read_line=Answers(KEY, f"flower:{GW_PW}@gw.example", "", ""))
    assert configure(con, reason="r", read_line=Answers(KEY, GW_URL, "", ""))
    text = out(con)
    assert GW_PW not in text
    assert "现在是 https://flower:***@gw.example.com" in text  # the keep prompt
    assert "flower:***@gw.example" in text.split("http://")[-1]  # the no-scheme warning
    assert "ANTHROPIC_BASE_URL = https://flower:***@gw.example.com" in text  # saved
    assert read_env(sandbox)["ANTHROPIC_BASE_URL"] == GW_URL  # the file keeps the real one
