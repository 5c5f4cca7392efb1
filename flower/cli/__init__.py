"""The ``flower`` command line: ``app`` parses, ``commands/`` runs, ``tui/`` draws.

Nothing below this package imports it (an import-linter contract): the library never
depends on how the command line prints. ``flower.cli:main`` is the console-script entry point.
"""

from __future__ import annotations

from flower.cli.app import main

__all__ = ["main"]
