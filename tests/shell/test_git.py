"""git: the glances the design pages name pass; option smuggling and programs do not."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flower.shell import is_ephemeral, why_not
from flower.shell.git import HARDENING, SUB_HARDENING, disabling_setting

GLANCES = [
    "git status", "git status -s", "git status -b", "git status -sb", "git status --short",
    "git status --porcelain", "git status --porcelain=v1", "git status --porcelain=v2",
    "git status -uno", "git status --untracked-files=no", "git status -- src",
    "git diff", "git diff --stat", "git diff --name-only", "git diff --name-status",
    "git diff --cached", "git diff --staged", "git diff HEAD~1", "git diff -- a.py src",
    "git diff --stat HEAD~3..HEAD", "git diff -U5 a.py", "git diff --color-moved=zebra",
    "git log", "git log --oneline", "git log -n 5", "git log -n5", "git log -5",
    "git log --format='%h %an %s'", "git log --pretty=oneline", "git log --pretty",
    "git log --graph --decorate --oneline --all", "git log --decorate=short -3",
    "git log --stat -2", "git log -p -1 -- a.py", "git log --author=me --since=2.weeks",
    "git log --author me", "git log --grep fix -i", "git log -S needle", "git log -Gx",
    "git log --max-parents=1 --min-parents=0", "git log HEAD~5..HEAD --name-only",
    "git show", "git show --stat", "git show HEAD", "git show HEAD~2 --name-only",
    "git show HEAD:README.md", "git show v1:src/a.py", "git show --no-patch HEAD",
    "git ls-files", "git ls-files -s", "git ls-files --others --exclude-standard",
    "git branch", "git branch -a", "git branch -r", "git branch -vv", "git branch --list",
    "git branch --show-current", "git branch --contains HEAD", "git tag", "git tag -l",
    "git tag -l 'v*'", "git tag -n3 -l", "git remote", "git remote -v", "git stash list",
    "git rev-parse HEAD", "git rev-parse --abbrev-ref HEAD", "git rev-parse --show-toplevel",
    "git rev-parse --short HEAD", "git blame a.py", "git blame -L 1,5 a.py",
    "git blame -L10,+3 -- a.py", "git --version", "git version", "git --no-pager log -1",
    "git reflog -3", "git shortlog -sn HEAD", "git describe --tags --always",
]


@pytest.mark.parametrize("cmd", GLANCES)
def test_the_named_git_glances_pass(cmd: str) -> None:
    assert is_ephemeral(cmd), why_not(cmd)


_OPTIONAL = ["-U", "-M", "-C", "-B", "--stat", "--color-moved", "--word-diff", "--abbrev",
             "--relative", "--find-renames", "--color", "--dirstat", "--unified"]
_LOG_OPTIONAL = ["--decorate", "--pretty", "--branches", "--tags", "--no-walk"]
_BARE_REQUIRED = ["--max-parents", "--min-parents", "--format", "--diff-filter",
                  "--src-prefix", "--exclude", "--anchored", "--encoding"]
_DANGER = ["--output=README.md", "--output", "--ext-diff", "--textconv", "--show-signature",
           "--no-index", "--submodule=log", "--ignore-submodules=none", "-O/etc/passwd",
           "--exec=x", "--stdin", "--remerge-diff"]


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(["log", "diff", "show"]),
       st.sampled_from(_OPTIONAL + _LOG_OPTIONAL + _BARE_REQUIRED),
       st.sampled_from(_DANGER), st.sampled_from(["", " -1", " HEAD", " -- a.py"]))
def test_a_word_after_an_option_is_never_left_unchecked(sub: str, opt: str, danger: str,
                                                        tail: str) -> None:
    """The confirmed bypass: ``-U --output=README.md`` wrote the file because ``-U`` was
    believed to take the next word; git takes it attached or not at all."""
    cmd = f"git {sub} {opt} {danger}{tail}"
    assert not is_ephemeral(cmd), cmd


@pytest.mark.parametrize("cmd", [
    "git -C .. status", "git -C /tmp/x log", "git --git-dir=/x log", "git --work-tree=/ diff",
    "git --exec-path=/tmp log", "git -p log", "git --paginate log", "git --namespace=x log",
    "git --config-env=core.pager=X log", "git --bare log", "git -c core.pager=sh log",
    "git -c alias.x=!sh x", "git -c diff.external=sh diff", "git -c core.fsmonitor=./x status",
    "git -c core.hooksPath=/tmp status", "git -c protocol.allow=always log",
    "git -c gpg.program=./x log", "git -c filter.x.clean=sh status",
    "git -c 'filter.x.clean=.process=' status", "git -c filter.x.required=true status",
    "git -cfoo=bar log", "git", "git --version log",
])
def test_git_global_options_that_point_elsewhere_or_run_programs(cmd: str) -> None:
    assert not is_ephemeral(cmd), cmd


@pytest.mark.parametrize("kv,ok", [
    ("core.fsmonitor=", True), ("core.fsmonitor=false", True), ("core.hooksPath=/dev/null", True),
    ("protocol.allow=never", True), ("gpg.program=false", True), ("log.showSignature=false", True),
    ("filter.evil.clean=", True), ("filter.a b.smudge=", True), ("filter.x.process=", True),
    ("filter.x.required=false", True), ("filter.x.clean=cat", False),
    ("filter.x.clean=.smudge=", False), ("core.fsmonitor", False), ("gpg.program=true", False),
    ("core.hookspath=/tmp", False), ("diff.external=", False),
])
def test_disabling_settings(kv: str, ok: bool) -> None:
    assert disabling_setting(kv) is ok


@pytest.mark.parametrize("cmd", [
    "git show HEAD:.env", "git show HEAD:config/prod.env", "git blame .env",
    "git diff -- .env", "git log -p -- id_rsa", "git cat-file -p HEAD:.ssh/id_ed25519",
    "git show HEAD:/etc/passwd", "git diff /etc/passwd /etc/hostname", "git diff ../other",
    "git log -- ~/.bashrc", "git log -L1,5:.env", "git diff -- '*.pem'", "git show HEAD:.e*",
])
def test_git_never_shows_a_credential_file_or_leaves_the_repository(cmd: str) -> None:
    assert not is_ephemeral(cmd), cmd


@pytest.mark.parametrize("cmd", [
    "git branch newbranch", "git branch -d x", "git branch -D x", "git branch -m a b",
    "git branch -c a b", "git branch --set-upstream-to=x", "git tag v2", "git tag -d v1",
    "git tag -v v1", "git tag -a v2 -m x", "git remote add x y", "git remote get-url origin",
    "git remote show origin", "git remote set-url origin x", "git stash", "git stash pop",
    "git stash show -p", "git reflog expire --all", "git reflog delete HEAD@{1}",
    "git shortlog -s", "git shortlog -s -- x", "git status -v", "git status --verbose",
    "git commit -m x", "git push", "git fetch", "git pull", "git checkout .", "git grep x",
    "git ls-remote", "git config --list", "git config --get remote.origin.url",
    "git log --output=x", "git log --show-signature", "git log --format=%G?",
    "git log --pretty=mine", "git for-each-ref --format=%(signature)", "git ls-files -m",
    "git hash-object a", "git describe --dirty", "git whatchanged", "git log --end-of-options x",
])
def test_git_subcommands_and_forms_that_write_fetch_or_never_end(cmd: str) -> None:
    assert not is_ephemeral(cmd), cmd


def test_what_the_runner_adds_is_itself_accepted() -> None:
    """The hardened form must stay a glance: expiry may judge it instead of the original."""
    for sub, extra in SUB_HARDENING.items():
        base = "git stash list" if sub == "stash list" else f"git {sub}"
        cmd = base.replace("git ", f"git {HARDENING} ", 1) + f" {extra}"
        if sub == "blame":
            cmd += " a.py"
        assert is_ephemeral(cmd), (cmd, why_not(cmd))
    filters = " ".join(f"-c {shlex.quote(k)}" for k in (
        "filter.my filter.clean=", "filter.my filter.smudge=", "filter.my filter.process=",
        "filter.my filter.required=false"))
    assert is_ephemeral(f"git {HARDENING} {filters} status --ignore-submodules=all")
