"""What the CLI knows about a folder before it starts: is there a run to continue?

``wake_state`` is a strictly read-only probe — it runs before the user has decided
anything, so it must not bump the wake counter, create ``runs/``, move a corrupt lineage
aside or leave SQLite side files next to ``sessions.db``. With a PostgreSQL store
(``--store`` / ``FLOWER_STORE_URL``) it reads the store's run book and sessions over one
read-only connection instead: an empty folder on another machine sees the run it wakes.
``wake_banner`` turns its answer into the one line that makes "does it remember?" visible.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flower import texts
from flower.core.brief import Brief
from flower.core.checklist import Goal
from flower.core.lineage import Lineage
from flower.core.paths import project_key
from flower.core.workbench import Workbench
from flower.stores.readers import DB_NAME, NoSessions, Reader, SqliteReader, connect_ro
from flower.usage import human_tokens

_SCAN_LIMIT = 500  # entries walked back from the end looking for the last real API call


# --- the store, read-only (flower/stores/readers.py) ---------------------------------

_connect_ro = connect_ro  # a module-level name, so a test can stand in for a locked store


def _sqlite_info(
    db: Path, ws: Path, steps: dict[str, str], work_step: str
) -> tuple[dict[str, str], str | None, int | None]:
    """:func:`_session_info` on ``sessions.db``. An empty or foreign file holds no
    sessions; a file that cannot be opened right now hides nothing (every step live)."""
    if not steps or not db.is_file():
        return {}, None, None
    try:
        con = _connect_ro(db)
    except NoSessions:
        return {}, None, None
    if con is None:
        return dict(steps), None, None
    reader = SqliteReader(con)
    try:
        return _session_info(reader, project_key(ws), steps, work_step, adopt=False)
    finally:
        reader.close()


def _session_info(
    reader: Reader, pk: str, steps: dict[str, str], work_step: str, *, adopt: bool
) -> tuple[dict[str, str], str | None, int | None]:
    """``(live steps, step measured, its last context)`` from the store.

    A step is live when its session is stored under this project key — or, with ``adopt``
    (a shared PostgreSQL store), under exactly one other key, which Runtime adopts before
    resuming. Measured: the work step if live, else the step whose session was written
    last. A store that fails mid-read hides nothing: every step counts as live, no context.
    """
    if not steps:
        return {}, None, None
    try:
        live: dict[str, str] = {}
        keys: dict[str, str] = {}
        mtimes: dict[str, int] = {}
        for step, sid in steps.items():
            mine = f"{pk}/{sid}"
            if adopt:
                owners = reader.owners(sid)
                pick = [o for o in owners if o[0] == mine] or (owners if len(owners) == 1
                                                                else [])
            else:
                mtime = reader.mtime(mine)  # the test SqliteSessionStore.has_session makes
                pick = [(mine, mtime)] if mtime is not None else []
            if pick:
                live[step], (keys[step], mtimes[step]) = sid, pick[0]
        if not live:
            return {}, None, None
        step = work_step if work_step in live else max(live, key=lambda s: mtimes[s])
        return live, step, reader.last_context(keys[step], scan=_SCAN_LIMIT)
    except reader.errors:
        return dict(steps), None, None


# --- frozen documents -----------------------------------------------------------------


def brief_complete(path: Path) -> bool:
    """Is the frozen brief there with all four sections filled in?"""
    brief = Brief.load(path)
    return brief is not None and brief.complete()


def count_checks(path: Path) -> int:
    """Number of items in the goal's checklist (0 when there is no goal file)."""
    goal = Goal.load(path)
    return len(goal.checks) if goal is not None else 0


# --- public ---------------------------------------------------------------------------


def wake_state(
    workspace: str | Path = ".",
    *,
    run_dir: str | Path = "runs",
    isolate: bool = False,
    brief_name: str = "需求.md",
    goal_name: str = "目标.md",
    work_step: str = texts.WORK_STEP,
    store: str | None = None,
    run: str | None = None,
) -> dict[str, Any]:
    """Read-only look at a folder: is there something to continue, and how big is it?

    Keys (those the original flower returns first, then what the banner needs):

    - ``waking``: continuing, not starting — the brief is frozen and complete, or a step
      of this workspace has a session that is still in ``sessions.db`` (so a run killed
      mid-clarification wakes too);
    - ``brief`` / ``goal``: paths of the frozen documents (``isolate`` must match
      ``starter_flow``'s, it decides the workbench location);
    - ``checks``: goal checklist length (0 without a goal); ``woke``: wakes so far;
      ``steps``: copy of the lineage mapping;
    - ``brief_ok``: the brief is complete; ``live_steps``: steps whose session is still
      stored; ``context``: tokens in the last API call of the work step's session (else
      of the most recently written step), ``None`` if unknown; ``context_step``: which
      step that was; ``workspace``; ``workbench`` (root path); ``remote``: the run name
      when the lineage came from a shared store's run book (else ``None``).

    ``store`` (default: ``FLOWER_STORE_URL``) and ``run`` (default: ``FLOWER_RUN``, else
    the folder's name) say where a PostgreSQL store keeps this run.
    """
    ws = Path(workspace).resolve()
    wb = Workbench.for_workspace(ws, isolate=isolate)
    brief, goal = wb.notes / brief_name, wb.notes / goal_name
    probe = _probe(ws, store, run)
    try:
        lin = Lineage.peek(run_dir, ws, book=probe)
        if probe is not None:
            live, ctx_step, context = _session_info(probe.reader, project_key(ws), lin.steps,
                                                    work_step, adopt=True)
        else:
            live, ctx_step, context = _sqlite_info(Path(run_dir) / DB_NAME, ws, lin.steps,
                                                   work_step)
    finally:
        if probe is not None:
            probe.close()
    brief_ok = brief_complete(brief)
    return {
        "waking": brief_ok or bool(live),
        "brief": brief,
        "goal": goal,
        "checks": count_checks(goal),
        "woke": lin.woke,
        "steps": dict(lin.steps),
        "brief_ok": brief_ok,
        "live_steps": live,
        "context": context,
        "context_step": ctx_step,
        "workspace": ws,
        "workbench": wb.root,
        "remote": probe.name if probe is not None and lin.remote else None,
    }


def _probe(ws: Path, store: str | None, run: str | None) -> Any:
    """A read-only :class:`~flower.stores.readers.RunProbe` when the store is PostgreSQL
    and can be read; None otherwise (SQLite: the probe reads ``sessions.db`` as always)."""
    from flower.stores.url import configured_url, is_postgres_url

    url = configured_url(store)
    if not is_postgres_url(url):
        return None
    from flower.stores.book import run_name
    from flower.stores.readers import RunProbe

    return RunProbe.open(url or "", run_name(ws, run))


def _home_relative(p: Path) -> str:
    try:
        home = Path.home().resolve()
    except (OSError, RuntimeError):
        return str(p)
    if p == home:
        return "~"
    return f"~/{p.relative_to(home).as_posix()}" if p.is_relative_to(home) else str(p)


def wake_banner(state: dict[str, Any]) -> str:
    """The wake line, e.g. ``<- 在 ~/proj 接上上次  需求已确认 · 目标 15 条 · 干活上下文 80.2K
    · 第 3 次唤醒``. Unknown parts are left out; the ordinal is the number this run's wake
    takes (``woke + 1``), matching the step header shown later."""
    parts: list[str] = []
    if state.get("brief_ok"):
        parts.append(texts.WAKE_BRIEF_OK)
    if state.get("checks"):
        parts.append(texts.WAKE_CHECKS.format(n=state["checks"]))
    if state.get("context"):
        parts.append(texts.WAKE_CONTEXT.format(step=state.get("context_step") or texts.WORK_STEP,
                                               size=human_tokens(state["context"])))
    if state.get("remote"):
        parts.append(texts.WAKE_REMOTE.format(name=state["remote"]))
    if state.get("woke"):
        parts.append(texts.WAKE_ORDINAL.format(n=state["woke"] + 1))
    head = texts.WAKE_BANNER.format(where=_home_relative(Path(state["workspace"])))
    return f"{head}  {texts.WAKE_SEP.join(parts)}" if parts else head
