#!/usr/bin/env python3
"""Post-mortem of a flower run folder: ``python tools/analyze_run.py [RUN_DIR] [--json]``.

The same report as ``flower analyze RUN_DIR`` (this script only runs that command, with the
flower next to it when started from a checkout): per step and per session the turns, tool
calls, subagent dispatches, retries, handoffs, what a resume-time ``load()`` would rewrite,
cost, duration, the context of every round with its slope, the cache, the largest tool
results and the workbench. ``--store URL`` (or ``FLOWER_STORE_URL``) reads the sessions from
that store instead of ``RUN_DIR/sessions.db``. Read-only; exit code 0, or 1 when the folder
has neither a manifest nor a ``sessions.db`` (and no store is configured), or when this python
lacks flower's packages (then one line says to use ``flower analyze``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
if (_ROOT / "flower" / "__init__.py").is_file() and str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))  # run from a checkout: use the flower next to this script


#: one line when this python lacks flower's packages; in the language of flower's own lines
NO_DEPS = ("{python} 里没有 flower 要用的模块 {module}:改用 flower analyze {run_dir}"
           "(install.sh 装的 flower 自带这个命令),或者用装了 flower 的 python 运行本脚本")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="analyze_run.py", description="Post-mortem of a flower run folder (read-only); "
                                           "the same as `flower analyze`.")
    parser.add_argument("run_dir", nargs="?", default="runs",
                        help="the run folder (manifest.json + sessions.db); default: runs")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--store", metavar="URL", default=None,
                        help="read the sessions from this store (postgresql://… or a "
                             "sessions.db path), as flower --store; default: FLOWER_STORE_URL, "
                             "else RUN_DIR/sessions.db")
    parser.add_argument("--schema", metavar="NAME", default=None,
                        help="with a PostgreSQL store: the schema holding the sessions "
                             "(default: flower)")
    args = parser.parse_args(argv)

    try:
        import click  # noqa: F401  (the command line flower's report runs in)
        import rich  # noqa: F401  (the report's tables)

        from flower.cli.app import main as flower
    except ModuleNotFoundError as exc:
        # a python without flower's packages (the system one): point at the command instead
        print(NO_DEPS.format(python=sys.executable, module=exc.name, run_dir=args.run_dir),
              file=sys.stderr)
        return 1

    command = ["analyze"]
    if args.json:
        command.append("--json")
    if args.schema:
        command += ["--schema", args.schema]
    if args.store and args.store.strip():
        command += ["--store", args.store.strip()]
    try:
        flower([*command, "--", args.run_dir], prog_name="flower")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
