"""TrimmingSessionStore: expiry of stale look-ups and spilling of old bulk, on load only."""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flower import texts
from flower.stores.trim import EphemeralPolicy, TrimmingSessionStore, TrimPolicy, trim_report

from .conftest import Chain, key_of, recorded

KEY = {"project_key": "-p", "session_id": "sess-1"}


def _results(entries: list[dict]) -> list[dict]:
    return [b for e in entries if isinstance(e.get("message"), dict)
            and isinstance(e["message"].get("content"), list)
            for b in e["message"]["content"] if b.get("type") == "tool_result"]


def _rows(db: Path) -> list[tuple]:
    return sqlite3.connect(db).execute("SELECT * FROM entries ORDER BY seq").fetchall()


async def test_old_large_results_are_spilled_and_pointed_to(db: Path, ws: Path) -> None:
    c = Chain()
    c.prompt("go")
    bodies = [f"{i}:" + "x" * (2500 + i) for i in range(5)]
    for body in bodies:
        c.bash("cat big.log", body)
    c.bash("cat small", "tiny")
    store = TrimmingSessionStore(db, ws, policy=TrimPolicy(keep_recent=2))
    await store.append(KEY, c.entries)
    out = await store.load(KEY)
    res = _results(out)
    assert [r["content"] for r in res[3:]] == [bodies[3], bodies[4], "tiny"]  # newest kept
    for body, r in zip(bodies[:3], res[:3], strict=True):
        digest = hashlib.sha256(body.encode()).hexdigest()[:16]
        spill = ws / ".flower" / "spill" / f"{digest}.txt"
        assert r["content"] == texts.SPILL_POINTER.format(n=len(body), path=str(spill))
        assert "需要时用 Read 读取" in r["content"]
        assert spill.read_text() == body
        assert r["type"] == "tool_result" and r["tool_use_id"]  # the block stays
    assert store.last_report["cleared"] == 3 and store.last_report["kept"] == 2
    saved = sum(len(b) for b in bodies[:3]) - sum(len(r["content"]) for r in res[:3])
    assert store.last_report["chars_saved"] == saved
    assert trim_report(store) == f"裁掉 3 个工具结果(保留最近 2 个),省下 ~{saved // 4} tokens"
    assert not list((ws / ".flower" / "spill").glob(".spill-*"))  # no temp files left


async def test_sqlite_rows_are_never_modified(db: Path, ws: Path) -> None:
    c = Chain()
    c.prompt("go")
    for i in range(4):
        c.bash("git branch", f"On branch main {i}")
        c.bash("seq 1 9999", "9" * 3000 + str(i))
    store = TrimmingSessionStore(db, ws, TrimPolicy(keep_recent=0),
                                 EphemeralPolicy(keep_recent=0))
    await store.append(KEY, c.entries)
    before = _rows(db)
    original = copy.deepcopy(c.entries)
    out = await store.load(KEY)
    assert out != original and _rows(db) == before
    assert await TrimmingSessionStore(db, ws, TrimPolicy(enabled=False),
                                      EphemeralPolicy(enabled=False)).load(KEY) == original


def test_public_methods_never_mutate_their_input(ws: Path, tmp_path: Path) -> None:
    c = Chain()
    c.prompt("go")
    c.bash("ls", "a b c")
    c.bash("cat f", "y" * 5000)
    store = TrimmingSessionStore(tmp_path / "s.db", ws, TrimPolicy(keep_recent=0),
                                 EphemeralPolicy(keep_recent=0))
    snapshot = copy.deepcopy(c.entries)
    out = store.trim(store.expire(c.entries))
    assert c.entries == snapshot
    assert out != snapshot and store.last_report["expired"] == 1


async def test_ephemeral_results_expire_with_a_countdown(db: Path, ws: Path) -> None:
    c = Chain()
    c.prompt("go")
    cmds = ["git branch", "ls -la", "pwd && git log --no-show-signature --oneline -3",
            "git branch", "ps aux"]
    for i, cmd in enumerate(cmds):
        c.bash(cmd, f"out{i}")
    c.bash("npm test", "PASS")  # not ephemeral: never expires
    read = c.call("Read", {"file_path": "/x"})
    c.result(read, "file body")  # Read never expires
    store = TrimmingSessionStore(db, ws, ephemeral=EphemeralPolicy(keep_recent=2))
    await store.append(KEY, c.entries)
    res = [r["content"] for r in _results(await store.load(KEY))]
    assert res[:3] == [
        "[`git branch` 的结果已过期(第 5 轮前),当前状态可能已变。需要请重新执行]",
        "[`ls -la` 的结果已过期(第 4 轮前),当前状态可能已变。需要请重新执行]",
        "[`pwd && git log --no-show-signature --oneline -3` 的结果已过期(第 3 轮前),"
        "当前状态可能已变。需要请重新执行]",
    ]
    assert res[3:] == ["out3", "out4", "PASS", "file body"]
    assert store.last_report == {"expired": 3, "cleared": 0, "kept": 0, "chars_saved": 0}
    assert trim_report(store) == "3 个时效性结果标记为过期"
    assert not (ws / ".flower").exists()  # expired content is not spilled


def test_expiry_note_uses_the_first_line_cut_to_60_chars() -> None:
    note = EphemeralPolicy().placeholder("git log --format='%H " + "x" * 80 + "'\nmore", 7)
    assert note.startswith("[`git log --format='%H " ) and "more" not in note
    assert note.split("`")[1] == ("git log --format='%H " + "x" * 80)[:60]
    assert "(第 7 轮前)" in note


async def test_large_ephemeral_results_are_left_to_trim(db: Path, ws: Path) -> None:
    c = Chain()
    c.prompt("go")
    c.bash("cat huge.log", "z" * 3000)
    c.bash("ls", "small")
    store = TrimmingSessionStore(db, ws, TrimPolicy(keep_recent=0),
                                 EphemeralPolicy(keep_recent=0))
    await store.append(KEY, c.entries)
    res = [r["content"] for r in _results(await store.load(KEY))]
    assert res[0].startswith("[工具结果已归档:3000 字符") and "已过期" in res[1]
    assert store.last_report["expired"] == 1 and store.last_report["cleared"] == 1


async def test_protected_entries_images_and_short_results_untouched(db: Path, ws: Path) -> None:
    c = Chain()
    c.prompt("go")
    tid = c.call("Bash", {"command": "ls"})
    c.result(tid, "q" * 4000, isCompactSummary=True)
    tid = c.call("Bash", {"command": "git status"})
    c.result(tid, "meta body", isMeta=True)
    img = c.call("Read", {"file_path": "/a.png"})
    image = [{"type": "image", "source": {"type": "base64", "data": "A" * 9000}}]
    c.result(img, image)
    listed = c.call("Read", {"file_path": "/b"})
    c.result(listed, [{"type": "text", "text": "t" * 1500}, {"type": "text", "text": "u" * 1500}])
    store = TrimmingSessionStore(db, ws, TrimPolicy(keep_recent=0),
                                 EphemeralPolicy(keep_recent=0))
    await store.append(KEY, c.entries)
    res = _results(await store.load(KEY))
    assert res[0]["content"] == "q" * 4000 and res[1]["content"] == "meta body"
    assert res[2]["content"] == image
    spilled = ws / ".flower" / "spill"
    (only,) = spilled.glob("*.txt")  # the memo (.memo) sits beside the spill files
    assert only.read_text() == "t" * 1500 + "\n" + "u" * 1500  # text lists are joined
    assert res[3]["content"].startswith("[工具结果已归档:3001 字符")


async def test_nothing_to_do_reports_untrimmed(db: Path, ws: Path) -> None:
    c = Chain()
    c.prompt("hi")
    c.say("hello")
    store = TrimmingSessionStore(db, ws)
    await store.append(KEY, c.entries)
    assert await store.load(KEY) == c.entries
    assert trim_report(store) == "未裁剪"


async def test_subagent_loads_do_not_overwrite_the_report(db: Path, ws: Path) -> None:
    c = Chain()
    c.prompt("go")
    for i in range(3):
        c.bash("ls", f"{i}")
    store = TrimmingSessionStore(db, ws, ephemeral=EphemeralPolicy(keep_recent=0))
    await store.append(KEY, c.entries)
    await store.append({**KEY, "subpath": "subagents/agent-1"}, [{"type": "x"}])
    await store.load(KEY)
    await store.load({**KEY, "subpath": "subagents/agent-1"})
    assert store.last_report["expired"] == 3


def test_spill_dir_must_stay_inside_the_workspace(ws: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="leaves the workspace"):
        TrimmingSessionStore(tmp_path / "s.db", ws, TrimPolicy(spill_dirname="../elsewhere"))
    assert not (tmp_path / "s.db").exists()


async def test_unwritable_spill_dir_keeps_the_result_instead_of_failing(
        db: Path, ws: Path) -> None:
    (ws / ".flower").write_text("a file where the directory should be")
    c = Chain()
    c.prompt("go")
    c.bash("cat big", "b" * 5000)
    store = TrimmingSessionStore(db, ws, TrimPolicy(keep_recent=0))
    await store.append(KEY, c.entries)
    assert _results(await store.load(KEY))[0]["content"] == "b" * 5000
    assert store.last_report["cleared"] == 0 and store.last_report["kept"] == 1


async def test_recorded_transcript_spills_seq_and_expires_looks(db: Path, ws: Path) -> None:
    doc = recorded("tools")
    key = key_of(doc)
    store = TrimmingSessionStore(db, ws, TrimPolicy(keep_recent=1),
                                 EphemeralPolicy(keep_recent=1))
    await store.append(key, doc["main"])
    out = await store.load(key)
    text = json.dumps(out, ensure_ascii=False)
    assert "[`ls -la` 的结果已过期" in text
    # `git status` is a glance again (the glance runner switches off what the repository
    # could make it run), so its old result expires like `ls -la`
    assert "[`git status` 的结果已过期" in text
    assert "工具结果已归档" in text and store.last_report["cleared"] == 1
    assert len(out) == len(doc["main"])  # trim never removes entries
    assert [e.get("uuid") for e in out] == [e.get("uuid") for e in doc["main"]]


_CHILD = textwrap.dedent("""
    import json, sys
    import anyio
    from flower.stores import trimming
    from flower.stores.trim import TrimmingSessionStore, TrimPolicy

    written = []
    real = trimming.write_spill
    trimming.write_spill = lambda body, d: written.append(len(body)) or real(body, d)
    store = TrimmingSessionStore(sys.argv[1], sys.argv[2], policy=TrimPolicy(keep_recent=2))
    out = anyio.run(store.load, {"project_key": "-p", "session_id": "sess-1"})
    store.close()
    bodies = [b["content"] for e in out if isinstance(e.get("message"), dict)
              and isinstance(e["message"].get("content"), list)
              for b in e["message"]["content"] if b.get("type") == "tool_result"]
    print(json.dumps({"written": len(written), "bodies": bodies}))
""")


def _wake(db: Path, ws: Path) -> dict:
    """A fresh process's first resume of the session (what a wake does)."""
    done = subprocess.run([sys.executable, "-c", _CHILD, str(db), str(ws)],
                          capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout)


async def test_the_spill_memo_outlives_the_process_and_never_names_a_missing_file(
        db: Path, ws: Path) -> None:
    """A wake is a new process: its first resume must not hash every big result again, yet
    a spill file deleted in between is written again rather than pointed at."""
    c = Chain()
    c.prompt("go")
    bodies = [f"{i}:" + "y" * (2500 + i) for i in range(8)]
    for body in bodies:
        c.bash("cat big.log", body)
    store = TrimmingSessionStore(db, ws, policy=TrimPolicy(keep_recent=2))
    await store.append(KEY, c.entries)
    store.close()
    spill = ws / ".flower" / "spill"

    def pointers(got: dict) -> None:
        for body, shown in zip(bodies[:6], got["bodies"][:6], strict=True):
            path = spill / f"{hashlib.sha256(body.encode()).hexdigest()[:16]}.txt"
            assert shown == texts.SPILL_POINTER.format(n=len(body), path=str(path))
            assert path.read_text() == body
        assert got["bodies"][6:] == bodies[6:]

    first = _wake(db, ws)
    assert first["written"] == 6
    pointers(first)
    assert _wake(db, ws)["written"] == 0  # remembered: nothing hashed, nothing written

    gone = spill / f"{hashlib.sha256(bodies[3].encode()).hexdigest()[:16]}.txt"
    gone.unlink()
    with (spill / ".memo").open("ab") as fh:
        fh.write(b"0123456789abcdef.txt 0 12 torn-by-a-kil")  # a write cut off mid-line
    again = _wake(db, ws)
    assert again["written"] == 1  # the deleted one, and only it
    pointers(again)
    assert _wake(db, ws)["written"] == 0

    shutil.rmtree(spill)  # the whole directory gone: everything is written again
    pointers(last := _wake(db, ws))
    assert last["written"] == 6


async def test_a_spill_file_deleted_while_the_process_lives_is_written_again(
        db: Path, ws: Path) -> None:
    c = Chain()
    c.prompt("go")
    bodies = [f"{i}:" + "w" * 3000 for i in range(4)]
    for body in bodies:
        c.bash("cat big.log", body)
    store = TrimmingSessionStore(db, ws, policy=TrimPolicy(keep_recent=1))
    await store.append(KEY, c.entries)
    await store.load(KEY)
    files = sorted((ws / ".flower" / "spill").glob("*.txt"))
    assert len(files) == 3
    files[0].unlink()
    await store.load(KEY)
    assert all(f.is_file() for f in files)
    store.close()


@given(st.text(min_size=1, max_size=300), st.binary(max_size=300))
def test_a_spill_file_planted_under_a_results_name_is_written_over(body: str,
                                                                   planted: bytes) -> None:
    """Spill files are named by their content's hash, so a name can be predicted and a file
    planted under it before the result spills: it is believed only with the result's very
    bytes, else written anew — the pointer never leads to someone else's text."""
    import tempfile

    from flower.stores.trimming import write_spill

    data = body.encode("utf-8", "surrogatepass")
    with tempfile.TemporaryDirectory() as d:
        name = hashlib.sha256(data).hexdigest()[:16] + ".txt"
        Path(d, name).write_bytes(planted)
        path = write_spill(body, d)
        assert path == str(Path(d, name)) and Path(path).read_bytes() == data


async def test_a_forged_memo_line_points_no_result_at_another_file(db: Path, ws: Path) -> None:
    """The memo lies where an agent could write: a line that sends one result's pointer to
    another result's file (every other field right; the seal cannot be made without the
    key) is not believed — the next wake hashes that result and points at its own file."""
    c = Chain()
    c.prompt("go")
    bodies = [f"{i}:" + "z" * (2500 + i) for i in range(5)]
    for body in bodies:
        c.bash("cat big.log", body)
    store = TrimmingSessionStore(db, ws, policy=TrimPolicy(keep_recent=2))
    await store.append(KEY, c.entries)
    store.close()
    spill = ws / ".flower" / "spill"
    names = [f"{hashlib.sha256(b.encode()).hexdigest()[:16]}.txt" for b in bodies]
    assert _wake(db, ws)["written"] == 3  # (the child keeps the newest two)
    memo = spill / ".memo"
    text = memo.read_text()
    assert names[0] in text and names[1] in text
    memo.write_text(text.replace(names[0], names[1], 1))
    got = _wake(db, ws)
    assert got["written"] == 1  # that one result hashed again (its file was there)
    path = spill / names[0]
    assert got["bodies"][0] == texts.SPILL_POINTER.format(n=len(bodies[0]), path=str(path))
