"""A fresh process keeps a manifest another flower process left without parsing it.

Every ``flower`` invocation is a fresh process, and the file holds every run ever made in
its folder. The writer notes in the lock file the stat of the file it left; a process that
finds the file still so keeps the other runs' rows as the bytes they are. What must hold:
the bytes are what ``json.dumps`` writes for the rows read back, a file anyone else wrote
since (the original flower, an editor) is parsed as before, this run's own rows are still
replaced, and a secret this process knows is still masked in rows written before.
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


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per parse of a manifest's bytes."""
    return count_parses(monkeypatch)


def left_by_flower(path: Path, runs: int = 3) -> list[dict[str, Any]]:
    for k in range(runs):
        Manifest(path, f"old-{k}").write([{"step": f"步骤 {k}", "text": "中文 \"q\"\n",
                                           "cost_usd": 0.25 * k, "errors": []}])
    return json.loads(path.read_bytes())


def test_a_file_another_flower_left_is_kept_unparsed(tmp_path: Path,
                                                     parsed: list[int]) -> None:
    path = tmp_path / "manifest.json"
    found = left_by_flower(path)
    parsed.clear()
    Manifest(path, "new").write([{"step": "s"}])
    assert parsed == []
    assert path.read_bytes() == dumped([*found, {"step": "s", "run": "new"}])


def test_a_file_the_original_flower_rewrote_is_parsed(tmp_path: Path,
                                                      parsed: list[int]) -> None:
    path = tmp_path / "manifest.json"
    found = left_by_flower(path)
    theirs = [*found, {"step": "from the original", "run": "orig", "cost_usd": 1e-05}]
    path.write_text(json.dumps(theirs, indent=2, ensure_ascii=False), encoding="utf-8")
    parsed.clear()
    Manifest(path, "new").write([{"step": "s"}])
    assert parsed == [1]
    assert path.read_bytes() == dumped([*theirs, {"step": "s", "run": "new"}])


def test_this_runs_own_rows_are_still_replaced(tmp_path: Path) -> None:
    """A Temporal worker carries on a submitted run under its id, in a fresh process."""
    path = tmp_path / "manifest.json"
    found = left_by_flower(path)
    m = Manifest(path, "made")
    m.run_id = "old-1"
    m.write([{"step": "again"}])
    kept = [r for r in found if r["run"] != "old-1"]
    assert path.read_bytes() == dumped([*kept, {"step": "again", "run": "old-1"}])


def test_a_secret_known_now_is_masked_in_rows_left_before(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    Manifest(path, "old").write([{"step": "old", "text": f"echoed {SECRET}"}])
    found = json.loads(path.read_bytes())
    Manifest(path, "new", secrets=lambda: [SECRET]).write([{"step": "s"}])
    scrub = lambda t: redact(t, [SECRET])  # noqa: E731
    assert path.read_bytes() == dumped([*found, {"step": "s", "run": "new"}], scrub)
    assert SECRET not in path.read_text(encoding="utf-8")


def test_a_torn_note_only_costs_a_parse(tmp_path: Path, parsed: list[int]) -> None:
    path = tmp_path / "manifest.json"
    found = left_by_flower(path)
    lock = path.with_name("manifest.json.lock")
    lock.write_bytes(lock.read_bytes()[:-3])  # killed mid-note
    parsed.clear()
    Manifest(path, "new").write([{"step": "s"}])
    assert parsed == [1]
    assert path.read_bytes() == dumped([*found, {"step": "s", "run": "new"}])


def test_an_escaped_surrogate_pair_is_written_as_a_parse_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    Manifest(path, "old").write([{"step": "pair \ud83d\ude00"}])  # two halves, escaped
    found = json.loads(path.read_bytes())  # one character, read back
    Manifest(path, "new").write([{"step": "s"}])
    assert path.read_bytes() == dumped([*found, {"step": "s", "run": "new"}])
