"""The error classes (one base, old names and bases kept) and ``one_line``."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flower import errors
from flower.errors import ELLIPSIS, FlowerError, one_line

# --- the classes ----------------------------------------------------------------------------


@pytest.mark.parametrize("module,name,old_base", [
    ("flower.stores.postgres", "StoreUnavailable", RuntimeError),
    ("flower.stores.postgres", "StoreOffline", RuntimeError),
    ("flower.stores.postgres", "StoreVersionError", RuntimeError),
    ("flower.stores.sqlite", "StoreCorruptError", RuntimeError),
    ("flower.stores.transfer", "CopyError", RuntimeError),
    ("flower.stores.codec", "Unstorable", ValueError),
    ("flower.runlog", "NoRuns", Exception),
    ("flower.runlog", "CorruptManifest", Exception),
    ("flower.workflow.target", "TargetError", Exception),
])
def test_old_names_still_import_and_keep_their_old_base(module: str, name: str,
                                                        old_base: type) -> None:
    """Code that imported a class from its old module and caught it by its old base
    (``except RuntimeError``) still does; the CLI catches all of them as FlowerError."""
    import importlib

    if module == "flower.stores.postgres":
        pytest.importorskip("psycopg")
    cls = getattr(importlib.import_module(module), name)
    assert cls is getattr(errors, name)
    assert issubclass(cls, FlowerError) and issubclass(cls, old_base)


def test_corrupt_state_files_share_one_base() -> None:
    from flower.core.lineage import _Corrupt

    for cls in (errors.StoreCorruptError, errors.CorruptManifest, _Corrupt):
        assert issubclass(cls, errors.CorruptState)
    assert issubclass(_Corrupt, ValueError)  # lineage's own reader catches it as that


def test_store_corrupt_error_says_what_to_do(tmp_path: Path) -> None:
    exc = errors.StoreCorruptError(tmp_path / "sessions.db", "no SQLite header")
    assert exc.path == tmp_path / "sessions.db" and exc.reason == "no SQLite header"
    assert "move it aside or delete it" in str(exc)


def test_a_missing_credential_is_credentials_missing_and_still_a_runtime_error(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from flower.core.runtime import Runtime

    monkeypatch.chdir(tmp_path)
    with pytest.raises(errors.CredentialsMissing) as info:
        Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs")
    assert isinstance(info.value, RuntimeError)


def test_starter_flow_bad_arguments_are_bad_input_and_still_value_errors(
        tmp_path: Path) -> None:
    from flower.workflow.starter import starter_flow

    with pytest.raises(errors.BadInput) as info:
        starter_flow("x", workspace=tmp_path, run_dir=tmp_path / "runs", isolate=True)
    assert isinstance(info.value, ValueError)


# --- one_line: examples ---------------------------------------------------------------------


def test_an_exception_reads_type_colon_message() -> None:
    assert one_line(ZeroDivisionError("division by zero")) == \
        "ZeroDivisionError: division by zero"
    assert one_line(KeyError("k")) == "KeyError: 'k'"


def test_the_type_is_left_out_where_it_adds_nothing() -> None:
    assert one_line(errors.TargetError("找不到 flows.py")) == "找不到 flows.py"
    assert one_line(ValueError()) == "ValueError"  # no message: the type alone
    assert one_line(RuntimeError("RuntimeError: twice")) == "RuntimeError: twice"


def test_a_broken_str_still_gives_the_type() -> None:
    class Odd(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert one_line(Odd()) == "Odd"


def test_whitespace_collapses_to_one_line() -> None:
    assert one_line(OSError("first\n\n  second\tthird\r\n")) == "OSError: first second third"
    assert one_line("  a \u2028 b \x1c c  ") == "a b c"


def test_a_long_line_is_cut_before_a_word() -> None:
    assert one_line("alpha beta gamma delta", 16) == "alpha beta…"
    assert one_line("alpha beta gamma delta", 11) == "alpha beta…"
    assert one_line("alpha beta gamma delta", 22) == "alpha beta gamma delta"


def test_chinese_is_cut_between_characters() -> None:
    line = one_line("会话库连不上" * 20, 12)
    assert line == ("会话库连不上" * 2)[:11] + ELLIPSIS
    # mixed: the cut may fall inside the Chinese run, never inside the Latin word
    assert one_line("连不上会话库 postgresql://example 请检查", 11) == "连不上会话库…"


def test_one_word_longer_than_the_line_is_cut_where_the_limit_falls() -> None:
    assert one_line("x" * 50, 10) == "x" * 9 + ELLIPSIS


def test_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError):
        one_line("abc", 0)


# --- one_line: properties -------------------------------------------------------------------

WORDY = st.text(alphabet=st.sampled_from(list("abcXYZ019:/._- \n\t\r中文字会话库，。\u3000ü")),
                max_size=400)
ANY = st.text(max_size=400)
LIMITS = st.integers(min_value=1, max_value=300)


def _wide(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in ("W", "F")


def _boundary(line: str, i: int) -> bool:
    """Keeping ``line[:i]`` does not split a word (spaces separate words; each wide
    character is a word of its own)."""
    a, b = line[i - 1], line[i]
    return a == " " or b == " " or _wide(a) or _wide(b)


@given(st.one_of(WORDY, ANY), LIMITS)
def test_always_one_line_never_longer_than_the_limit(text: str, limit: int) -> None:
    out = one_line(text, limit)
    assert len(out) <= limit
    assert len(out.splitlines()) <= 1 and "\n" not in out
    assert not any(ch.isspace() and ch != " " for ch in out)


@given(st.one_of(WORDY, ANY), LIMITS)
def test_a_cut_keeps_a_prefix_and_never_splits_a_word_when_it_can(text: str,
                                                                   limit: int) -> None:
    line = " ".join(text.split())
    out = one_line(text, limit)
    if len(line) <= limit:
        assert out == line
        return
    assert out.endswith(ELLIPSIS)
    kept = out[: -len(ELLIPSIS)]
    assert line.startswith(kept) and kept == kept.rstrip()
    if any(_boundary(line, i) for i in range(1, limit)):
        assert kept, "a boundary existed, yet nothing was kept"
        nxt = len(kept)  # the first character left out (after any trailing space)
        assert _boundary(line, nxt) or line[nxt] == " "


EXCEPTIONS = st.sampled_from([ValueError, OSError, KeyError, ZeroDivisionError, RuntimeError,
                              UnicodeError, TimeoutError])


@given(EXCEPTIONS, st.one_of(WORDY, ANY), LIMITS)
def test_the_type_name_is_kept_when_it_fits(kind: type[Exception], message: str,
                                            limit: int) -> None:
    name = kind.__name__
    out = one_line(kind(message), limit)
    if limit >= len(name) + 2:  # the name, then a space or the ellipsis
        assert out.startswith(name)
