"""The lexer: what it accepts it must read exactly as the shell does; the rest refuses."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flower.shell.lexer import Refused, Word, lex, segments

_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from(
    list(" \t'\"\\$`;&|<>(){}*?[]#=~!")), min_size=1, max_size=12)


@settings(max_examples=500, deadline=None)
@given(st.lists(_TEXT, min_size=1, max_size=6))
def test_quoted_words_come_back_exactly(words: list[str]) -> None:
    """shlex.quote of any word lexes back to that word, with its position in the text."""
    cmd = " ".join(shlex.quote(w) for w in words)
    out = lex(cmd)
    assert [t.text for t in out if isinstance(t, Word)] == words
    for t in out:
        assert isinstance(t, Word) and cmd[t.start:t.end] == t.raw
        assert not t.glob  # quoted: never a pattern


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.from_regex(r"[a-z0-9_./-]{1,8}", fullmatch=True), min_size=1,
                         max_size=4), min_size=1, max_size=5),
       st.lists(st.sampled_from([";", "&&", "||", "|", "|&", "\n"]), min_size=4, max_size=4))
def test_segments_split_on_every_operator(cmds: list[list[str]], seps: list[str]) -> None:
    text = ""
    for i, words in enumerate(cmds):
        if i:
            text += f" {seps[(i - 1) % len(seps)]} "
        text += " ".join(words)
    segs = segments(text)
    assert [[w.text for w in s.words] for s in segs] == cmds
    for i, seg in enumerate(segs):
        assert seg.piped == (i > 0 and seps[(i - 1) % len(seps)] in ("|", "|&"))


@pytest.mark.parametrize("cmd,texts", [
    ("ls 2>&1", ["ls"]), ("ls >/dev/null 2>&1", ["ls"]), ("ls &>/dev/null", ["ls"]),
    ("ls 2> /dev/null", ["ls"]), ("echo hi >&2", ["echo", "hi"]),
    ("a\\ b 'c d' \"e f\"", ["a b", "c d", "e f"]), ("x\\\ny", ["xy"]),
    ('"a\\"b"', ['a"b']), ("''", [""]),
])
def test_what_passes_reads_as_the_shell_reads_it(cmd: str, texts: list[str]) -> None:
    assert [t.text for t in lex(cmd) if isinstance(t, Word)] == texts


@pytest.mark.parametrize("cmd", [
    "ls $(id)", "ls `id`", "echo $HOME", "echo ${HOME}", 'echo "$HOME"', 'echo "`id`"',
    "cat <(ls)", "diff <(a) b", "echo >(x)", "cat < f", "cat <<EOF", "cat <<< hi",
    "ls > out", "ls >> out", "ls 2>err", "ls >&-", "ls > /dev/null2", "ls >/dev/./null",
    "ls &", "ls & pwd", "(ls)", "{ ls; }", "ls #x", "ls\x00", "ls\x1b", "ls 'x", 'ls "x',
    "ls \\", "ls ;; pwd", "ls > *", "ls |", "| ls",
])
def test_anything_outside_the_subset_refuses(cmd: str) -> None:
    with pytest.raises(Refused):
        segments(cmd)


def test_globs_are_marked_only_when_unquoted() -> None:
    words = [t for t in lex("a* 'b*' \"c?\" d\\[ e[x]") if isinstance(t, Word)]
    assert [w.glob for w in words] == [True, False, False, False, True]
