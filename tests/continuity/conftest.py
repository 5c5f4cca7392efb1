"""Fixtures for the continuity tests."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def snapshot() -> Callable[[Path], dict[str, tuple[int, int, int]]]:
    """Every path under a root with (size, mtime_ns, mode): equal snapshots = nothing written."""

    def take(root: Path) -> dict[str, tuple[int, int, int]]:
        out = {}
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames + filenames:
                p = Path(dirpath) / name
                st = p.lstat()
                out[str(p.relative_to(root))] = (st.st_size, st.st_mtime_ns, st.st_mode)
        st = root.stat()
        out["."] = (0, st.st_mtime_ns, st.st_mode)
        return out

    return take
