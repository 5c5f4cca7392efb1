"""Text from models and tools reaches the terminal cleaned — escape sequences with their
payloads and control characters gone — and, in ``flower analyze`` / ``flower log``, with
credentials masked: a run's tool results quote whatever files and commands printed."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from flower.cli.tui.render import clean

ESC = "\x1b"
BEL = "\x07"
ST = ESC + "\\"


@pytest.mark.parametrize(("raw", "shown"), [
    # CSI: colours, cursor moves, private modes, with intermediates
    (f"a{ESC}[31mred{ESC}[0m b", "ared b"),
    (f"{ESC}[2J{ESC}[H{ESC}[?1049hscreen", "screen"),
    (f"x{ESC}[1 qy", "xy"),
    # OSC ended by BEL and by ST: a window title, a hyperlink — payload and all
    (f"{ESC}]0;title{BEL}after", "after"),
    (f"{ESC}]8;;http://evil.example{ST}link{ESC}]8;;{ST}", "link"),
    (f"{ESC}]52;c;c2VjcmV0{BEL}clip", "clip"),  # a clipboard write
    # DCS, APC, PM, SOS
    (f"a{ESC}Pq#0;2;0;0;0{ST}b", "ab"),
    (f"a{ESC}_Gf=24,a=T;AAAA{ST}b", "ab"),
    (f"a{ESC}^private{ST}b", "ab"),
    (f"a{ESC}Xstring{ST}b", "ab"),
    # 8-bit C1: CSI U+009B and OSC U+009D with their payloads, ST U+009C, others alone
    ("a\x9b31mb", "ab"),
    ("a\x9d0;title\x9cb", "ab"),
    ("a\x9d0;title\x07b", "ab"),
    ("a\x90dcs\x9cb", "ab"),
    ("a\x85b\x8dc\x9cd", "abcd"),
    # a lone ESC, other escape sequences, other C0 and DEL; newline and tab stay
    (f"lone{ESC}", "lone"),
    (f"{ESC}cRIS {ESC}(Bcharset {ESC}=keypad", "RIS charset keypad"),
    (f"{ESC}中", "中"),
    ("bell\x07 back\x08 cr\r nul\x00 del\x7f", "bell back cr nul del"),
    ("keep\ttab\nnewline", "keep\ttab\nnewline"),
    # nested and unterminated payloads run to the end of the text
    (f"a{ESC}]0;one{ESC}]0;two{BEL}b", "ab"),
    (f"a{ESC}]0;never ends", "a"),
    (f"a{ESC}Pdcs {ESC}[31m still payload", "a"),
    ("a\x9d8;;unterminated", "a"),
    (f"a{ESC}[12;", "a"),
])
def test_clean_removes_every_family(raw: str, shown: str) -> None:
    assert clean(raw) == shown


def _has_control(text: str) -> bool:
    return any(unicodedata.category(c) == "Cc" and c not in "\n\t" for c in text)


_controls = st.sampled_from([ESC, BEL, "\x9b", "\x9c", "\x9d", "\x90", "\x98", "\x9e", "\x9f",
                             "[", "]", "P", "X", "^", "_", "\\", ";", "0", "m", "\r", "\x00"])


@given(st.lists(st.one_of(st.text(max_size=8), _controls), max_size=30).map("".join))
def test_clean_output_never_holds_esc_c1_or_c0(text: str) -> None:
    out = clean(text)
    assert ESC not in out and not re.search("[\x80-\x9f]", out)
    assert not _has_control(out)


@given(st.text(st.characters(blacklist_categories=("Cc", "Cs")) | st.sampled_from("\n\t")))
def test_printable_text_passes_unchanged(text: str) -> None:
    assert clean(text) == text


# --- flower analyze / flower log on a run whose tool results carry secrets and escapes ------

SAVED = "tok-saved-in-dotenv-0123456789"  # resolved by flower: ~/.config/flower/.env
SHELL = "gw-token-in-the-shell-0123456789"  # resolved by flower: the process environment
STRAY = "sk-ant-api03-STRAYKEYSTRAYKEY-0123456789"  # nobody configured it: a file showed it
NASTY = (f"{ESC}]0;pwned{BEL}{ESC}[2J key={SAVED} shell={SHELL} other={STRAY} "
         f"\x9d8;;http://x\x9c{ESC}Pdcs{ST}" + "x" * 3000)
SID = "c0c0c0c0-1111-4222-8333-444455556666"


def _transcript() -> list[dict[str, Any]]:
    tid = "toolu_0001"
    entries: list[dict[str, Any]] = [
        {"type": "user", "message": {"role": "user", "content": "go"}},
        {"type": "assistant", "message": {
            "id": "msg_1", "role": "assistant", "model": "claude-opus-5-5",
            "content": [{"type": "tool_use", "id": tid, "name": f"Bash{ESC}[31m",
                         "input": {"command": "cat .env"}}],
            "usage": {"input_tokens": 10, "output_tokens": 5}}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tid, "content": NASTY, "is_error": False}]}},
    ]
    for n, e in enumerate(entries, 1):
        e.update(uuid=f"u-{n:05d}", sessionId=SID, parentUuid=f"u-{n - 1:05d}" if n > 1 else None,
                 timestamp=f"2026-01-01T00:00:{n:02d}.000Z")
    return entries


@pytest.fixture
def nasty_run(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from flower.stores.sqlite import SqliteSessionStore

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", SHELL)
    saved = home / ".config" / "flower" / ".env"
    saved.parent.mkdir(parents=True)
    saved.write_text(f"ANTHROPIC_API_KEY={SAVED}\n")
    run_dir = tmp_path / "runs"
    run_dir.mkdir()

    async def fill() -> None:
        store = SqliteSessionStore(run_dir / "sessions.db")
        try:
            await store.append({"project_key": "-ws", "session_id": SID}, _transcript())
        finally:
            store.close()

    anyio.run(fill)
    row = {"step": f"干活{ESC}]0;title{BEL}", "session_id": SID, "ok": False, "cost_usd": 0.1,
           "num_turns": 1, "text": NASTY, "error": NASTY, "started_at": 0, "ended_at": 0,
           "attempts": 2, "resumed": False, "context": 0, "duration_s": 1.0, "run": "r1",
           "retired": [], "errors": [NASTY]}
    (run_dir / "manifest.json").write_text(json.dumps([row], ensure_ascii=False))
    return run_dir


def _assert_safe(out: str, *, as_json: bool) -> None:
    """No credential, no raw ESC or C1; on the screen not even the sequences' payloads
    (``--json`` keeps the data, JSON-escaped, for whoever parses it)."""
    for secret in (SAVED, SHELL, STRAY):
        assert secret not in out
    assert ESC not in out and not re.search("[\x80-\x9f]", out)
    if not as_json:
        assert "pwned" not in out and "http://x" not in out and "dcs" not in out


@pytest.mark.parametrize("as_json", [False, True])
def test_flower_analyze_masks_credentials_and_strips_controls(
        nasty_run: Path, as_json: bool, capsys: pytest.CaptureFixture[str]) -> None:
    from flower.cli.commands.analyze import analyze_run
    from flower.cli.context import Globals

    g = Globals(workspace=".", run_dir=None, verbose=False, workbench=True, trim=False)
    assert analyze_run(g, str(nasty_run), as_json=as_json) == 0
    out = capsys.readouterr().out
    _assert_safe(out, as_json=as_json)
    assert "key=tok-…" in out  # masked, not dropped
    if as_json:
        doc = json.loads(out)
        assert doc["top_results"][0]["preview"].startswith(ESC)  # JSON keeps the data …
        assert "\\u009d" in out  # … with C1 written as escapes
    else:
        assert "sk-a…" in out and "干活" in out


@pytest.mark.parametrize("as_json", [False, True])
def test_flower_log_masks_credentials_and_strips_controls(
        nasty_run: Path, as_json: bool, capsys: pytest.CaptureFixture[str]) -> None:
    from flower.cli.tui.log_view import main

    assert main(str(nasty_run), as_json=as_json) == 0
    out = capsys.readouterr().out
    _assert_safe(out, as_json=as_json)
    assert "key=tok-…" in out  # the failed step's error, masked
