"""Per-command rules: each bypass class with several spellings, and the glances that pass."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flower.shell import analyse, is_ephemeral, why_not

GLANCES = [
    "ls", "ls -la", "ls -R src", "ls ~", "ls ~/.ssh", "cat README.md", "cat a b",
    "head README.md", "head -n 5 a.log", "head -5 a.log", "tail -n 20 a.log", "tail -n +3 a.log",
    "tail -c 100 a.log", "wc -l a.log", "wc -l src/*.py", "wc -c .env",
    "grep -rn TODO .", "grep -rn TODO src", "grep -rn 'def main' src tests", "grep -r x",
    "grep -n x a.py", "grep -c x a.py b.py", "find . -name '*.py'", "find src -type f",
    "find . -maxdepth 2 -name '*.md' -print", "du -sh .", "du -sh ~", "df -h", "df -h .",
    "stat a.py", "stat -c %s a.py", "file a.bin", "tree", "tree -L 2 src", "ps aux",
    "ps -ef", "ps axo pid,comm", "ps -o pid,comm -p 1", "python3 --version",
    "python --version", "node --version", "pip --version", "uv --version", "ruff --version",
    "ls --version", "grep --version", "sed -n 1,5p a", "sed -n '3p' a", "sed 's/a/b/g' a",
    "sed -n '/x/p' a", "sed '1d;$d' a", "sed -E 's/(a)/\\1/' a", "sed 5q a",
    "awk '{print $1}' a", "awk -F: '$3 > 100 {print $1}' /etc/passwd", "awk 'NR==2' a",
    "jq .name package.json", "jq -r '.[] | .id' a.json", "jq 'map(.x)' a.json",
    "jq -n 1+1", "cat a | sort | uniq -c | sort -rn | head", "diff a b", "diff -u a b",
    "diff -r src other", "ls | wc -l", "date +%F", "uname -a", "whoami", "pwd",
    "rg -n foo src", "lsof -i :8080", "lsof -p 1", "echo hi", "which git",
]


@pytest.mark.parametrize("cmd", GLANCES)
def test_glances_pass(cmd: str) -> None:
    assert is_ephemeral(cmd), why_not(cmd)


BYPASSES = {
    "recursive reads over secret locations": [
        "grep -r KEY ~", "grep -rn sk-ant ~/.config", "grep -r x ~/.claude", "grep -r x /",
        "grep -rn x /etc", "grep -r x /home/u", "grep -r x ..", "grep -r x ../..",
        "diff -rN ~/.config/flower empty", "diff -r / other", "find ~ -name '*.env'",
        "find / -name x", "find ~/.ssh", "rg KEY ~", "rg x /", "grep -R x .",
        "grep --dereference-recursive x .", "grep -r --include='*.env' KEY ~",
        "grep -r --exclude=x KEY /", "grep -d recurse x ~", "rg -L x src", "rg --follow x .",
        "diff -N ~/.config/flower empty", "diff ~/.ssh empty", "diff -N / empty",
        "grep -rn x . --include=.env", "rg -g '*.env' x", "rg --type-add 'e:*.env' -te x"],
    "/proc and /sys by any spelling": [
        "cat /proc/self/environ", "cat //proc/self/environ", "cat /./proc/1/environ",
        "cat /proc/../proc/self/environ", "grep -r --include=environ x /proc/self/../self/",
        "cat ../../proc/self/environ", "head ../../../sys/x", "ls /proc", "ls //sys",
        "stat /proc/self/environ", "cat /proc/cpuinfo", "wc -l /p*/self/environ",
        "cat /[p]roc/self/environ"],
    "globs over secret paths": [
        "cat ~/.c*/setting?.json", "cat ~/.c*/flower/.e*", "head ~/.cl*/*.json", "cat .e*",
        "cat ~/.ss*/id*", "cat *", "cat ./*", "cat src/*", "grep x ~/.con*/*/.env",
        "cat *.pem", "cat x/?d_rsa", "cat *.e[n]v", "cat .*/config"],
    "device files by any spelling": [
        "cat /dev/zero", "cat //dev/zero", "wc -c /dev/zero", "head -c 9 /dev/./urandom",
        "cat /dev/stdin", "cat /dev/fd/0", "cat /proc/self/fd/0", "cat /dev/null",
        "grep x /dev/tty", "sort /d?v/zero"],
    "never-ending forms": [
        "tail -f a.log", "tail -F a.log", "tail --follow a.log", "tail --follow=name a.log",
        "tail +1f a.log", "tail -n +1f a.log", "tail -s 1 a.log", "tail --pid=1 a.log",
        "lsof -r 1", "lsof +r", "lsof -r1", "lsof -g -r 1", "lsof -i -r", "watch ls", "top",
        "yes", "sleep 9", "sed 'G;D' a", "sed -n 'G;D' a", "sed ':a;ba' a", "sed 'b' a",
        "sed 't' a", "sed -n 'N;p' a", "sed '{p}' a", "sed 'x;G' a",
        "awk 'BEGIN{while(1);}'", "awk '{for(i=0;i<9;i++) print}' a",
        "awk 'BEGIN{do x++; while(1)}'", "awk 'function f(){f()} BEGIN{f()}'",
        "jq -n 'repeat(1)'", "jq -n 'def f: f; f'", "jq -n '[limit(infinite; 1)]'",
        "jq -n 'range(1e9)'", "jq -n 'until(false; .)'", "jq -n 'recurse(.+1)'",
        "jq -n 'while(true; .)'", "jq -n 'limit(inf; 1)'", "cat", "grep x", "wc -l"],
    "writes and the environment": [
        "awk '{print > \"o\"}' a", "awk '{system(\"id\")}' a", "awk 'BEGIN{\"id\" | getline}'",
        "awk 'BEGIN{print ENVIRON[\"HOME\"]}'", "jq -n input", "jq -n 'debug'",
        "jq -n '$__loc__'", "jq -n env", "jq -n '$ENV'", "jq -n 'inputs'", "jq -n stderr",
        "sed 's/a/b/w out' a", "sed 's/a/b/e' a", "sed 'w out' a", "sed -i s/a/b/ a",
        "sort -o out a", "sort -T /tmp a", "uniq a b", "ps e", "ps eww", "ps auxe",
        "ps -o pid,env", "ps axo pid,environ", "env", "printenv"],
    "programs that run plugins or use the network": [
        "kubectl get pods", "kubectl get pods -n x", "gh auth token", "gh pr list",
        "curl http://x", "wget x", "ssh host", "scp a b:", "npm ls", "npm --version",
        "pip list", "pip install x", "docker ps", "docker images", "cargo --version",
        "go version", "git ls-remote", "git fetch"],
}


@pytest.mark.parametrize("cls,cmd", [(c, x) for c, xs in BYPASSES.items() for x in xs])
def test_every_bypass_class_is_refused(cls: str, cmd: str) -> None:
    assert len(BYPASSES[cls]) >= 3
    assert not is_ephemeral(cmd), (cls, cmd)


def test_what_each_command_touches_is_recorded_for_the_runner() -> None:
    [grep] = analyse("grep -rn x src tests")
    assert grep.roots == ["src", "tests"] and "--exclude='.env'" in grep.inserts[0][1]
    [cat] = analyse("cat a b")
    assert cat.reads == ["a", "b"] and not cat.roots
    [ls] = analyse("ls -la ~/.ssh")
    assert ls.names == ["~/.ssh"] and not ls.reads
    [find] = analyse("find")
    assert find.roots == ["."]
    [git] = analyse("git status")
    assert git.git is not None and git.git.sub == "status"


_SED_OK = ["p", "d", "q", "=", "s/a/b/", "s/a/b/g", "s|x|y|2", "y/ab/cd/", "5p", "1,3d", "$p",
           "/re/p", "/a/,/b/d", "0~2p", "2!d"]
_SED_BAD = ["G", "D", "N", "n", "b", "t", "T", ":a", "w x", "W x", "e id", "r f", "R f",
            "s/a/b/w x", "s/a/b/e", "h", "H", "x", "z", "{p}", "a text", "i text", "c text",
            "l", "F"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_SED_OK), min_size=1, max_size=4),
       st.sampled_from(_SED_BAD), st.integers(0, 4), st.sampled_from([";", "\n"]))
def test_sed_scripts_pass_only_without_loops_reads_or_writes(ok: list[str], bad: str,
                                                            pos: int, sep: str) -> None:
    script = sep.join(ok)
    assert is_ephemeral(f"sed -n {shlex.quote(script)} a"), script
    parts = [*ok[:pos], bad, *ok[pos:]]
    assert not is_ephemeral(f"sed -n {shlex.quote(sep.join(parts))} a"), parts


_JQ_BAD = ["repeat(.)", "while(true; .)", "until(false; .)", "recurse(.+1)", "range(9)",
           "def f: 1; f", "limit(infinite; 1)", "input", "inputs", "debug", "stderr", "env",
           "$ENV", "$__loc__", "input_filename", "import \"a\" as a; 1"]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([".", ".a", ".[] | .x", "map(.y)", "keys", "length"]),
       st.sampled_from(_JQ_BAD))
def test_jq_filters_with_loops_inputs_or_the_environment_refuse(ok: str, bad: str) -> None:
    assert is_ephemeral(f"jq {shlex.quote(ok)} a.json")
    assert not is_ephemeral(f"jq {shlex.quote(ok + ' | ' + bad)} a.json")
    assert not is_ephemeral(f"jq -n {shlex.quote(bad)}")
