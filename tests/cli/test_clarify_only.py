"""``flower "…" --clarify-only`` in a folder whose brief is already complete: nothing runs,
but the command ends as a run does — the closing cost line (nothing spent) and a workbench
index a person (and the next session) can read."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from flower import texts
from flower.cli import app as cli
from flower.core.brief import Brief


def said(output: str, line: str) -> bool:
    """``line`` is in the output (the console wraps long lines at its width)."""
    return "".join(line.split()) in "".join(output.split())


@pytest.fixture
def clarified(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
    monkeypatch.setenv("FLOWER_NO_UPDATE", "1")
    brief = Brief(goal="做个 md2html 工具", accept="转换 README.md 不报错", bounds="只用标准库",
                  unknowns="无")
    brief.write(workspace / ".flower" / "notes" / "需求.md")
    return workspace


def test_clarify_only_on_a_complete_brief_closes_like_a_run(clarified: Path) -> None:
    index = clarified / ".flower" / "INDEX.md"
    assert not index.exists()
    result = CliRunner().invoke(cli.main, ["--clarify-only", "做个 md2html 工具"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    brief = clarified / ".flower" / "notes" / "需求.md"
    assert said(result.output, texts.CLARIFY_ONLY_DONE.format(path=brief))
    closing = texts.CLOSING.format(cost=0.0, manifest=clarified / "runs" / "manifest.json")
    assert said(result.output, closing) and "$0.0000" in closing
    assert index.is_file() and "需求.md" in index.read_text(encoding="utf-8")
    assert not (clarified / "runs" / "manifest.json").exists()  # nothing ran, nothing recorded


def test_the_run_dir_option_is_what_the_closing_line_names(clarified: Path,
                                                          tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    result = CliRunner().invoke(cli.main, ["-r", str(elsewhere), "--clarify-only", "x"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert said(result.output, texts.CLOSING.format(cost=0.0,
                                                    manifest=elsewhere / "manifest.json"))
