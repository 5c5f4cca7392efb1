"""A fresh process reads manifest.json ahead of its first write, without changing what it writes.

Every ``flower`` invocation is a fresh process whose first write would parse the whole file
(every run ever made in the folder) after its first step; :meth:`Manifest.prefetch` does that
while the step runs. What must hold: the write uses the read only while the file is the one
read — a row another process wrote in between is kept, a file broken in between is still
moved aside — and the bytes are the same as without it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flower.core.env import redact
from flower.core.manifest import Manifest

from .manifest_kit import count_parses, dumped

SECRET = "sk-test-0123456789"


def ready(m: Manifest) -> Manifest:
    """``m`` with its prefetch finished (the step it overlaps is long over)."""
    m.prefetch()
    assert m._reader is not None
    m._reader.join()
    return m


def found_rows(n: int = 30) -> list[dict[str, Any]]:
    return [{"step": f"步骤-{i}", "text": "中文 \"q\"\n", "cost_usd": 0.25 * i,
             "run": f"old-{i % 3}"} for i in range(n)]


def test_the_first_write_uses_what_was_read_ahead(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "manifest.json"
    found = found_rows()
    path.write_bytes(dumped(found))
    m = ready(Manifest(path, "new"))
    parsed = count_parses(monkeypatch)
    m.write([{"step": "s"}])
    assert parsed == []
    assert path.read_bytes() == dumped([*found, {"step": "s", "run": "new"}])


def test_a_row_written_by_another_process_after_the_read_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    found = found_rows()
    path.write_bytes(dumped(found))
    m = ready(Manifest(path, "new"))
    Manifest(path, "other").write([{"step": "meanwhile"}])  # during m's first step
    m.write([{"step": "s"}])
    assert path.read_bytes() == dumped(
        [*found, {"step": "meanwhile", "run": "other"}, {"step": "s", "run": "new"}])


def test_own_rows_found_ahead_are_replaced(tmp_path: Path) -> None:
    """A Temporal worker takes the submitted run's id after the Runtime (and its read)."""
    path = tmp_path / "manifest.json"
    found = found_rows()
    path.write_bytes(dumped(found))
    m = ready(Manifest(path, "made"))
    m.run_id = "old-1"
    m.write([{"step": "again"}])
    kept = [r for r in found if r["run"] != "old-1"]
    assert path.read_bytes() == dumped([*kept, {"step": "again", "run": "old-1"}])


def test_a_file_broken_after_the_read_is_still_moved_aside(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_bytes(dumped(found_rows()))
    m = ready(Manifest(path, "new", notice=lambda _msg: None))
    path.write_bytes(b"[{\"step\": ")  # a hand edit gone wrong, mid-step
    m.write([{"step": "s"}])
    assert json.loads(path.read_bytes()) == [{"step": "s", "run": "new"}]
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("manifest.json.")
             and not p.name.endswith(".lock")]
    assert [p.read_bytes() for p in aside] == [b"[{\"step\": "]


def test_a_broken_file_read_ahead_is_moved_aside_by_the_write(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_bytes(b"not json")
    notes: list[str] = []
    m = ready(Manifest(path, "new", notice=notes.append))
    assert path.read_bytes() == b"not json"  # reading ahead never moves anything
    m.write([{"step": "s"}])
    assert json.loads(path.read_bytes()) == [{"step": "s", "run": "new"}]
    assert len(notes) == 1


@pytest.mark.parametrize("secret", [SECRET, 'pa"ss-wörd\\1234'])
def test_secrets_in_rows_read_ahead_are_masked(tmp_path: Path, secret: str) -> None:
    """The read ahead cannot know the secrets of the write (a step adds its spec's env)."""
    path = tmp_path / "manifest.json"
    found = [{"step": "old", "text": f"echoed {secret}", "run": "other"},
             {"step": "clean", "run": "other"}]
    path.write_bytes(dumped(found))
    known: list[str] = []
    m = ready(Manifest(path, "me", secrets=lambda: known))
    known.append(secret)
    m.write([{"step": "new"}])
    scrub = lambda t: redact(t, [secret])  # noqa: E731
    assert path.read_bytes() == dumped([*found, {"step": "new", "run": "me"}], scrub)


def test_a_signal_handler_write_does_not_wait_for_the_read(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    found = found_rows()
    path.write_bytes(dumped(found))
    m = Manifest(path, "new")

    class Stuck:  # a read ahead that never ends
        def is_alive(self) -> bool:
            return True

        def join(self) -> None:
            raise AssertionError("a non-blocking write waited for the read ahead")

    m._reader = Stuck()  # type: ignore[assignment]
    assert m.write([{"step": "killed"}], blocking=False)
    assert path.read_bytes() == dumped([*found, {"step": "killed", "run": "new"}])
