"""The workbench: a shared folder where agents keep what is worth more than one look.

Layout under ``root``: ``scripts/`` (things to run again; first line ``# desc: …``),
``artifacts/`` (outputs over 2000 chars), ``notes/`` (one decision per file; also the
frozen brief/goal), ``spill/`` (big tool results) and a generated ``INDEX.md``.

Three places it can live (pass one shared instance around — a brief written into one
and an index scanning another is the classic mistake):

* ``Workbench(ws)`` → ``<ws>/.flower`` (the CLI / ``starter_flow`` / ``wake_state``);
* ``Workbench.for_runtime(ws, run_dir)`` → ``<run_dir>/workbench`` (``Runtime(workbench=True)``);
* ``Workbench.isolated(ws)`` → ``<ws.parent>/.flower-<ws.name>`` (``--isolate``: worktrees are
  private copies, the workbench is the layer agents share, so it must sit outside the repo;
  paths shown to the model are then absolute).

Where the index goes — decision: **the first user message of each new session**, not the
system prompt.

* Prompt caching: the system prompt is the head of the cache prefix. The index changes
  every time a file lands, so in the system prompt it would invalidate the cached prefix
  — the whole conversation — on the next call of every resumed session (measured in the
  original flower: 3.7× the cost of the same request). Placed in the first user message it
  is part of the history: written once, then cached like any other turn.
* Not re-sent on resume: the session already holds it, and ``INDEX.md`` (path named in
  the block) is kept fresh on disk. A handoff successor is a new session and gets a fresh
  block.
* Subagents do not see it either way (session-level system-prompt append is not inherited,
  nor is the parent's user message), so the coordinator must relay the artifacts rule and
  the workbench path in each task brief (the original flower's rule, kept).

Contract for the Runtime: for a *new* session (no ``resume``) of a spec that wants the
workbench, send ``inject_index(prompt, wb.prompt_block())`` instead of ``prompt``; for a
resumed session send ``prompt`` unchanged. Call ``wb.refresh()`` before each step.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from flower import texts
from flower.core.paths import atomic_write
from flower.core.privacy import is_private, private_mkdir

DESC_LINES = 8  # a `# desc:` line counts only within the first lines of a file
FALLBACK_LINES = 40  # how far to look for a comment/docstring when there is no desc line
DESC_MAX = 100
_HEAD_BYTES = 8192

_MARK = r"(?:#+|//+|--+)"
_DESC = re.compile(rf"^\s*{_MARK}\s*desc\s*[:：]\s*(.*?)\s*$", re.IGNORECASE)
_COMMENT = re.compile(rf"^\s*{_MARK}\s*(.*?)\s*$")
_DOC = re.compile(r"""^\s*[rRuUbBfF]{0,2}(\"\"\"|''')(.*)$""")
_NOISE = re.compile(r"^(!|-\*-|vim?:|[-=#/*\s]*$)")  # shebang, coding line, rulers


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= DESC_MAX else text[: DESC_MAX - 1] + "…"


def describe(path: Path) -> str:
    """One-line description of a file: its ``# desc:`` line (also ``//`` / ``--``, either
    colon width, any case) within the first 8 lines; else the first comment line or
    docstring line; else ``""``. Binary and unreadable files have none."""
    try:
        with open(path, "rb") as f:
            head = f.read(_HEAD_BYTES)
    except OSError:
        return ""
    if b"\0" in head:
        return ""
    lines = head.decode("utf-8", errors="replace").splitlines()
    for line in lines[:DESC_LINES]:
        m = _DESC.match(line)
        if m and m.group(1):
            return _clip(m.group(1))
    rest = iter(lines[:FALLBACK_LINES])
    for line in rest:
        doc = _DOC.match(line)
        if doc:
            quote, body = doc.groups()
            body = body.split(quote)[0].strip()
            if not body:  # """ on its own line: the summary is the next non-empty line
                body = next((s.split(quote)[0].strip() for s in rest if s.strip()), "")
            if body:
                return _clip(body)
            continue
        m = _COMMENT.match(line)
        if m and m.group(1) and not _NOISE.match(m.group(1)) and not _DESC.match(line):
            return _clip(m.group(1))
    return ""


def human_size(n: int) -> str:
    """Sizes as the index shows them: ``512B``, ``1.2K``, ``3.4M``."""
    if n < 1024:
        return f"{n}B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f}K"
    return f"{n / (1024 * 1024):.1f}M"


def inject_index(prompt: str, block: str) -> str:
    """Put the workbench ``block`` in front of a new session's first ``prompt``.

    The task stays last (where it is read most carefully). Empty block → prompt
    unchanged; a prompt that already carries a block is not given a second one.
    """
    if not block.strip() or texts.WB_INJECT_OPEN in prompt:
        return prompt
    return f"{texts.WB_INJECT_OPEN}\n{block.strip()}\n{texts.WB_INJECT_CLOSE}\n\n{prompt}"


#: What says a file is the one described last time: (mtime_ns, size, inode).
_Stamp = tuple[int, int, int]


@dataclass
class Workbench:
    """A workbench rooted at ``home`` if given, else ``<workspace>/<dirname>``.

    Descriptions are read once per file version: a refresh runs on every attempt and
    after every ``Write`` into the workbench, so with thousands of files reopening each
    one every time would cost files × writes. Per scanned folder it keeps each file's
    (mtime_ns, size, inode) and description; a file not found by the latest scan drops out.
    """

    workspace: Path
    dirname: str = ".flower"
    max_index_entries: int = 40
    home: Path | None = None
    _descs: dict[Path, dict[str, tuple[_Stamp, str]]] = field(
        default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.workspace = Path(self.workspace).resolve()
        if self.home is not None:
            self.home = Path(self.home).resolve()

    # --- the three locations ---------------------------------------------------------

    @classmethod
    def for_runtime(cls, workspace: str | Path, run_dir: str | Path) -> Workbench:
        """``Runtime(workbench=True)``: ``<run_dir>/workbench`` (run_dir is CWD-relative)."""
        return cls(Path(workspace), home=Path(run_dir) / "workbench")

    @classmethod
    def isolated(cls, workspace: str | Path) -> Workbench:
        """``--isolate``: ``<ws.parent>/.flower-<ws.name>``, outside the repo's worktrees."""
        ws = Path(workspace).resolve()
        return cls(ws, home=ws.parent / f".flower-{ws.name}")

    @classmethod
    def for_workspace(cls, workspace: str | Path, *, isolate: bool = False) -> Workbench:
        """The CLI's rule, shared by ``starter_flow`` and ``wake_state`` so they agree."""
        return cls.isolated(workspace) if isolate else cls(Path(workspace))

    # --- paths -----------------------------------------------------------------------

    @property
    def root(self) -> Path:
        return self.home if self.home is not None else self.workspace / self.dirname

    @property
    def external(self) -> bool:
        """True when the root is outside the workspace (the model then needs absolute paths)."""
        return not self.root.is_relative_to(self.workspace)

    @property
    def scripts(self) -> Path:
        return self.root / "scripts"

    @property
    def artifacts(self) -> Path:
        return self.root / "artifacts"

    @property
    def notes(self) -> Path:
        return self.root / "notes"

    @property
    def spill(self) -> Path:
        return self.root / "spill"

    @property
    def index_path(self) -> Path:
        return self.root / "INDEX.md"

    def show(self, p: str | Path) -> str:
        """How the model should see ``p``: workspace-relative inside, absolute outside."""
        p = Path(p)
        if not p.is_absolute():
            p = self.workspace / p
        if not self.external and p.is_relative_to(self.workspace):
            return p.relative_to(self.workspace).as_posix()
        return str(p)

    # --- disk ------------------------------------------------------------------------

    def ensure(self) -> Workbench:
        """Create the four folders and the index; returns ``self`` for chaining."""
        # a workbench kept in a private run dir is private too (handoffs, spills go here)
        private = is_private(self.root.parent) or (self.root.is_dir() and is_private(self.root))
        for d in (self.root, self.scripts, self.artifacts, self.notes, self.spill):
            if private:
                private_mkdir(d)
            else:
                d.mkdir(parents=True, exist_ok=True)
        self.refresh()
        return self

    def scan(self, d: Path) -> list[tuple[str, str, int]]:
        """``(shown path, description, bytes)`` for every file under ``d``, sorted.

        Dot-files are skipped (editors' swap files, our own temp files), and so is
        ``archive/`` directly under ``d``: archived briefs and handoffs are history, not
        something to build on. Symlinked folders are not entered; a symlinked file counts.
        Plain strings, not ``Path`` objects: with thousands of files pathlib was most of it.
        """
        if not d.is_dir():
            self._descs.pop(d, None)
            return []
        known = self._descs.get(d, {})
        fresh: dict[str, tuple[_Stamp, str]] = {}
        found: list[tuple[tuple[str, ...], str, str, int]] = []
        base = str(d)
        for top, dirs, files in os.walk(base):
            parts = () if top == base else tuple(os.path.relpath(top, base).split(os.sep))
            dirs[:] = [n for n in dirs if not n.startswith(".") and (parts or n != "archive")]
            for name in files:
                if name.startswith(".") or (not parts and name == "archive"):
                    continue
                path = os.path.join(top, name)
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                if not stat.S_ISREG(st.st_mode):
                    continue
                stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
                kept = known.get(path)
                desc = kept[1] if kept is not None and kept[0] == stamp else describe(Path(path))
                fresh[path] = (stamp, desc)
                found.append(((*parts, name), path, desc, st.st_size))
        self._descs[d] = fresh  # deleted files are gone from it
        found.sort(key=lambda item: item[0])  # as sorted(Path) orders: part by part
        prefix = self.show(d)
        return [("/".join(rel) if prefix == "." else f"{prefix}/{'/'.join(rel)}", desc, size)
                for rel, _path, desc, size in found]

    def _sections(self) -> list[tuple[str, Path, list[tuple[str, str, int]]]]:
        dirs = (self.scripts, self.artifacts, self.notes)
        return [(t, d, self.scan(d)) for t, d in zip(texts.WB_SECTIONS, dirs, strict=True)]

    @staticmethod
    def _entry(item: tuple[str, str, int]) -> str:
        path, desc, size = item
        return texts.WB_ENTRY.format(path=path, desc=desc or texts.WB_NO_DESC,
                                     size=human_size(size))

    def render_index(self) -> str:
        """The full ``INDEX.md`` text (no cap: it is a file, read on demand)."""
        lines = [texts.WB_INDEX_TITLE, "", texts.WB_INDEX_NOTE.format(root=self.show(self.root))]
        for title, _d, items in self._sections():
            lines += ["", f"## {title} ({len(items)})"]
            lines += [self._entry(i) for i in items] or [texts.WB_EMPTY]
        return "\n".join(lines) + "\n"

    def refresh(self) -> str:
        """Regenerate ``INDEX.md`` and return its text.

        Written atomically and only when the content changed, so a refresh per tool call
        costs no churn. A disk that refuses the write does not break the run.
        """
        text = self.render_index()
        try:
            current = self.index_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            current = None
        if current != text:
            try:
                atomic_write(self.index_path, text)
            except OSError:
                pass
        return text

    def prompt_block(self) -> str:
        """The short section the main agent gets (see module docstring for where).

        Each category is capped at ``max_index_entries``; the rest collapses into one
        "… N more, ls <dir>" line. Reads the disk, writes nothing.
        """
        cap = max(0, self.max_index_entries)
        lines = [
            texts.WB_BLOCK_TITLE,
            texts.WB_BLOCK_HEAD.format(root=self.show(self.root) + "/",
                                       index=self.show(self.index_path)),
        ]
        for title, d, items in self._sections():
            lines += ["", f"{title} ({len(items)}):"]
            lines += [self._entry(i) for i in items[:cap]] if items else [texts.WB_BLOCK_EMPTY]
            if len(items) > cap:
                lines.append(texts.WB_BLOCK_MORE.format(n=len(items) - cap, dir=self.show(d)))
        lines += ["", texts.WB_RULES.format(scripts=self.show(self.scripts) + "/",
                                            artifacts=self.show(self.artifacts) + "/",
                                            notes=self.show(self.notes) + "/")]
        if self.external:
            lines.append(texts.WB_EXTERNAL)
        return "\n".join(lines)
