"""The README's ``flows.py`` against a fake scripted with two answers prints each answer
under its own step — with the CLI's non-essential traffic (the session title) on or off,
piped or in a terminal (where flower probes the credential first). The fake answers those
extra requests itself; before it did, the title or the probe took the first answer and
``risks`` printed ``(fake: script exhausted)``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from ptyterm import Pty, term_env

from flower.testing import EXHAUSTED_TEXT, FakeServer

README = Path(__file__).parents[2] / "README.md"
SUMMARY, RISK = "SUMMARY-ANSWER", "RISK-ANSWER"
TIMEOUT = 120


def readme_flows() -> str:
    """The README's ``# flows.py`` block, as a reader would copy it."""
    found = re.search(r"```python\n(# flows\.py\n.*?)```", README.read_text(), re.S)
    assert found, "README.md has no # flows.py block"
    return found.group(1)


def under(out: str, step: str) -> str:
    """The output printed under the heading of ``step`` (up to the next heading)."""
    part = out.split(f"== {step} ", 1)[1]
    return part.split("\n== ", 1)[0]


@pytest.fixture
def project(workspace: Path, fake: FakeServer) -> Path:
    (workspace / "flows.py").write_text(readme_flows())
    fake.script(SUMMARY, RISK)
    return workspace


@pytest.mark.parametrize("nonessential", [False, True], ids=["quiet-cli", "title-on"])
def test_readme_flows_piped(project: Path, fake: FakeServer, cli_env: dict[str, str],
                            monkeypatch: pytest.MonkeyPatch, nonessential: bool) -> None:
    if nonessential:
        monkeypatch.delenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC")
    out = subprocess.run([sys.executable, "-m", "flower", "run", "flows.py:main"],
                         cwd=project, env=dict(os.environ), stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=TIMEOUT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert SUMMARY in under(out.stdout, "summary")
    assert RISK in under(out.stdout, "risks")
    assert EXHAUSTED_TEXT not in out.stdout
    assert fake.remaining() == 0 and fake.exhausted == 0
    if nonessential:  # the title request did happen, and was answered by the fake
        assert "title" in [r.auxiliary for r in fake.auxiliary_requests()]


def test_readme_flows_in_a_terminal(project: Path, fake: FakeServer, cli_env: dict[str, str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """In a terminal flower probes the credential before the run: that request pops no
    step either, and the probe line gets its answer."""
    from flower import texts

    monkeypatch.delenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC")
    term = Pty([sys.executable, "-m", "flower", "run", "flows.py:main"],
               term_env(dict(os.environ)), project)
    try:
        assert term.wait(TIMEOUT) == 0, term.buf
        term.eof(10)
    finally:
        term.close()
    shown = "\n".join(term.lines())
    assert SUMMARY in under(shown, "summary") and RISK in under(shown, "risks")
    assert EXHAUSTED_TEXT not in shown
    assert "probe" in [r.auxiliary for r in fake.auxiliary_requests()]
    probing = shown.index(texts.SETUP_PROBING)
    assert shown.index(texts.SETUP_PROBE_OK) > probing
