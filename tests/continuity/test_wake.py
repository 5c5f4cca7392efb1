"""wake_state: what the CLI learns before it starts — and it must write nothing."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from flower import texts
from flower.core.lineage import FILENAME, Lineage
from flower.core.paths import project_key
from flower.workflow.wake import count_checks, human_tokens, wake_banner, wake_state

from .store_kit import assistant, synthetic_error, user, write_store

WORK = "47395075-bec7-466e-80cd-f4d60b360235"
CLARIFY = "601c8c91-6c4b-4525-8a5f-295b99bf9515"
GOAL = "9a1d2c3e-0000-4000-8000-000000000003"

BRIEF = """# 需求确认书

## 目标
写个 md 转 html 的脚本

## 验收标准
示例文件转出来和预期一致

## 边界
不引入第三方依赖

## 未知与假设
假设只处理 CommonMark 子集
"""


def goal_doc(n: int) -> str:
    items = "\n".join(f"- 第 {i} 条可以当场验证" for i in range(1, n + 1))
    return f"# 目标\n把 md 转成 html\n\n# 判定清单\n{items}\n"


@pytest.fixture
def home_ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace under a scratch HOME, with the CWD in it (runs/ is CWD-relative)."""
    home = tmp_path / "home"
    ws = home / "explore" / "test-ide"
    ws.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(ws)
    return ws


def work_transcript() -> list[dict]:
    return [
        user("u1", None, "照这份需求做"),
        assistant("a1", "u1", inp=30_000, read=0, create=1_200),
        user("u2", "a1", "继续"),
        assistant("a2", "u2", inp=1_000, read=75_000, create=4_200, text="done"),  # 80.2K
        synthetic_error("a3", "a2"),  # the outage message is the leaf; not the context
    ]


def finished_run(ws: Path, *, woke: int = 2, wal: bool = True) -> Path:
    """What a previous `flower` run leaves behind: brief, goal, lineage, sessions.db."""
    notes = ws / ".flower" / "notes"
    notes.mkdir(parents=True)
    (notes / "需求.md").write_text(BRIEF, encoding="utf-8")
    (notes / "目标.md").write_text(goal_doc(15), encoding="utf-8")
    runs = ws / "runs"
    lin = Lineage.open(runs, ws)
    for _ in range(woke):
        lin.bump()
    lin.remember("确认需求", CLARIFY)
    lin.remember("设定目标", GOAL)
    lin.remember("干活", WORK)
    pk = project_key(ws)
    write_store(runs / "sessions.db", {
        f"{pk}/{CLARIFY}": [user("c1", None, "q"), assistant("c2", "c1", inp=9_000)],
        f"{pk}/{GOAL}": [user("g1", None, "q"), assistant("g2", "g1", inp=12_000)],
        f"{pk}/{WORK}": work_transcript(),
        # a subagent of the work session: much bigger, but not the main thread's context
        f"{pk}/{WORK}/subagents/agent-a99a6ce30a5471f44": [
            user("s1", None, "task"), assistant("s2", "s1", inp=500_000)],
    }, wal=wal)
    return runs


# --- empty folder -----------------------------------------------------------------------


def test_empty_folder(home_ws: Path, snapshot) -> None:
    before = snapshot(home_ws.parent)
    st = wake_state(".")
    assert st["waking"] is False
    assert (st["checks"], st["woke"], st["steps"], st["context"]) == (0, 0, {}, None)
    assert st["brief_ok"] is False and st["live_steps"] == {}
    assert st["brief"] == home_ws / ".flower" / "notes" / "需求.md"
    assert st["goal"] == home_ws / ".flower" / "notes" / "目标.md"
    assert st["workspace"] == home_ws and st["workbench"] == home_ws / ".flower"
    assert snapshot(home_ws.parent) == before
    assert not (home_ws / "runs").exists() and not (home_ws / ".flower").exists()


# --- after a run ------------------------------------------------------------------------


@pytest.mark.parametrize("wal", [True, False])
def test_after_a_run(home_ws: Path, wal: bool) -> None:
    finished_run(home_ws, woke=2, wal=wal)
    st = wake_state(".", run_dir="runs")
    assert st["waking"] is True and st["brief_ok"] is True
    assert st["checks"] == 15
    assert st["woke"] == 2
    assert st["steps"] == {"确认需求": CLARIFY, "设定目标": GOAL, "干活": WORK}
    assert st["live_steps"] == st["steps"]
    assert st["context"] == 80_200 and st["context_step"] == "干活"


def test_banner_after_a_run(home_ws: Path) -> None:
    finished_run(home_ws, woke=2)
    assert wake_banner(wake_state()) == (
        "<- 在 ~/explore/test-ide 接上上次  "
        "需求已确认 · 目标 15 条 · 干活上下文 80.2K · 第 3 次唤醒")


@pytest.mark.parametrize("wal", [True, False])
def test_wake_state_writes_nothing(home_ws: Path, snapshot, wal: bool) -> None:
    finished_run(home_ws, wal=wal)
    (home_ws / "runs" / FILENAME).read_bytes()
    before = snapshot(home_ws.parent)
    for _ in range(2):
        wake_state(".")
        wake_state(".", isolate=True)
    assert snapshot(home_ws.parent) == before  # no bump, no -wal/-shm, no mkdir


def test_reads_a_live_wal_without_leaving_files(home_ws: Path, snapshot) -> None:
    """A run still going in another terminal: its newest turn is only in the -wal file."""
    runs = finished_run(home_ws)
    writer = sqlite3.connect(runs / "sessions.db")
    try:
        writer.execute("PRAGMA wal_autocheckpoint=0")
        key = f"{project_key(home_ws)}/{WORK}"
        newest = assistant("a9", "a2", inp=2_000, read=98_000, create=1_000)
        writer.execute("INSERT INTO entries VALUES (?, 99, 'a9', ?)", (key, json.dumps(newest)))
        writer.commit()
        assert (runs / "sessions.db-wal").exists()
        before = snapshot(home_ws.parent)
        assert wake_state()["context"] == 101_000
        assert snapshot(home_ws.parent) == before
    finally:
        writer.close()


def test_corrupt_lineage_is_left_alone(home_ws: Path, snapshot) -> None:
    runs = home_ws / "runs"
    runs.mkdir()
    (runs / FILENAME).write_bytes(b"{torn")
    before = snapshot(home_ws.parent)
    st = wake_state()
    assert (st["waking"], st["steps"], st["woke"]) == (False, {}, 0)
    assert snapshot(home_ws.parent) == before


# --- partial states ---------------------------------------------------------------------


def test_sessions_db_deleted(home_ws: Path, snapshot) -> None:
    runs = finished_run(home_ws)
    (runs / "sessions.db").unlink()
    before = snapshot(home_ws.parent)
    st = wake_state()
    assert st["steps"] and st["live_steps"] == {} and st["context"] is None
    assert st["waking"] is True  # the frozen brief still makes it a wake
    assert not (runs / "sessions.db").exists()
    assert snapshot(home_ws.parent) == before
    assert "上下文" not in wake_banner(st)


def test_crash_inside_clarify_still_wakes(home_ws: Path) -> None:
    """Killed before 需求.md was frozen: the clarify session is on disk, so Enter continues it."""
    runs = home_ws / "runs"
    lin = Lineage.open(runs, home_ws)
    lin.bump()
    lin.remember("确认需求", CLARIFY)
    write_store(runs / "sessions.db", {
        f"{project_key(home_ws)}/{CLARIFY}": [user("c1", None, "q"),
                                               assistant("c2", "c1", inp=9_500)]})
    st = wake_state()
    assert st["waking"] is True and st["brief_ok"] is False and st["checks"] == 0
    assert (st["context"], st["context_step"]) == (9_500, "确认需求")
    assert wake_banner(st) == "<- 在 ~/explore/test-ide 接上上次  确认需求上下文 9.5K · 第 2 次唤醒"


def test_without_a_work_step_the_latest_written_session_is_measured(home_ws: Path) -> None:
    runs = home_ws / "runs"
    lin = Lineage.open(runs, home_ws)
    lin.remember("b", GOAL)
    lin.remember("a", CLARIFY)
    pk = project_key(home_ws)
    write_store(runs / "sessions.db", {
        f"{pk}/{GOAL}": [user("g1", None, "q"), assistant("g2", "g1", inp=2_222)],
        f"{pk}/{CLARIFY}": [user("c1", None, "q"), assistant("c2", "c1", inp=1_111)],
    }, mtimes={f"{pk}/{GOAL}": 1_800_000_000_000, f"{pk}/{CLARIFY}": 1_700_000_000_000})
    st = wake_state()
    assert (st["context_step"], st["context"]) == ("b", 2_222)


def test_a_session_with_only_an_outage_has_no_context(home_ws: Path) -> None:
    runs = home_ws / "runs"
    Lineage.open(runs, home_ws).remember("干活", WORK)
    write_store(runs / "sessions.db", {
        f"{project_key(home_ws)}/{WORK}": [user("u1", None, "go"), synthetic_error("e", "u1")]})
    st = wake_state()
    assert st["live_steps"] == {"干活": WORK} and st["context"] is None


def test_lineage_of_another_workspace_is_not_a_wake(home_ws: Path, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    Lineage.open(home_ws / "runs", other).remember("干活", WORK)
    st = wake_state()
    assert (st["waking"], st["steps"], st["woke"]) == (False, {}, 0)


def test_sessions_of_another_workspace_do_not_count(home_ws: Path, tmp_path: Path) -> None:
    """Same session id, but stored under another project key (the folder was copied)."""
    runs = home_ws / "runs"
    Lineage.open(runs, home_ws).remember("干活", WORK)
    write_store(runs / "sessions.db", {
        f"{project_key(tmp_path / 'old-place')}/{WORK}": work_transcript()})
    st = wake_state()
    assert st["live_steps"] == {} and st["waking"] is False


def test_run_dir_is_relative_to_the_cwd(home_ws: Path, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    finished_run(home_ws)
    monkeypatch.chdir(tmp_path)
    assert wake_state(home_ws)["steps"] == {}  # ./runs here is another folder
    assert wake_state(home_ws, run_dir=home_ws / "runs")["woke"] == 2


def test_isolate_looks_beside_the_repo(home_ws: Path) -> None:
    notes = home_ws.parent / ".flower-test-ide" / "notes"
    notes.mkdir(parents=True)
    (notes / "需求.md").write_text(BRIEF, encoding="utf-8")
    (notes / "目标.md").write_text(goal_doc(4), encoding="utf-8")
    st = wake_state(isolate=True)
    assert st["brief"] == notes / "需求.md" and st["brief_ok"] and st["checks"] == 4
    assert wake_state()["brief_ok"] is False  # the in-repo location has nothing


def test_custom_document_names(home_ws: Path) -> None:
    notes = home_ws / ".flower" / "notes"
    notes.mkdir(parents=True)
    (notes / "brief.md").write_text(BRIEF, encoding="utf-8")
    st = wake_state(brief_name="brief.md", goal_name="goal.md")
    assert st["brief_ok"] and st["goal"] == notes / "goal.md" and st["checks"] == 0


# --- the documents ----------------------------------------------------------------------


@pytest.mark.parametrize("missing", ["验收标准", "未知与假设"])
def test_incomplete_brief_is_not_confirmed(home_ws: Path, missing: str) -> None:
    notes = home_ws / ".flower" / "notes"
    notes.mkdir(parents=True)
    text = BRIEF.replace(f"## {missing}\n", f"## {missing}\n{texts.BRIEF_UNFILLED}\n\n## 杂项\n")
    (notes / "需求.md").write_text(text, encoding="utf-8")
    st = wake_state()
    assert st["brief_ok"] is False and st["waking"] is False


def test_brief_heading_forms(home_ws: Path) -> None:
    notes = home_ws / ".flower" / "notes"
    notes.mkdir(parents=True)
    (notes / "需求.md").write_text(
        "**目标**\n做 X\n目标:(重复的空段不覆盖)\n验收标准:能跑\n3. 边界\n别动 CI\n"
        "## 未知与假设\n无\n", encoding="utf-8")
    assert wake_state()["brief_ok"] is True


@pytest.mark.parametrize(("text", "n"), [
    (goal_doc(3), 3),
    ("# 目标\nX\n\n# 判定清单\n1. 一\n2、二\n3) 三\n", 3),
    ("# 目标\nX\n\n## 验收清单\n- [ ] 一\n- [x] 二\n", 2),
    ("# 目标\nX\n\n# 判定清单\n(空)\n", 0),
    ("# 目标\nX\n\n# 判定清单\n- 一 [此环境无法验证:没有 GPU]\n- 二\n\n# 备注\n- 不算\n", 2),
    ("随手写的\n- [ ] 一\n- [x] 二\n* [ ] 三\n", 3),
    ("# 目标\n只有目标\n", 0),
])
def test_count_checks(tmp_path: Path, text: str, n: int) -> None:
    p = tmp_path / "目标.md"
    p.write_text(text, encoding="utf-8")
    assert count_checks(p) == n


def test_count_checks_without_a_goal(tmp_path: Path) -> None:
    assert count_checks(tmp_path / "目标.md") == 0


# --- banner -----------------------------------------------------------------------------


def test_banner_leaves_out_what_is_unknown(tmp_path: Path) -> None:
    base = {"workspace": tmp_path, "brief_ok": False, "checks": 0, "context": None, "woke": 0}
    assert wake_banner(base) == f"<- 在 {tmp_path} 接上上次"
    assert wake_banner({**base, "brief_ok": True}) == f"<- 在 {tmp_path} 接上上次  需求已确认"
    assert wake_banner({**base, "woke": 1, "context": 512, "context_step": "干活"}) == (
        f"<- 在 {tmp_path} 接上上次  干活上下文 512 · 第 2 次唤醒")


def test_human_tokens() -> None:
    assert [human_tokens(n) for n in (999, 80_213, 185_900, 1_234_567)] == [
        "999", "80.2K", "185.9K", "1.2M"]


# --- against the real store -------------------------------------------------------------


async def test_reads_what_the_session_store_wrote(home_ws: Path, snapshot) -> None:
    """The file the Runtime's store writes, while it is still open and after it closed."""
    from flower.stores.sqlite import SqliteSessionStore

    runs = home_ws / "runs"
    lin = Lineage.open(runs, home_ws)
    lin.bump()
    lin.remember("干活", WORK)
    store = SqliteSessionStore(runs / "sessions.db")
    key = {"project_key": project_key(home_ws), "session_id": WORK}
    await store.append(key, work_transcript())
    await store.append({**key, "subpath": "subagents/agent-x"},
                       [user("s1", None, "t"), assistant("s2", "s1", inp=400_000)])
    try:
        before = snapshot(home_ws.parent)
        st = wake_state()
        assert snapshot(home_ws.parent) == before
        assert st["live_steps"] == {"干活": WORK} and st["context"] == 80_200
        assert store.has_session(key["project_key"], WORK)
        assert store.last_context(key["project_key"], WORK) == st["context"]
    finally:
        store.close()
    before = snapshot(home_ws.parent)
    assert wake_state()["context"] == 80_200
    assert snapshot(home_ws.parent) == before


@pytest.mark.parametrize("content", [b"", b"not a database at all" * 10])
def test_an_empty_or_foreign_sessions_db_holds_no_sessions(home_ws: Path, content: bytes) -> None:
    runs = home_ws / "runs"
    Lineage.open(runs, home_ws).remember("干活", WORK)
    (runs / "sessions.db").write_bytes(content)
    st = wake_state()
    assert st["live_steps"] == {} and st["waking"] is False
    assert (runs / "sessions.db").read_bytes() == content


def test_an_unreadable_store_hides_nothing(home_ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Locked or unopenable right now: the steps still count, only the number is unknown."""
    import flower.workflow.wake as wake_mod

    finished_run(home_ws)
    monkeypatch.setattr(wake_mod, "_connect_ro", lambda db: None)
    st = wake_state()
    assert st["live_steps"] == st["steps"] and st["context"] is None
