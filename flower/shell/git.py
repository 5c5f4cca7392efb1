"""Git policy: which git commands are glances, parsed with git's own option grammar.

A workspace may carry a hostile ``.git``: its config and attributes can name programs
that git runs while it *reads*. Measured on git 2.39 with a repo whose config points every
hook at a marker script, these run during the commands allowed here:

* ``core.fsmonitor`` — every command that reads the index (status, diff, ls-files …);
* hooks (``post-index-change`` …) when status refreshes the index;
* clean/smudge/process **filters** (``filter.<x>.*`` plus an attribute) whenever git hashes
  a work-tree file: status, work-tree diff, blame;
* textconv and external diff drivers for patches and blame;
* ``gpg.program`` for ``log.showSignature`` and ``%G`` formats;
* the promisor remote's ``uploadpack`` (or any transport) when a partial clone fetches a
  missing blob lazily — for ``show``, ``log -p``, ``blame``, ``diff``;
* ``git status``/``diff`` in submodules, with the submodule's own config.

The predicate cannot see the repository, so the *glance runner* neutralises all of these
when the command runs (``HARDENING`` below, per-subcommand ``SUB_HARDENING``, one
``-c filter.<name>.…=`` per filter the repo defines, ``GIT_NO_LAZY_FETCH=1`` and
``GIT_ALLOW_PROTOCOL=none`` — the latter because ``-c protocol.allow=never`` loses to a
repo's ``protocol.file.allow=always``, measured). What the predicate decides is the
command's *shape*: options parsed with git's real grammar — an option whose value is
optional takes it attached or not at all (``-U``, ``--stat``, ``--color-moved``), so the
next word is checked as a word of its own; required values are taken attached unless git
is known to consume the next word — and nothing that writes (``--output``), turns a
program back on (``--ext-diff``, ``--textconv``, ``--show-signature``, ``-c`` other than a
disabling setting), or points git elsewhere (``-C``, ``--git-dir``, ``--work-tree``,
``--exec-path``, absolute or ``..`` pathspecs).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from flower.shell import forbidden_paths
from flower.shell.lexer import Refused, Word
from flower.shell.options import Parsed, Spec, parse

__all__ = ["DISABLING", "HARDENING", "PATHSPEC_EXCLUDES", "SUB_HARDENING", "check_git",
           "disabling_setting"]

#: ``-c key=value`` settings a glance may carry (lower-case keys): each switches a program
#: off. The glance runner adds them all; the model may write them too.
DISABLING: dict[str, frozenset[str]] = {
    "core.fsmonitor": frozenset({"", "false", "0", "no", "off"}),
    "core.hookspath": frozenset({"/dev/null"}),
    "log.showsignature": frozenset({"false", "0", "no", "off"}),
    "protocol.allow": frozenset({"never"}),
    "gpg.program": frozenset({"false"}),
    "gpg.openpgp.program": frozenset({"false"}),
    "gpg.x509.program": frozenset({"false"}),
    "gpg.ssh.program": frozenset({"false"}),
}
# (a filter name may hold spaces, never "=": so the value is always empty or "false")
_FILTER_OFF = re.compile(r"filter\.[^=\n]+\.(clean|smudge|process)=|filter\.[^=\n]+\.required="
                         r"(false|0|no|off)", re.IGNORECASE)
#: Global options the runner puts right after ``git``.
HARDENING = ("--no-pager -c core.fsmonitor=false -c core.hooksPath=/dev/null "
             "-c protocol.allow=never -c log.showSignature=false -c gpg.program=false "
             "-c gpg.openpgp.program=false -c gpg.x509.program=false -c gpg.ssh.program=false")
_PATCH_OFF = "--no-ext-diff --no-textconv --ignore-submodules=all"
#: Options the runner puts right after the subcommand (they exist for exactly these).
SUB_HARDENING = {"status": "--ignore-submodules=all", "diff": _PATCH_OFF, "log": _PATCH_OFF,
                 "show": _PATCH_OFF, "stash list": _PATCH_OFF, "reflog": _PATCH_OFF,
                 "blame": "--no-textconv"}
_PATCHY = {"-p", "-u", "--patch", "-U", "--unified", "--word-diff", "--color-words", "-W",
           "--function-context", "--cc", "-c", "--binary", "--full-diff"}


def _pathspec_excludes() -> str:
    """Exclude pathspecs for every secret name and tree: a patch never shows a committed
    ``.env`` or key. (Magic pathspecs need no ``--``, so they can always go last.)"""
    pats = [f"**/{p}" for p in forbidden_paths.SECRET_NAMES + forbidden_paths.SECRET_WORDS]
    pats += [f"**/{d}/**" for d in forbidden_paths.SECRET_DIRS] + ["**/.git/config"]
    return " ".join(f"':(exclude,glob,icase){p}'" for p in pats)


#: Appended to patch-producing commands by the runner.
PATHSPEC_EXCLUDES = _pathspec_excludes()
_EXCLUDE_MAGIC = re.compile(r":(!|\^|\((\w+,)*exclude(,\w+)*\))")
_GLOBAL_FLAGS = {"--no-pager", "-P", "--no-optional-locks", "--no-replace-objects",
                 "--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs",
                 "--icase-pathspecs"}


def disabling_setting(kv: str) -> bool:
    """Is ``kv`` (the word after ``git -c``) one of the settings that only switch off?"""
    if _FILTER_OFF.fullmatch(kv):
        return True
    key, eq, val = kv.partition("=")
    return bool(eq) and val.lower() in DISABLING.get(key.lower(), ())


@dataclass
class GitUse:
    """Where the runner inserts hardening: after ``git`` and after the subcommand."""

    globals_at: int
    sub: str
    sub_at: int
    redact_at: int | None = None  # ``git remote -v``: URLs piped through a redacting sed
    excludes_at: int | None = None  # patches: secret paths excluded by pathspec
    # revisions the runner must resolve: a bare object id may name a blob (a committed
    # secret, its id read off ``ls-files -s``), which no path rule can see
    objects: tuple[str, ...] = ()


# --------------------------------------------------------------------------- grammar

_DIFF_FLAGS = (
    "patch no-patch raw numstat shortstat summary patch-with-stat patch-with-raw name-only "
    "name-status minimal patience histogram no-renames full-index binary no-color text "
    "ignore-all-space ignore-space-change ignore-space-at-eol ignore-blank-lines "
    "ignore-cr-at-eol no-textconv no-ext-diff check exit-code quiet compact-summary "
    "irreversible-delete function-context pickaxe-all pickaxe-regex no-prefix "
    "indent-heuristic no-indent-heuristic find-copies-harder no-relative cumulative")
_DIFF_OPT = ("stat dirstat unified word-diff color color-moved color-words abbrev relative "
             "find-renames find-copies break-rewrites ignore-submodules")
_DIFF_VAL = ("diff-filter anchored inter-hunk-context src-prefix dst-prefix line-prefix "
             "ws-error-highlight find-object output-indicator-new output-indicator-old "
             "output-indicator-context word-diff-regex ignore-matching-lines stat-width "
             "stat-name-width stat-graph-width stat-count diff-algorithm rotate-to skip-to "
             "color-moved-ws")
_LOG_FLAGS = (
    "oneline graph no-decorate all reverse first-parent no-merges merges abbrev-commit "
    "no-abbrev-commit date-order topo-order author-date-order left-right left-only "
    "right-only cherry-pick cherry-mark cherry boundary walk-reflogs source full-diff follow "
    "relative-date parents children regexp-ignore-case extended-regexp fixed-strings "
    "perl-regexp basic-regexp all-match invert-grep do-walk simplify-by-decoration "
    "simplify-merges full-history dense sparse show-pulls no-notes use-mailmap mailmap "
    "no-mailmap clear-decorations no-expand-tabs cc combined-all-paths no-show-signature "
    "no-min-parents no-max-parents reflog log-size")
_LOG_OPT = "decorate branches tags remotes pretty no-walk ancestry-path expand-tabs"
_LOG_VAL = ("format max-count skip since after until before author committer grep date "
            "exclude glob min-parents max-parents encoding decorate-refs "
            "decorate-refs-exclude")
# revision.c consumes the next word for these (parse_long_opt), and for -n
_LOG_SEPARATE = "-n --max-count --skip --since --after --until --before --author --committer " \
                "--grep --date"

_LOG = Spec("pusbwRazWgiEFPmctr", "nSGLI", _DIFF_FLAGS + " " + _LOG_FLAGS,
            _DIFF_VAL + " " + _LOG_VAL, _DIFF_OPT + " " + _LOG_OPT, short_opt="UMCB",
            numeric=True, joined=True, separate=_LOG_SEPARATE + " -S -G -I", clusters=False)
# diff's pickaxe and -I options are parse-options "required argument": the next word is
# consumed, as the parser here assumes
_DIFF = Spec("pusbwRazW", "SGI", _DIFF_FLAGS + " cached staged merge-base", _DIFF_VAL,
             _DIFF_OPT, short_opt="UMCB", joined=True, separate="-S -G -I", clusters=False)
_STATUS = Spec("sbz", "", "short branch show-stash long null ahead-behind no-ahead-behind "
               "renames no-renames no-column", "",
               "porcelain untracked-files ignored column find-renames ignore-submodules",
               short_opt="uM",
               joined=True)
_BLAME = Spec("setlfnpcw", "L", "porcelain line-porcelain root show-stats show-name "
              "show-number show-email first-parent no-progress minimal no-textconv "
              "incremental", "date since ignore-rev", "abbrev color-lines color-by-age",
              short_opt="MC", joined=True, separate="-L --ignore-rev")
_LS_FILES = Spec("cdoiskuztvf", "x", "cached deleted others ignored stage killed unmerged "
                 "directory no-empty-directory full-name error-unmatch exclude-standard "
                 "deduplicate sparse debug eol resolve-undo",
                 "exclude exclude-per-directory format with-tree", "abbrev",
                 joined=True, separate="-x --exclude")
_REF_FILTERS = "contains no-contains merged no-merged points-at sort format"
_BRANCH = Spec("arvli", "", "all remotes verbose list ignore-case no-color show-current "
               "no-abbrev omit-empty no-column", _REF_FILTERS, "abbrev color column",
               joined=True, separate=" ".join("--" + f for f in _REF_FILTERS.split()))
_TAG = Spec("li", "", "list ignore-case no-column omit-empty", _REF_FILTERS, "column",
            short_opt="n", joined=True,
            separate=" ".join("--" + f for f in _REF_FILTERS.split()))
_REV_PARSE = Spec("q", "", "verify quiet show-toplevel is-inside-work-tree is-inside-git-dir "
                  "is-bare-repository is-shallow-repository git-dir absolute-git-dir "
                  "git-common-dir show-prefix show-cdup symbolic symbolic-full-name all "
                  "branches tags remotes revs-only no-revs flags no-flags sq not "
                  "show-superproject-working-tree local-env-vars",
                  "default git-path", "short abbrev-ref path-format since until "
                  "show-object-format")
_SHORTLOG = Spec("snec", "", "summary numbered email committer no-show-signature all "
                 "branches tags no-merges merges first-parent reverse",
                 "since after until before author grep max-count group format",
                 numeric=True, joined=True)
_BUILTIN_FORMATS = {"oneline", "short", "medium", "full", "fuller", "reference", "email",
                    "raw", "mboxrd"}


def _format_ok(value: str) -> bool:
    """A format git will not look up in ``pretty.<alias>`` and that asks for no signature."""
    if "%G" in value:
        return False
    return value in _BUILTIN_FORMATS or "%" in value or value.startswith(("format:",
                                                                           "tformat:"))


def _operands(ops: list[str]) -> None:
    """Revisions and pathspecs: inside the repository, never a credential file (globs
    count as every name they could match)."""
    for op in ops:
        if op.startswith(":/") or _EXCLUDE_MAGIC.match(op):
            continue  # a commit found by the text of its message; a path left out
        path = op.split(":", 1)[1] if ":" in op and not op.startswith(":(") else op
        if path.startswith(("/", "~")) or ".." in path.split("/"):
            raise Refused(f"git path outside the repository ({op})")
        if forbidden_paths.secret_path(path):
            raise Refused(f"git would show a credential file ({op})")


GitCheck = Callable[[Parsed], None]


def _log_like(name: str) -> GitCheck:
    def check(p: Parsed) -> None:
        if not all(_format_ok(f) for f in p.values("--format", "--pretty")):
            raise Refused("git format may call gpg (%G) or a repo-defined pretty alias")
        for spec in p.values("-L"):
            _operands([spec.rsplit(":", 1)[-1]])
        _operands(p.operands)
    return check


def _plain(p: Parsed) -> None:
    _operands(p.operands)


def _listing(what: str) -> GitCheck:
    def check(p: Parsed) -> None:
        if p.operands and not p.has("-l", "--list"):
            raise Refused(f"git {what} <name> creates a {what}")
        if any("signature" in v for v in p.values("--format")):
            raise Refused("git format asks for a signature check")
    return check


def _shortlog(p: Parsed) -> None:
    if not p.before_dashes:
        raise Refused("git shortlog without a revision reads stdin")
    _operands(p.operands)


_SUBS: dict[str, tuple[Spec, GitCheck]] = {
    "status": (_STATUS, _plain),
    "diff": (_DIFF, _log_like("diff")),
    "log": (_LOG, _log_like("log")),
    "show": (_LOG, _log_like("show")),
    "reflog": (_LOG, _log_like("reflog")),
    "blame": (_BLAME, lambda p: _operands(p.operands)),
    "ls-files": (_LS_FILES, _plain),
    "branch": (_BRANCH, _listing("branch")),
    "tag": (_TAG, _listing("tag")),
    "rev-parse": (_REV_PARSE, _plain),
    "shortlog": (_SHORTLOG, _shortlog),
    "describe": (Spec("", "", "tags all always long exact-match first-parent contains",
                      "match exclude candidates", "abbrev"), _plain),
    "cat-file": (Spec("tsep"), lambda p: _operands(p.operands[-2:])),
    "count-objects": (Spec("vH", "", "verbose human-readable"), _plain),
    "symbolic-ref": (Spec("q", "", "short quiet no-recurse"), _plain),
    "for-each-ref": (Spec("", "", "shell perl python tcl ignore-case no-color",
                          "format sort count points-at merged no-merged contains "
                          "no-contains exclude", "color"), _plain),
    "check-ignore": (Spec("qvnz", "", "quiet verbose non-matching no-index"), _plain),
    "hash-object": (Spec("", "t", "no-filters literally"), _plain),
}
_SHOWS_OBJECTS = {"diff", "show", "log", "reflog", "cat-file"}
_MAX_OPERANDS = {"cat-file": 2, "symbolic-ref": 1, "count-objects": 0}


def check_git(verb: Word, words: list[Word]) -> GitUse:
    """Check a ``git …`` command; where the runner inserts its hardening."""
    args = [w.text for w in words]
    i = 0
    while i < len(args) and args[i].startswith("-"):
        a = args[i]
        if a in _GLOBAL_FLAGS:
            i += 1
        elif a == "-c" and i + 1 < len(args):
            if not disabling_setting(args[i + 1]):
                raise Refused(f"git -c {args[i + 1]} (only settings that switch a program off)")
            i += 2
        elif a == "--version" and i == len(args) - 1:
            return GitUse(verb.end, "", verb.end)
        else:
            raise Refused(f"git global option {a}")  # -C, --git-dir=, --exec-path, -p …
    if i >= len(args):
        raise Refused("git without a subcommand")
    sub, rest, sub_word = args[i], args[i + 1:], words[i]
    if sub == "version" and not rest:
        return GitUse(verb.end, "", sub_word.end)
    for a in rest:
        if "%G" in a or ("signature" in a and a != "--no-show-signature"):
            raise Refused("git format asks for a signature check (runs gpg.program)")
        if a == "--end-of-options":
            raise Refused("git --end-of-options")
    if sub == "remote":
        if rest not in ([], ["-v"], ["--verbose"]):
            raise Refused("git remote: only the listing (-v)")
        end = words[-1].end
        return GitUse(verb.end, sub, sub_word.end, redact_at=end if rest else None)
    if sub == "stash":
        if not rest or rest[0] != "list":
            raise Refused("only git stash list")
        sub, rest, sub_word = "stash list", rest[1:], words[i + 1]
        p = parse(_LOG, rest, "git stash list")
        if any(v != "all" for o, v in p.opts if o == "--ignore-submodules"):
            raise Refused("git --ignore-submodules other than =all recurses into submodules")
        _SUBS["log"][1](p)
        return GitUse(verb.end, sub, sub_word.end,
                      excludes_at=words[-1].end if p.has(*_PATCHY) else None)
    if sub == "worktree":
        if not rest or rest[0] != "list":
            raise Refused("only git worktree list")
        parse(Spec("vz", "", "porcelain verbose"), rest[1:], "git worktree")
        return GitUse(verb.end, sub, words[i + 1].end)
    if sub == "reflog" and rest and rest[0] in ("expire", "delete", "drop", "write",
                                                 "exists", "list"):
        raise Refused(f"git reflog {rest[0]}")
    if sub == "reflog" and rest and rest[0] == "show":
        rest, sub_word = rest[1:], words[i + 1]
    if sub == "config":
        _config(rest)
        return GitUse(verb.end, sub, sub_word.end)
    if sub not in _SUBS:
        raise Refused(f"git {sub} is not a glance")
    spec, check = _SUBS[sub]
    p = parse(spec, rest, f"git {sub}")
    if any(v != "all" for o, v in p.opts if o == "--ignore-submodules"):
        raise Refused("git --ignore-submodules other than =all recurses into submodules")
    if len(p.operands) > _MAX_OPERANDS.get(sub, 99):
        raise Refused(f"git {sub} with {len(p.operands)} operands")
    if sub == "hash-object" and not p.has("--no-filters"):
        raise Refused("git hash-object: add --no-filters")
    check(p)
    patch = sub in ("diff", "show") or (sub in ("log", "reflog") and p.has(*_PATCHY))
    revs = tuple(o for o in p.operands[:p.before_dashes] if ":" not in o) \
        if sub in _SHOWS_OBJECTS else ()
    return GitUse(verb.end, sub, sub_word.end, excludes_at=words[-1].end if patch else None,
                  objects=revs)


_CONFIG_SAFE_KEY = re.compile(
    r"(?i)(user\.(name|email)|core\.(bare|autocrlf|eol|filemode|ignorecase|editor|"
    r"excludesfile|hookspath|fsmonitor)|init\.defaultbranch|pull\.(rebase|ff)|push\.default|"
    r"branch\.[\w./-]+\.(remote|merge|rebase)|merge\.ff|commit\.gpgsign|rebase\.\w+)")


def _config(args: list[str]) -> None:
    """Only ``--get <key>`` of a harmless key: dumps, URLs and headers can hold tokens."""
    rest = [a for a in args if a not in ("--local", "--global", "--system")]
    if len(rest) != 2 or rest[0] not in ("--get", "get") or not _CONFIG_SAFE_KEY.fullmatch(
            rest[1]):
        raise Refused("git config: only --get of a harmless key")
