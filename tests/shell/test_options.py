"""Option grammar: an option never swallows a word the program would read on its own."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flower.shell.lexer import Refused
from flower.shell.options import Spec, parse

SPEC = Spec("ab", "n", "all brief", "lines format", "color stat", short_opt="U",
            joined=True, separate="-n --lines")


def test_required_values_attached_or_where_the_program_takes_the_next_word() -> None:
    p = parse(SPEC, ["-n", "5", "--lines", "3", "--format=%s", "-n7", "x"], "t")
    assert p.opts == [("-n", "5"), ("--lines", "3"), ("--format", "%s"), ("-n", "7")]
    assert p.operands == ["x"]
    with pytest.raises(Refused, match="attached"):
        parse(SPEC, ["--format", "--output=x"], "t")


def test_optional_values_only_attached_so_the_next_word_is_checked() -> None:
    p = parse(SPEC, ["-U", "file", "--stat", "--color=always", "-U3"], "t")
    assert p.opts == [("-U", None), ("--stat", None), ("--color", "always"), ("-U", "3")]
    assert p.operands == ["file"]
    for smuggled in (["-U", "--output=x"], ["--stat", "--output=x"], ["--color", "-z"]):
        with pytest.raises(Refused):
            parse(SPEC, smuggled, "t")


@pytest.mark.parametrize("args", [["--al"], ["--form=x"], ["--lin=3"], ["-z"], ["-az"],
                                  ["--all=x"], ["-n"]])
def test_unknown_abbreviated_or_misused_options_refuse(args: list[str]) -> None:
    with pytest.raises(Refused):
        parse(SPEC, args, "t")


def test_clusters_numeric_posix_and_double_dash() -> None:
    assert parse(SPEC, ["-ab", "-an5"], "t").opts == [("-a", None), ("-b", None),
                                                     ("-a", None), ("-n", "5")]
    assert parse(Spec("", "n", numeric=True), ["-20"], "t").opts == [("-n", "20")]
    p = parse(Spec("a", posix=True), ["x", "-a"], "t")
    assert p.operands == ["x", "-a"] and not p.opts
    p = parse(SPEC, ["a", "--", "-b", "c"], "t")
    assert p.operands == ["a", "-b", "c"] and p.before_dashes == 1
    with pytest.raises(Refused, match="clusters"):
        parse(Spec("ab", clusters=False), ["-ab"], "t")


def test_a_spec_cannot_declare_an_option_twice() -> None:
    with pytest.raises(ValueError):
        Spec("m", "m")


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["-a", "-b", "-U", "-U2", "--stat", "--stat=9", "--color",
                                 "--color=auto", "-n", "5", "--lines", "x", "op"]),
                max_size=8),
       st.sampled_from(["--output=x", "-z", "--ext-diff"]))
def test_a_dangerous_word_is_never_taken_as_an_optional_value(args: list[str],
                                                              bad: str) -> None:
    """Whatever precedes it, an unknown option word either refuses or is consumed as the
    value of a *required* option (which the program also consumes)."""
    words = [*args, bad]
    try:
        p = parse(SPEC, words, "t")
    except Refused:
        return
    assert (words[-2] in ("-n", "--lines")) and p.opts[-1][1] == bad
