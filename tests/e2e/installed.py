"""Run the ``flower`` command as an installed copy runs: not from a source checkout.

    python installed.py SITE_DIR ARGS...

Running from this repository, flower sees the ``.git`` beside its package and never checks
for updates (a checkout is updated with git). This launcher points ``flower.config``'s
repository root at SITE_DIR (a folder without ``.git``, as site-packages is) first.
"""

from __future__ import annotations

import sys
from pathlib import Path

import flower.config

flower.config._REPO_ROOT = Path(sys.argv.pop(1))

from flower.cli import main  # noqa: E402

main(sys.argv[1:], prog_name="flower")
