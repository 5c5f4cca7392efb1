"""The store modules import on their own and in one direction: each works as the first import
of a fresh process, the public paths scripts use keep working, and no module imports one
that imports it back — not even lazily inside a function or under ``TYPE_CHECKING``."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STORES = ROOT / "flower" / "stores"


def _python(code: str, *, path: list[Path] = ()) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, path), str(ROOT),
                                         env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=60)


@pytest.mark.parametrize("module", ["trim", "prune", "layered", "trimming", "pruning",
                                    "postgres", "pgbook", "backend", "book", "readers"])
def test_each_store_module_imports_first_in_a_fresh_process(module: str) -> None:
    out = _python(f"import flower.stores.{module}")
    assert out.returncode == 0, out.stderr


def test_the_public_paths_are_the_layered_classes() -> None:
    out = _python(
        "import flower.stores.trim, flower.stores.prune\n"
        "from flower.stores.trim import TrimmingSessionStore, TrimPolicy, EphemeralPolicy\n"
        "from flower.stores.prune import PruningSessionStore, PrunePolicy, prune_entries\n"
        "from flower.stores import layered\n"
        "assert flower.stores.trim.TrimmingSessionStore is layered.TrimmingSessionStore\n"
        "assert flower.stores.prune.PruningSessionStore is layered.PruningSessionStore\n"
        "assert TrimmingSessionStore is layered.TrimmingSessionStore\n"
        "assert PruningSessionStore is layered.PruningSessionStore\n")
    assert out.returncode == 0, out.stderr


def test_policies_and_report_load_without_the_sdk() -> None:
    """``flower.TrimPolicy`` & co. are plain dataclasses: configuring a Runtime's layers in a
    script (or ``flower --help``) must not pay for importing the SDK."""
    out = _python(
        "import sys, flower, flower.stores\n"
        "from flower.stores import TrimPolicy, trim_report\n"
        "assert flower.stores.__all__ == ['SqliteSessionStore', 'TrimPolicy', "
        "'TrimmingSessionStore', 'trim_report'], flower.stores.__all__\n"
        "flower.TrimPolicy, flower.EphemeralPolicy, flower.PrunePolicy, flower.trim_report\n"
        "assert TrimPolicy is flower.TrimPolicy and trim_report is flower.trim_report\n"
        "assert 'claude_agent_sdk' not in sys.modules, 'SDK imported'\n")
    assert out.returncode == 0, out.stderr


def test_the_run_book_probe_loads_without_the_postgres_driver(tmp_path: Path) -> None:
    """``wake_state`` imports ``RunProbe`` on every wake; a SQLite-only install has no
    psycopg, and the probe must then just say "no remote book"."""
    blocked = tmp_path / "blocked"
    (blocked / "psycopg").mkdir(parents=True)
    (blocked / "psycopg" / "__init__.py").write_text("raise ImportError('no psycopg here')\n")
    out = _python("from flower.stores.readers import RunProbe\n"
                  "assert RunProbe.open('postgresql://127.0.0.1:1/x', 'r') is None\n",
                  path=[blocked])
    assert out.returncode == 0, out.stderr


def _imports(path: Path, package: str) -> set[str]:
    """Every flower.stores module ``path`` imports, wherever the import statement is."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([base] if base else [])])
            names = [f"{base}.{a.name}" if (STORES / f"{a.name}.py").is_file()
                     and base == "flower.stores" else base for a in node.names]
        else:
            continue
        found.update(n for n in names if n == "flower.stores" or
                     n.startswith("flower.stores."))
    return found


def store_graph(directory: Path = STORES) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted(directory.glob("*.py")):
        name = "flower.stores" if path.stem == "__init__" else f"flower.stores.{path.stem}"
        graph[name] = _imports(path, "flower.stores")
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    done: set[str] = set()

    def visit(node: str, trail: list[str]) -> list[str] | None:
        if node in trail:
            return [*trail[trail.index(node):], node]
        if node in done:
            return None
        for nxt in sorted(graph.get(node, ())):
            found = visit(nxt, [*trail, node])
            if found:
                return found
        done.add(node)
        return None

    for start in sorted(graph):
        found = visit(start, [])
        if found:
            return found
    return None


def test_store_modules_import_in_one_direction() -> None:
    graph = store_graph()
    assert graph["flower.stores.trim"] >= {"flower.stores.layered"}  # the graph sees imports
    cycle = _cycle(graph)
    assert cycle is None, " → ".join(cycle or [])
