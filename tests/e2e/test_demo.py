"""`flower demo` runs offline with no credentials and shows the tool call and its result."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_demo_runs_offline_without_credentials(tmp_path: Path, home: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CLAUDE_")) and k != "FLOWER_ENV"}
    env.update({"HOME": str(home), "COLUMNS": "200", "NO_COLOR": "1"})
    ws = tmp_path / "demo-ws"
    out = subprocess.run([sys.executable, "-m", "flower", "demo", "-w", str(ws)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Write" in out.stdout and "File created successfully" in out.stdout
    assert "完成" in out.stdout
    assert (ws / "hello.md").read_text(encoding="utf-8").startswith("# 你好,flower")
    assert (ws / "runs" / "manifest.json").is_file() and (ws / "runs" / "sessions.db").is_file()
    assert not (home / ".claude" / "projects").exists()  # the user's config was left alone
