"""manifest.json's bytes stay what they always were, however they are produced now.

The original flower reads this file and ``flower log`` parses it, so the file must be
exactly ``json.dumps(rows, ensure_ascii=False, indent=2)`` (lone surrogates escaped, secrets
masked) — whether a row was encoded by orjson or json, kept from an earlier write, or cut
out of the file a fresh process found. ``dumped`` (manifest_kit.py) is that rule written
out plainly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flower.core import manifest as manifest_mod
from flower.core.env import redact
from flower.core.manifest import Manifest

from .manifest_kit import count_parses, dumped

SECRET = "sk-test-0123456789"

odd = st.sampled_from(["\ud83d", "\udfff", "\ud800x", "\x00", "\x1f", "\x7f", "\u2028",
                       "é", "中文", '"', "\\", "\n", "\t", SECRET, "😀", "\ufeff"])
strings = st.text(st.characters(), max_size=12) | st.lists(odd, max_size=4).map("".join)
floats = st.floats() | st.sampled_from([1e-05, 5e-06, 9.99e-05, 1e-4, 1e16, -0.0, 0.0,
                                        1.5e-300, 1764000000.123])
scalars = st.none() | st.booleans() | st.integers(-2**70, 2**70) | floats | strings
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(strings, inner, max_size=3), max_leaves=8)
rows = st.lists(st.dictionaries(strings.filter(lambda k: k != "run"), values, max_size=5),
                max_size=4)


def tagged(rows: list[dict[str, Any]], run: str) -> list[dict[str, Any]]:
    return [dict(r, run=run) for r in rows]


def mask(text: str) -> str:
    return redact(text, [SECRET])


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(others=rows, first=rows, more=rows)
def test_the_file_is_byte_for_byte_what_json_dumps_wrote(
        tmp_path_factory: pytest.TempPathFactory, others: list[dict], first: list[dict],
        more: list[dict]) -> None:
    path = tmp_path_factory.mktemp("m") / "manifest.json"
    theirs = tagged(others, "other")
    if theirs:  # a file another flower wrote before this process started
        path.write_bytes(dumped(theirs))
    expected_others = json.loads(path.read_bytes()) if theirs else []
    m = Manifest(path, "me", secrets=lambda: [SECRET])
    assert m.write(first)
    assert path.read_bytes() == dumped(expected_others + tagged(first, "me"), mask)
    assert m.write(first + more)  # kept rows and a kept copy of the others
    assert path.read_bytes() == dumped(expected_others + tagged(first + more, "me"), mask)
    # a fresh process on the file this one wrote: others read back (ahead of its first
    # write, as a Runtime does), maybe cut out verbatim
    again = json.loads(path.read_bytes())
    late = Manifest(path, "late", secrets=lambda: [SECRET])
    late.prefetch()
    assert late._reader is not None
    late._reader.join()
    assert late.write(more)
    assert path.read_bytes() == dumped(again + tagged(more, "late"), mask)


def test_a_fresh_process_keeps_the_rows_it_found_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    found = [{"step": f"步骤-{i}", "text": "中文 and \"quotes\"\n", "cost_usd": 0.5 * i,
              "errors": [], "run": f"old-{i % 3}"} for i in range(50)]
    path.write_bytes(dumped(found))
    Manifest(path, "old-1").write([{"step": "again"}])  # its own old rows are replaced
    kept = [r for r in found if r["run"] != "old-1"]
    assert path.read_bytes() == dumped([*kept, {"step": "again", "run": "old-1"}])


def test_a_secret_learned_later_is_masked_in_rows_written_before(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    known: list[str] = []
    m = Manifest(path, "r", secrets=lambda: known)
    m.write([{"step": "a", "text": f"echoed {SECRET}"}])
    assert SECRET in path.read_text(encoding="utf-8")  # not a secret yet
    known.append(SECRET)
    m.write([{"step": "a", "text": f"echoed {SECRET}"}, {"step": "b"}])
    assert SECRET not in path.read_text(encoding="utf-8")


def test_a_row_changed_in_place_is_encoded_again(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    row: dict[str, Any] = {"step": "a", "errors": []}
    m = Manifest(path, "r")
    m.write([row])
    row["errors"].append("boom")  # the same dict, its list grown
    m.write([row])
    assert json.loads(path.read_bytes())[0]["errors"] == ["boom"]


def test_kept_rows_are_not_encoded_again_and_a_bad_row_costs_only_itself(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The seam is encode_row: which rows a write encodes, not how long it takes."""
    encoded: list[Any] = []
    real = manifest_mod.encode_row
    monkeypatch.setattr(manifest_mod, "encode_row",
                        lambda row: encoded.append(row.get("step")) or real(row))
    path = tmp_path / "manifest.json"
    m = Manifest(path, "r")
    bad = {"step": "bad", "text": "half \ud83d"}
    m.write([bad])
    m.write([bad, {"step": "b"}])
    m.write([bad, {"step": "b"}, {"step": "c"}])
    assert encoded == ["bad", "b", "c"]
    Manifest(path, "other").write([{"step": "x"}])  # another process changed the file
    encoded.clear()
    m.write([bad, {"step": "b"}, {"step": "c"}])
    assert encoded == ["x"]  # its row, read once; this run's rows are still kept
    assert [r["step"] for r in json.loads(path.read_bytes())] == ["x", "bad", "b", "c"]


def test_an_unchanged_file_is_not_read_again(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "manifest.json"
    path.write_bytes(dumped([{"step": "theirs", "run": "other"}]))
    m = Manifest(path, "r")
    parsed = count_parses(monkeypatch)
    for n in range(1, 4):
        m.write([{"step": f"s{i}"} for i in range(n)])
    assert parsed == [1]
    # rewritten in place (same inode): the size says so even within one mtime tick
    path.write_bytes(path.read_bytes().replace(b"theirs", b"THEIRS!"))
    m.write([{"step": "s0"}])
    assert parsed == [1, 1]
    assert json.loads(path.read_bytes())[0]["step"] == "THEIRS!"


def test_without_orjson_the_bytes_are_the_same(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    rows_ = [{"step": "中", "cost_usd": 5e-06, "text": "cut \ud83d", "n": 2**70}]
    monkeypatch.setattr(manifest_mod, "ORJSON", None)
    path = tmp_path / "manifest.json"
    Manifest(path, "r").write(rows_)
    assert path.read_bytes() == dumped(tagged(rows_, "r"))
    Manifest(path, "s").write([])
    assert path.read_bytes() == dumped(tagged(rows_, "r"))


@pytest.mark.parametrize("secret", [SECRET, 'pa"ss-wörd\\1234', "tab\tsecret-99"])
def test_a_fresh_process_masks_its_secrets_in_the_rows_it_found(
        tmp_path: Path, secret: str) -> None:
    path = tmp_path / "manifest.json"
    found = [{"step": "old", "text": f"echoed {secret}", "run": "other"},
             {"step": "clean", "run": "other"}]
    path.write_bytes(dumped(found))
    Manifest(path, "me", secrets=lambda: [secret]).write([{"step": "new"}])
    scrub = lambda t: redact(t, [secret])  # noqa: E731
    assert path.read_bytes() == dumped([*found, {"step": "new", "run": "me"}], scrub)
    assert json.dumps(secret, ensure_ascii=False)[1:-1] not in path.read_text("utf-8")


def test_a_run_id_set_after_construction_owns_its_rows(tmp_path: Path) -> None:
    """A Temporal worker's Runtime takes the submitted run's id after it was made."""
    path = tmp_path / "manifest.json"
    m = Manifest(path, "made")
    m.write([{"step": "first"}])  # the file is unchanged since: only the id says re-read
    m.run_id = "carried"
    m.write([{"step": "later"}])
    assert [(r["run"], r["step"]) for r in json.loads(path.read_bytes())] == [
        ("made", "first"), ("carried", "later")]


def test_an_int_past_64_bits_in_another_runs_row_is_kept_exact(tmp_path: Path) -> None:
    """orjson reads ``-9223372036854775809`` as a float; the row must come back as the int
    it is, and the rewritten file must hold the same digits (hypothesis found this)."""
    from flower.core.manifest import Manifest, parse

    huge = -(2 ** 63) - 1
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps([{"run_id": "other", "n": huge}], indent=2), encoding="utf-8")
    assert parse(path.read_bytes()) == [{"run_id": "other", "n": huge}]
    Manifest(path, "me").write([{"run_id": "me", "step": "s"}])
    assert str(huge).encode() in path.read_bytes()
