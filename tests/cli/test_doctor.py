"""``flower doctor`` through the real entry point: one line per check, ok or what to do.

A newcomer's ``flower doctor`` used to start a paid run with "doctor" as the requirement.
Now each thing a first run needs is checked for real — the credential with one probe
request to the fake API, the bundled CLI started, bwrap tried, a PostgreSQL URL connected —
and the secret never shows unmasked. Nothing is created in the folder it is run in.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from flower import texts
from flower.core.doctor import bundled_cli
from flower.core.env import mask
from flower.testing import FakeServer, fault

KEY = "sk-ant-api03-doctor-0123456789abcdef"


def doctor(ws: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flower", "doctor"], cwd=ws,
                          env={**os.environ, "COLUMNS": "200", **env},
                          capture_output=True, text=True, timeout=120)


def line(out: str, name: str) -> str:
    """The one line of check ``name`` (mark, padded name, text)."""
    found = [ln for ln in out.splitlines() if ln[2:].startswith(name + " ")]
    assert len(found) == 1, out
    return found[0]


def text_of(out: str, name: str) -> str:
    return line(out, name)[2:].removeprefix(name).strip()


def test_no_credential_says_setup_and_every_other_check_still_runs(workspace: Path) -> None:
    done = doctor(workspace)
    assert done.returncode == 1, done.stderr
    out = done.stdout
    creds = line(out, texts.DOCTOR_CREDS)
    assert creds.startswith("x ")
    assert text_of(out, texts.DOCTOR_CREDS) == texts.DOCTOR_CREDS_MISSING.format(
        path=Path(os.environ["XDG_CONFIG_HOME"]) / "flower" / ".env")
    for name in (texts.DOCTOR_CLI, texts.DOCTOR_SANDBOX, texts.DOCTOR_GIT, texts.DOCTOR_DOCKER,
                 texts.DOCTOR_STORE, texts.DOCTOR_DISK):
        assert line(out, name)[0] in "+!x"
    assert out.splitlines()[-1] == texts.DOCTOR_SUMMARY_FAIL.format(n=1)
    assert sorted(p.name for p in workspace.iterdir()) == []  # no runs/, no .flower/


def test_a_working_key_is_probed_once_and_shown_masked(workspace: Path, fake: FakeServer) -> None:
    done = doctor(workspace, ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=fake.url)
    out = done.stdout
    assert text_of(out, texts.DOCTOR_CREDS) == " · ".join([
        texts.DOCTOR_CREDS_SET.format(key="ANTHROPIC_API_KEY", masked=mask(KEY), url=fake.url),
        texts.DOCTOR_PROBE_OK])
    assert line(out, texts.DOCTOR_CREDS).startswith("+ ")
    assert [r.auxiliary for r in fake.requests] == ["probe"]  # the one tiny request
    assert KEY not in out + done.stderr
    version = subprocess.run([str(bundled_cli()), "--version"], capture_output=True,
                             text=True, check=True).stdout.strip()
    assert text_of(out, texts.DOCTOR_CLI) == texts.DOCTOR_CLI_OK.format(version=version,
                                                                         path=bundled_cli())
    assert text_of(out, texts.DOCTOR_SANDBOX) == texts.DOCTOR_SANDBOX_OK  # bwrap is installed
    assert text_of(out, texts.DOCTOR_STORE) == texts.DOCTOR_STORE_SQLITE.format(
        path=workspace / "runs" / "sessions.db")
    assert done.returncode == 0 and out.splitlines()[-1] == texts.DOCTOR_SUMMARY_OK
    assert not (workspace / "runs").exists()


def test_a_refused_key_is_a_fix_first_line(workspace: Path, home: Path) -> None:
    with FakeServer(auxiliary=False) as server:
        server.script(fault(401, "invalid x-api-key"))
        done = doctor(workspace, ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=server.url)
    creds = line(done.stdout, texts.DOCTOR_CREDS)
    assert creds.startswith("x ") and "HTTP 401" in creds and "flower setup" in creds
    assert KEY not in done.stdout and done.returncode == 1


def test_a_store_that_does_not_answer_is_named_without_its_password(workspace: Path) -> None:
    url = "postgresql://flower:hunter2-secret@127.0.0.1:9/flower"
    done = doctor(workspace, FLOWER_STORE_URL=url, FLOWER_NO_PROBE="1", ANTHROPIC_API_KEY=KEY)
    store = line(done.stdout, texts.DOCTOR_STORE)
    assert store.startswith("x ") and "postgresql://flower:***@127.0.0.1:9/flower" in store
    assert "hunter2" not in done.stdout + done.stderr and done.returncode == 1
    assert text_of(done.stdout, texts.DOCTOR_CREDS).endswith(texts.DOCTOR_PROBE_SKIPPED)


def test_no_bwrap_on_path_is_a_warning_that_says_what_to_install(workspace: Path,
                                                                 tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    done = doctor(workspace, PATH=str(empty), ANTHROPIC_API_KEY=KEY, FLOWER_NO_PROBE="1")
    assert line(done.stdout, texts.DOCTOR_SANDBOX).split(None, 2) == [
        "!", texts.DOCTOR_SANDBOX, texts.DOCTOR_SANDBOX_NONE.format(
            why=texts.SANDBOX_WHY_MISSING.format(names="bwrap socat"),
            how=texts.SANDBOX_HOW_LINUX)]
    assert text_of(done.stdout, texts.DOCTOR_DOCKER) == texts.DOCTOR_DOCKER_NONE
    assert done.returncode == 0  # auto still runs without a sandbox: a warning, no failure
