"""Bad state files: every state file × every way it can be broken, then ``flower`` again.

Starting point: a folder where the default job has run to the end once (built once per
module, relocated per case). One file is broken, then the person carries on —
``flower --timeout 0`` + Enter, or the ask retyped when the brief itself is broken. The
answer must be one readable line and exit 1, or a run that carries on correctly and exits 0;
never a traceback. The broken file is kept byte-identical, or moved aside — never
overwritten.

The seven kinds of broken: empty, truncated, not UTF-8, garbage, a directory, unreadable
(chmod 000 — as root that does not stop a read, so the file then simply counts as intact)
and on a read-only folder (``chattr +i`` on its folder, which holds even for root; chmod
555 where chattr is not available, and whatever that really blocks decides the outcome).

All seven kinds of one file run as concurrent processes against the one fake; a fallback
routes each request to the demo brain of the workspace named in its system prompt.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from flower.cli.commands.demo import ASK, DemoBrain
from flower.core.paths import project_key
from flower.testing import FakeServer, Request
from flower.testing.env import offline_env

KINDS = ["empty", "truncated", "not-utf8", "garbage", "directory", "unreadable",
         "readonly-folder"]
FILES = ["manifest.json", "lineage.json", "sessions.db", "需求.md", "目标.md", ".env",
         ".windows"]
GOAL_FILES = ("需求.md", "目标.md")
BROKEN = ("empty", "truncated", "not-utf8", "garbage", "directory")


def _where(ws: Path, home: Path, name: str) -> Path:
    if name in ("manifest.json", "lineage.json", "sessions.db"):
        return ws / "runs" / name
    if name in ("需求.md", "目标.md"):
        return ws / ".flower" / "notes" / name
    if name == ".env":
        return ws / ".env"
    return home / ".config" / "flower" / ".windows"


class Router:
    """One fallback for many workspaces: the CLI names its cwd in the system prompt."""

    def __init__(self) -> None:
        self.brains: dict[str, DemoBrain] = {}
        self.missed: list[str] = []

    def add(self, ws: Path) -> None:
        self.brains[str(ws)] = DemoBrain(ws, pause=0.0)

    def __call__(self, req: Request):
        raw = req.raw.decode("utf-8", "replace")
        for path in sorted(self.brains, key=len, reverse=True):
            if path in raw:
                return self.brains[path](req)
        self.missed.append(req.system_text[-300:])
        return None


def _env(home: Path, url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CLAUDE_")) and k not in ("FLOWER_ENV",)}
    env.update(offline_env(url, home=str(home), FLOWER_NO_UPDATE="1"))
    env.update({"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"),
                "XDG_CONFIG_HOME": str(home / ".config"), "COLUMNS": "120", "NO_COLOR": "1"})
    return env


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder where the whole default job ran once."""
    base = tmp_path_factory.mktemp("finished")
    ws, home = base / "ws", base / "home"
    ws.mkdir()
    (home / ".claude").mkdir(parents=True)
    with FakeServer() as fake:
        fake.fallback(DemoBrain(ws, pause=0.0))
        out = subprocess.run([sys.executable, "-m", "flower", "--timeout", "0", ASK], cwd=ws,
                             env=_env(home, fake.url), capture_output=True, text=True,
                             timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    return ws


def relocate(src: Path, dst: Path) -> None:
    """Copy a finished folder to ``dst`` as if it had always lived there."""
    shutil.copytree(src, dst, symlinks=True)
    lin = dst / "runs" / "lineage.json"
    data = json.loads(lin.read_text(encoding="utf-8"))
    data["workspace"] = str(dst)
    lin.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    old, new = project_key(src), project_key(dst)
    con = sqlite3.connect(dst / "runs" / "sessions.db")
    with con:
        for table, col in (("entries", "store_key"), ("meta", "store_key"),
                           ("summaries", "project_key")):
            con.execute(f"UPDATE {table} SET {col} = ? || substr({col}, ?)",
                        (new, len(old) + 1))
    con.close()


def _immutable(folder: Path) -> bool:
    """chattr +i (holds for root); False when the filesystem or capabilities refuse."""
    try:
        ok = subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode == 0
    except OSError:
        return False
    return ok


def break_file(path: Path, kind: str) -> tuple[bytes | None, Path | None]:
    """Break ``path`` in place; returns (the bytes it now holds, the folder made read-only)."""
    original = path.read_bytes()
    if kind == "empty":
        data = b""
    elif kind == "truncated":
        data = original[: max(1, len(original) // 2)]
    elif kind == "not-utf8":
        data = b"\xff\xfe\x80" + original[:200] + b"\xc3\x28\xa0\xa1"
    elif kind == "garbage":
        data = b"\x00\x01 this is {{ not [ what you think \x7f" * 20
    elif kind == "directory":
        path.unlink()
        path.mkdir()
        (path / "keep").write_bytes(b"inside")
        return None, None
    else:
        data = original
    path.write_bytes(data)
    if kind == "unreadable":
        path.chmod(0)
    if kind == "readonly-folder":
        folder = path.parent
        if not _immutable(folder):
            folder.chmod(0o555)
        return data, folder
    return data, None


def unlock(folder: Path | None) -> None:
    if folder is None:
        return
    subprocess.run(["chattr", "-i", str(folder)], capture_output=True)
    folder.chmod(0o755)


def _writable(folder: Path) -> bool:
    probe = folder / ".chaos-probe"
    try:
        probe.write_bytes(b"")
    except OSError:
        return False
    probe.unlink()
    return True


def _readable(path: Path) -> bool:
    try:
        path.read_bytes()
    except OSError:
        return False
    return True


def kept(path: Path, data: bytes | None) -> bool:
    """The broken file is still there byte for byte, or moved aside intact."""
    if data is None:  # the directory, where it was or moved aside
        return any(p.is_dir() and (p / "keep").read_bytes() == b"inside"
                   for p in [path, *path.parent.glob(path.name + ".corrupt-*")])
    if path.is_file() and path.read_bytes() == data:
        return True
    return any(p.read_bytes() == data for p in path.parent.glob(path.name + ".corrupt-*"))


def effective(kind: str, *, readable: bool, folder_writable: bool) -> str:
    if kind == "unreadable" and readable:
        return "intact"  # root: chmod 000 stops nothing
    if kind == "readonly-folder" and folder_writable:
        return "intact"  # chmod 555 as root stops nothing either
    return kind


def expected(name: str, kind: str) -> int:
    """The exit code a correct flower gives (``kind`` as it really acts)."""
    if name == "sessions.db" and kind in ("truncated", "not-utf8", "garbage", "directory"):
        return 1  # the transcripts are refused untouched
    if kind == "readonly-folder" and name in ("manifest.json", "lineage.json", "sessions.db"):
        return 1  # the store cannot be written: one line, before anything is spent
    return 0


@pytest.mark.parametrize("name", FILES)
def test_bad_state_file(name: str, finished: Path, fake: FakeServer, tmp_path: Path,
                        home: Path, cli_env: dict[str, str]) -> None:
    router = Router()
    fake.fallback(router)
    cases = {}
    enter = tmp_path / "enter"
    enter.write_bytes(b"\n")
    try:
        for kind in KINDS:
            ws = tmp_path / kind
            relocate(finished, ws)
            router.add(ws)
            chome = tmp_path / f"home-{kind}"
            (chome / ".claude").mkdir(parents=True)
            (chome / ".config" / "flower").mkdir(parents=True)
            (chome / ".config" / "flower" / ".windows").write_text(
                json.dumps({"http://elsewhere|m": 123456}) + "\n")
            (ws / ".env").write_text("FLOWER_CHAOS_MARK=1\n")
            path = _where(ws, chome, name)
            data, folder = break_file(path, kind)
            # the work step alone proves "carries on" (one CLI): no judge and no closing
            # handover (a second CLI, newer than this matrix, that only repeats the work
            # step's manifest row and stored session). Brief and goal keep both: the judge
            # and the handover read them again. The ask is retyped only when the brief
            # itself is broken (on a good brief it would be a new remark, amended into it)
            readable = _readable(path) if kind == "unreadable" else True
            writable = _writable(folder) if folder is not None else True
            really = effective(kind, readable=readable, folder_writable=writable)
            args = ["--timeout", "0",
                    *(["--no-goal", "--no-bequest"] if name not in GOAL_FILES else []),
                    *([ASK] if name == "需求.md" and really in BROKEN else [])]
            # the Enter is there from the start: typed only when communicate() reached this
            # process, each run waited for the one before and the seven ran one by one
            with enter.open("rb") as typed:
                proc = subprocess.Popen([sys.executable, "-m", "flower", *args], cwd=ws,
                                        env=_env(chome, fake.url), stdin=typed,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True)
            cases[kind] = (ws, path, data, folder, proc, really)
        outcomes = {}
        for kind, (*_, proc, _really) in cases.items():
            out, _ = proc.communicate(timeout=150)
            outcomes[kind] = (proc.returncode, out)
    finally:
        for _ws, path, _data, folder, proc, _really in cases.values():
            if proc.poll() is None:
                proc.kill()
            unlock(folder)
            if path.exists() and not path.is_dir():
                path.chmod(stat.S_IRUSR | stat.S_IWUSR)
    problems = [f"unrouted: {m!r}" for m in router.missed[:1]]
    for kind, (rc, out) in outcomes.items():
        ws, path, data, _folder, _proc, really = cases[kind]
        want = expected(name, really)
        tail = out.strip().splitlines()[-3:]
        if "Traceback" in out:
            problems.append(f"{kind}: traceback {tail}")
        if rc != want:
            problems.append(f"{kind}: exit {rc}, want {want}: {tail}")
        elif rc == 1 and not any(line.startswith("x ") for line in out.splitlines()):
            problems.append(f"{kind}: exit 1 without a readable line: {tail}")
        if really == "intact" or (name == "sessions.db" and really == "empty"):
            # a good file is updated as usual (an empty sessions.db holds nothing: SQLite
            # makes it a fresh database); it must still be good
            if path.suffix == ".json" and path.parent.name == "runs":
                json.loads(path.read_text(encoding="utf-8"))
        elif not kept(path, data):
            problems.append(f"{kind}: the broken {name} was overwritten")
        if rc == 0 and "<li>" not in (ws / "sample.html").read_text(encoding="utf-8"):
            problems.append(f"{kind}: exit 0 but the job is not done")
        if rc == 0:  # whatever it carried on with is well-formed
            for p in (ws / "runs").glob("*.json"):
                if p.is_file():
                    json.loads(p.read_text(encoding="utf-8"))
        if rc == 0 and name == "lineage.json" and really in BROKEN[:4]:  # started fresh
            assert json.loads((ws / "runs" / "lineage.json").read_text())["woke"] == 1
        if rc == 0 and name in GOAL_FILES and "已达成" not in out:
            problems.append(f"{kind}: exit 0 without the judge's 已达成")
    assert not problems, "\n".join(problems)


def test_frozen_document_refused_by_the_disk_is_one_line(finished: Path, fake: FakeServer,
                                                         tmp_path: Path, home: Path,
                                                         cli_env: dict[str, str]) -> None:
    """A new remark re-derives the goal, but notes/ is read-only: one readable line and
    exit 1 (it was a traceback), the old goal untouched (the remark itself is appended to
    the brief in place, which a read-only folder allows)."""
    ws = tmp_path / "ws"
    relocate(finished, ws)
    router = Router()
    router.add(ws)
    fake.fallback(router)
    notes = ws / ".flower" / "notes"
    goal = (notes / "目标.md").read_bytes()
    if not _immutable(notes):
        pytest.skip("chattr +i is not available: root writes through chmod")
    try:
        out = subprocess.run([sys.executable, "-m", "flower", "--timeout", "0", "顺便支持粗体"],
                             cwd=ws, env=_env(home, fake.url), capture_output=True, text=True,
                             timeout=120)
    finally:
        unlock(notes)
    assert "Traceback" not in out.stdout + out.stderr
    assert out.returncode == 1, out.stdout + out.stderr
    assert [line for line in out.stdout.splitlines() if line.startswith("x ")]
    assert (notes / "目标.md").read_bytes() == goal
