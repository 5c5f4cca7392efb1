"""The variables that make a scratch folder a test's HOME, for the ``home`` fixture and
for the module-wide runs of ``e2e/sharedrun.py`` alike: the CLI's config dir is named
explicitly, since without it the SDK's store mirror drops every entry."""

from __future__ import annotations

from pathlib import Path

import pytest


def point_home_at(mp: pytest.MonkeyPatch, home: Path) -> None:
    mp.setenv("HOME", str(home))
    mp.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    mp.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    mp.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))  # the index key (stores/seal.py)
