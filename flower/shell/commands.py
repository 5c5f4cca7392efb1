"""Per-command rules: which programs a glance may run, with which options and operands.

Each rule sees one simple command (``Ctx``) and either refuses it or records what it will
touch: files whose contents it prints (``read``), paths it only names or measures
(``name``), trees a content reader will sweep (``root``), and hardening text the glance
runner must insert before the command runs (``insert``). The predicate only needs the
verdict; the runner uses the record to check the real file system and rewrite the command.

Not here on purpose: ``env``/``printenv`` (the environment holds credentials), pagers,
``watch``/``top``/``yes``/``sleep`` (never end, ``top`` also writes its config dir),
``xargs``/``tee``/shells, and programs that use the network or run plugins (``curl``,
``ssh``, ``gh``, ``npm``, ``docker`` — whose contexts may be ``ssh://`` hosts — and
``kubectl``, whose kubeconfig may name an exec credential plugin that runs even for
``kubectl get``). Their ``--version`` is fine for the common tools in ``VERSION_ONLY``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from flower.shell import forbidden_paths, programs
from flower.shell.lexer import Refused, Word
from flower.shell.options import Parsed, Spec, parse

if TYPE_CHECKING:
    from flower.shell.git import GitUse

__all__ = ["VERBS", "VERSION_ONLY", "Ctx", "Use", "check_command"]


@dataclass
class Use:
    """What one simple command of a glance will touch (see the module docstring)."""

    verb: str
    reads: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    roots: list[str] = field(default_factory=list)
    inserts: list[tuple[int, str]] = field(default_factory=list)  # (offset in cmd, text)
    git: GitUse | None = None


@dataclass
class Ctx:
    """One simple command being checked: its arguments (after the verb) and their words."""

    verb: Word
    words: list[Word]
    piped: bool
    use: Use

    @property
    def args(self) -> list[str]:
        return [w.text for w in self.words]

    def read(self, paths: Sequence[str], prog: str = "") -> None:
        """Files whose contents the command prints: no credential, device or kernel file."""
        prog = prog or self.verb.text
        for p in paths:
            if p == "-":
                continue
            if forbidden_paths.kernel_path(p):
                raise Refused(f"{prog} would read {p} (/proc, /sys and /dev are off limits)")
            if forbidden_paths.secret_path(p):
                raise Refused(f"{prog} would print a credential file ({p})")
            if any(c in p.rsplit("/", 1)[-1] for c in "*?[") and not _GLOB_SAFE_TAIL.match(
                    p.rsplit("/", 1)[-1]):
                raise Refused(f"{prog}: glob {p!r} could match a credential file")
            self.use.reads.append(p)

    def name(self, paths: Sequence[str]) -> None:
        """Paths the command only lists or measures: anything but kernel/device files."""
        for p in paths:
            if forbidden_paths.kernel_path(p):
                raise Refused(f"{self.verb.text} would touch {p} (/proc, /sys, /dev)")
            self.use.names.append(p)

    def root(self, paths: Sequence[str]) -> None:
        """Trees a content reader sweeps: never home, ``/``, ``/etc`` … or a secret tree."""
        for p in paths:
            if forbidden_paths.kernel_path(p) or forbidden_paths.wide_root(p):
                raise Refused(f"{self.verb.text} would search {p} recursively")
            self.use.roots.append(p)

    def insert_after_verb(self, text: str) -> None:
        self.use.inserts.append((self.verb.end, " " + text))

    def insert_at_end(self, text: str) -> None:
        end = self.words[-1].end if self.words else self.verb.end
        self.use.inserts.append((end, " " + text))

    def insert_last_option(self, p: Parsed, text: str) -> None:
        """Insert options so they come after every option the model gave: before the first
        operand (or ``--``). grep's ``--include``/``--exclude`` and rg's globs are decided
        by the *last* one that matches, so ours must come last; options after an operand
        (GNU argument permutation) are refused, BSD grep would read them as files."""
        args = self.args
        cut = args.index("--") if "--" in args else len(args)
        if p.operand_index:
            cut = min(cut, p.operand_index[0])
        operands = set(p.operand_index)
        if any(i not in operands for i in range(cut, len(args)) if args[i] != "--"):
            raise Refused(f"{self.verb.text}: options after the first operand")
        if cut < len(args):
            self.use.inserts.append((self.words[cut].start, text + " "))
        else:
            self.insert_at_end(text)

    def stdin(self, files: Sequence[str]) -> None:
        """A filter with no file operand (or ``-``) reads stdin: only when a pipe feeds it."""
        if (not files or "-" in files) and not self.piped:
            raise Refused(f"{self.verb.text} would wait on stdin")


Check = Callable[[Ctx], None]
# The last component of a globbed content operand must end in a literal extension (``*.py``)
# so it cannot end in ``.pem``/``.env``; ``secret_path`` then tries the names it may match.
_GLOB_SAFE_TAIL = re.compile(r"^[^/]*[*?\]][^*?\[\]/]*\.[A-Za-z0-9]+$")


def names_only(spec: Spec, *, operands: bool | int = True, paths: bool = True) -> Check:
    """Programs that print no file contents: options checked, operands at most named."""
    def check(c: Ctx) -> None:
        p = parse(spec, c.args, c.verb.text)
        if operands is False and p.operands:
            raise Refused(f"{c.verb.text}: operand not allowed")
        if operands is not True and operands is not False and len(p.operands) > operands:
            raise Refused(f"{c.verb.text}: too many operands")
        if paths:
            c.name(p.operands)
    return check


def content(spec: Spec) -> Check:
    """Programs that print the contents of their file operands (or of stdin)."""
    def check(c: Ctx) -> None:
        p = parse(spec, c.args, c.verb.text)
        c.stdin(p.operands)
        c.read(p.operands)
    return check


def _nothing(c: Ctx) -> None:
    """``echo`` prints its arguments and reads nothing."""


_LS = Spec("aAbBcCdDfFgGhHiklLmnNopqQrRsStuUvxXZ1", "ITw",
           "all almost-all author escape human-readable si inode literal numeric-uid-gid "
           "no-group recursive reverse size directory dereference dereference-command-line "
           "classify file-type full-time group-directories-first hide-control-chars "
           "show-control-chars quote-name kibibytes context zero",
           "hide ignore sort time time-style format width block-size quoting-style tabsize "
           "indicator-style", "color hyperlink")
_DF = Spec("ahHiklPTv", "BtxF", "all human-readable si inodes local portability print-type "
           "total", "block-size type exclude-type", "output")
_DU = Spec("0abcDhHklLmPsSx", "dBt", "null all apparent-size bytes total dereference-args "
           "human-readable inodes dereference count-links no-dereference separate-dirs si "
           "summarize one-file-system", "max-depth threshold block-size exclude time-style",
           "time")
_FREE = Spec("bkmghltwv", "", "bytes kibi mebi gibi tebi pebi kilo mega giga tera peta "
             "human si lohi total wide committed")
_TREE = Spec("adlfixpsughDFqNQrtvUcCASJX", "LPIT", "noreport dirsfirst du si prune "
             "matchdirs ignore-case gitignore", "charset filelimit sort timefmt")
_STAT = Spec("LftZ", "c", "dereference file-system terse", "format printf cached")
_FILE = Spec("bLhiNnpkr0E", "F", "brief dereference no-dereference mime mime-type "
             "mime-encoding keep-going raw no-pad print0 no-buffer extension apple",
             "separator")
_WC = Spec("clmwL", "", "bytes chars lines words max-line-length", "", "total")
_CAT = Spec("AbeEnstTuv", "", "show-all number-nonblank show-ends number squeeze-blank "
            "show-tabs show-nonprinting")
_HEAD = Spec("qvz", "nc", "quiet silent verbose zero-terminated", "lines bytes", numeric=True)
_CUT = Spec("snz", "bcfd", "complement only-delimited zero-terminated",
            "bytes characters fields delimiter output-delimiter")
_COLUMN = Spec("tnxJLde", "socNRHOWErilp", "table fillrows json keep-empty-lines",
               "separator output-separator columns table-columns table-right table-hide "
               "table-order table-wrap table-noextreme tree tree-id tree-parent")
_NL = Spec("p", "bdfhilnsvw", "no-renumber", "body-numbering section-delimiter "
           "footer-numbering header-numbering line-increment join-blank-lines "
           "number-format number-separator starting-line-number number-width")
# no -T/--temporary-directory (writes there), -o/--output, --compress-program,
# --files0-from, --random-source
_SORT = Spec("bdfgiMhnRrVusczm", "kt", "ignore-leading-blanks dictionary-order ignore-case "
             "general-numeric-sort ignore-nonprinting month-sort human-numeric-sort "
             "numeric-sort random-sort reverse version-sort merge stable unique "
             "zero-terminated debug", "sort key field-separator", "check")
_UNIQ = Spec("cdDuiz", "fsw", "count repeated ignore-case unique zero-terminated",
             "skip-fields skip-chars check-chars", "all-repeated group")


def _head_tail(c: Ctx) -> None:
    """head/tail: no ``-f``/``-F``/``--follow``/``-s``/``--pid``; no ``+N`` operands, which
    GNU tail reads as the obsolete ``+N[f]`` form (``tail +1f log`` follows forever)."""
    p = parse(_HEAD, c.args, c.verb.text)
    if any(o.startswith("+") for o in p.operands) or any(
            v.startswith("+") and "f" in v for v in p.values("-n", "-c")):
        raise Refused(f"{c.verb.text} +N operand (the obsolete follow form)")
    c.stdin(p.operands)
    c.read(p.operands)


def _wc(c: Ctx) -> None:
    p = parse(_WC, c.args, "wc")
    c.stdin(p.operands)
    c.name(p.operands)


def _stat(c: Ctx) -> None:
    p = parse(_STAT, c.args, "stat")
    if not p.operands:
        raise Refused("stat without operand")
    c.name(p.operands)


def _file(c: Ctx) -> None:
    p = parse(_FILE, c.args, "file")
    c.stdin(p.operands)
    c.name(p.operands)


def _date(c: Ctx) -> None:
    """No ``-s``/``--set`` or clock operand; no ``-f FILE`` (echoes lines it cannot parse)."""
    spec = Spec("uR", "d", "utc universal rfc-email debug", "date rfc-3339", "iso-8601")
    norm = [a for a in c.args if not re.fullmatch(r"-I(date|hours|minutes|seconds|ns)?", a)]
    p = parse(spec, norm, "date")
    if any(not o.startswith("+") for o in p.operands) or len(p.operands) > 1:
        raise Refused("date with an operand sets the clock")


def _hostname(c: Ctx) -> None:
    spec = Spec("sfdiIaA", "", "short fqdn long domain ip-address all-ip-addresses alias "
                "all-fqdns")
    if parse(spec, c.args, "hostname").operands:
        raise Refused("hostname with an operand sets the hostname")


_PS_BSD = set("auxwfjlrTvScghnmsHLXZ")
_PS_BSD_VAL = set("oOpUtk")
_PS_UNIX = Spec("AadefFHjlLMNTwcyZ", "CGgoOpqstuU", "forest no-headers headers cumulative",
                "sort pid ppid user group sid tty cols columns width format rows lines")


def _ps(c: Ctx) -> None:
    """Unix options are allowlisted; BSD clusters may not hold ``e`` (prints each process's
    environment), and no output format may name an environment column."""
    formats: list[str] = []
    args = c.args
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("-"):
            used = 1
            try:
                p = parse(_PS_UNIX, [a], "ps")
            except Refused as exc:
                if "without a value" not in str(exc) or i + 1 >= len(args):
                    raise
                p = parse(_PS_UNIX, args[i:i + 2], "ps")
                used = 2
            if p.operands:
                raise Refused("ps operand")
            formats += p.values("-o", "-O", "--format", "--sort")
            i += used
            continue
        for k, ch in enumerate(a):
            if ch in _PS_BSD_VAL:
                val = a[k + 1:]
                if not val:
                    i += 1
                    if i >= len(args):
                        raise Refused("ps option without value")
                    val = args[i]
                formats.append(val)
                break
            if ch not in _PS_BSD:
                raise Refused(f"ps BSD option {ch!r} (e shows the environment)")
        i += 1
    if any("env" in f.lower() for f in formats):
        raise Refused("ps format shows the environment")


_LSOF_FLAGS = re.compile(r"-[nPtalwUVbR]+")
_LSOF_VALUED = {"-p": r"\^?\d+(,\^?\d+)*", "-u": r"\^?[\w.-]+(,\^?[\w.-]+)*",
                "-c": r"[\w./-]+", "-d": r"[\w^,-]+"}


def _lsof(c: Ctx) -> None:
    """lsof: no repeat mode (``-r``/``+r``, also hidden as the value of ``-g``), no device
    cache (``-D``); a value is taken only where lsof takes one, and never a ``-word``."""
    args = c.args
    i = 0
    while i < len(args):
        a = args[i]
        if a in _LSOF_VALUED:
            if i + 1 >= len(args) or not re.fullmatch(_LSOF_VALUED[a], args[i + 1]):
                raise Refused(f"lsof {a} needs a plain value")
            i += 2
            continue
        if a in ("+D", "+d"):
            if i + 1 >= len(args) or args[i + 1].startswith(("-", "+")):
                raise Refused(f"lsof {a} needs a directory")
            c.name([args[i + 1]])
            i += 2
            continue
        if a == "-i" or re.fullmatch(r"-i[\w:@.\[\]-]+", a) or re.fullmatch(
                r"-s(TCP|UDP):\w+", a) or _LSOF_FLAGS.fullmatch(a):
            i += 1
            continue
        if a.startswith(("-", "+")):
            raise Refused(f"lsof option {a}")
        c.name([a])
        i += 1


_NETSTAT = Spec("tulnpaeWsiorgvwx46", "A", "tcp udp udplite raw unix listening numeric "
                "program all extend wide statistics interfaces route groups verbose "
                "numeric-hosts numeric-ports numeric-users timers", "protocol")
_SS = Spec("tulnpaxwsmoeiHrO46012S", "fA", "tcp udp raw unix listening numeric processes "
           "all extended memory options info summary no-header resolve oneline ipv4 ipv6 "
           "sctp", "family query")
_PGREP = Spec("flaxnovciwrAvL", "dugGPst", "list-name list-full inverse lightweight count "
              "full newest oldest exact ignore-case", "delimiter euid uid pgroup group "
              "parent session terminal ns nslist")


def _systemctl(c: Ctx) -> None:
    if not c.args or c.args[0] != "status":
        raise Refused("only systemctl status")
    parse(Spec("la", "n", "no-pager full all user system", "lines"), c.args[1:],
          "systemctl")


def _find(c: Ctx) -> None:
    """Only allowlisted primaries (no ``-delete``/``-exec*``/``-ok*``/``-fprint*``/``-fls``);
    the starting points are sweeps and follow the recursion rule."""
    args = c.args
    i = 0
    while i < len(args) and args[i] in ("-L", "-H", "-P"):
        i += 1
    start = i
    while i < len(args) and not args[i].startswith("-") and args[i] not in ("!", "(", ")"):
        i += 1
    c.root(args[start:i] or ["."])
    while i < len(args):
        a = args[i]
        if a in _FIND_UNARY or re.fullmatch(r"-newer[aBcmt][aBcmt]", a):
            if i + 1 >= len(args):
                raise Refused(f"find {a} without a value")
            if a in ("-newer", "-anewer", "-cnewer", "-samefile") or a.startswith("-newer"):
                c.name([args[i + 1]])
            i += 2
        elif a in _FIND_NULLARY:
            i += 1
        else:
            raise Refused(f"find {a}")


_FIND_UNARY = {
    "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
    "-type", "-xtype", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-newer",
    "-anewer", "-cnewer", "-size", "-perm", "-user", "-group", "-uid", "-gid", "-links",
    "-inum", "-samefile", "-maxdepth", "-mindepth", "-printf", "-regextype", "-lname",
    "-ilname", "-used", "-fstype",
}
_FIND_NULLARY = {
    "-empty", "-nouser", "-nogroup", "-depth", "-prune", "-print", "-print0", "-ls", "-not",
    "!", "-a", "-and", "-o", "-or", "-follow", "-xdev", "-mount", "-readable", "-writable",
    "-executable", "-true", "-false", "-quit", "-noleaf", "-daystart", "(", ")", ",",
    "-ignore_readdir_race", "-noignore_readdir_race",
}


def _which(c: Ctx) -> None:
    parse(Spec("ais", "", "all skip-alias skip-functions skip-dot skip-tilde"), c.args,
          "which")


def _command(c: Ctx) -> None:
    if not c.args or c.args[0] not in ("-v", "-V"):
        raise Refused("command without -v runs the command")


# grep: no -f/--file (reads patterns from a file, maybe stdin), -R/--dereference-recursive
# (follows every symlink in the tree: a link in the workspace reaches ~/.config), devices
_GREP = Spec("EFGPiywxvcLloqsbHhnTZzaIrUu", "eABCm",
             "extended-regexp fixed-strings basic-regexp perl-regexp ignore-case "
             "no-ignore-case word-regexp line-regexp null-data no-messages invert-match "
             "byte-offset line-number line-buffered with-filename no-filename "
             "only-matching quiet silent text recursive files-without-match "
             "files-with-matches count initial-tab null",
             "regexp max-count label binary-files include exclude exclude-dir "
             "before-context after-context context", "color colour")


def _grep(c: Ctx) -> None:
    """Recursive grep sweeps its roots (never home, ``/`` …); at run time secret file and
    directory names are excluded from the sweep as well."""
    p = parse(_GREP, c.args, "grep")
    ops = p.operands
    if not p.values("-e", "--regexp"):
        if not ops:
            raise Refused("grep without a pattern")
        ops = ops[1:]
    if p.has("-r", "--recursive"):
        c.root(ops or ["."])
        c.insert_last_option(p, forbidden_paths.grep_excludes())
    else:
        c.stdin(ops)
        c.read(ops)


_RG = Spec("cFiIlnNoqsSUvwxHp0bPu", "eABCgjmMrtTE",
           "count fixed-strings ignore-case files-with-matches files-without-match "
           "line-number no-line-number only-matching quiet case-sensitive smart-case "
           "multiline invert-match word-regexp line-regexp with-filename no-filename "
           "heading no-heading column no-ignore no-ignore-vcs no-config json vimgrep "
           "stats trim files type-list byte-offset null pretty crlf no-messages pcre2",
           "regexp after-context before-context context glob iglob threads max-count "
           "max-columns replace type type-not encoding max-depth max-filesize sort sortr "
           "field-match-separator field-context-separator", "color colors")


def _rg(c: Ctx) -> None:
    """ripgrep: no ``--pre``/``-z``/``--hostname-bin`` (run programs), no ``--hidden``/
    ``-uu`` (dotfiles), no ``-L``/``--follow`` (symlinks out of the tree), no including
    ``-g`` glob or ``--type-add`` (a later glob would win over the runner's exclusions);
    it always sweeps, so its paths are roots, and secret names are excluded at run time."""
    p = parse(_RG, c.args, "rg")
    if any(not g.startswith("!") for g in p.values("-g", "--glob", "--iglob")):
        raise Refused("rg glob that includes files (only !exclusions)")
    if p.count("-u") > 1:
        raise Refused("rg -uu searches hidden files")
    ops = p.operands
    if not (p.values("-e", "--regexp") or p.has("--files", "--type-list")):
        if not ops:
            raise Refused("rg without a pattern")
        ops = ops[1:]
    c.root(ops or ["."])
    c.insert_last_option(p, forbidden_paths.rg_excludes())


def _tr(c: Ctx) -> None:
    p = parse(Spec("cCdst", "", "complement delete squeeze-repeats truncate-set1"), c.args,
              "tr")
    if not c.piped or not 1 <= len(p.operands) <= 2:
        raise Refused("tr reads stdin: only after a pipe")


def _rev(c: Ctx) -> None:
    p = parse(Spec(), c.args, "rev")
    c.stdin(p.operands)
    c.read(p.operands)


def _comm(c: Ctx) -> None:
    p = parse(Spec("123z", "", "check-order nocheck-order total zero-terminated",
                   "output-delimiter"), c.args, "comm")
    if len(p.operands) != 2 or ("-" in p.operands and not c.piped):
        raise Refused("comm takes two files")
    c.read(p.operands)


_DIFF = Spec("qsyiEZbwBaNtTpurdPcu", "UCFIWx",
             "brief report-identical-files side-by-side ignore-case ignore-tab-expansion "
             "ignore-trailing-space ignore-space-change ignore-all-space ignore-blank-lines "
             "text new-file unidirectional-new-file expand-tabs initial-tab recursive normal "
             "no-dereference strip-trailing-cr minimal speed-large-files show-c-function "
             "suppress-common-lines left-column suppress-blank-empty ignore-file-name-case "
             "no-ignore-file-name-case",
             "width label exclude ignore-matching-lines show-function-line "
             "horizon-lines tabsize ifdef",
             "unified context color")


def _diff(c: Ctx) -> None:
    """No ``-l``/``--paginate`` (runs pr), no ``-X``/``--exclude-from`` (reads a file), no
    ``--from-file``/``--to-file``/``-S`` (more operands in disguise). Either operand may be
    a directory — compared file by file, with ``-N`` printing files the other side lacks,
    even without ``-r`` — so both are sweeps: they follow the recursion rule, and diff runs
    without following symlinks and with secret names excluded."""
    p = parse(_DIFF, c.args, "diff")
    ops = p.operands
    if len(ops) != 2 or ("-" in ops and not c.piped):
        raise Refused("diff needs two files")
    c.root([o for o in ops if o != "-"])
    c.insert_after_verb(forbidden_paths.diff_excludes())


def _uniq(c: Ctx) -> None:
    p = parse(_UNIQ, c.args, "uniq")
    if len(p.operands) > 1:
        raise Refused("uniq with two operands writes the second")
    c.stdin(p.operands)
    c.read(p.operands)


def _sw_vers(c: Ctx) -> None:
    if any(a not in ("-productName", "-productVersion", "-buildVersion",
                     "-productVersionExtra") for a in c.args):
        raise Refused("sw_vers option")


#: Tools whose ``--version`` alone may run: none of them reads the workspace or the network
#: to answer it. (``cargo``/``rustc``/``go`` are not here: their toolchain managers read a
#: file in the workspace and may download and run a toolchain first.)
VERSION_ONLY = frozenset({"python", "python3", "node", "pip", "pip3", "uv", "ruff", "gcc",
                          "cc", "clang", "make", "cmake", "java", "javac", "bash", "perl"})

VERBS: dict[str, Check] = {
    # directory and system information
    **{v: names_only(_LS) for v in ("ls", "ll", "dir")},
    "pwd": names_only(Spec("LP"), operands=False),
    "df": names_only(_DF),
    "du": names_only(_DU),
    "tree": names_only(_TREE),
    "free": names_only(_FREE, operands=False),
    "uptime": names_only(Spec("ps", "", "pretty since"), operands=False),
    "whoami": names_only(Spec(), operands=False),
    "id": names_only(Spec("ugGnrzZa", "", "user group groups name real zero context"),
                     paths=False),
    "uname": names_only(Spec("asnrvmpio", "", "all kernel-name nodename kernel-release "
                             "kernel-version machine processor hardware-platform "
                             "operating-system"), operands=False),
    "arch": names_only(Spec(), operands=False),
    "locale": names_only(Spec("akmv", "", "all-locales charmaps category-name keyword-name "
                              "verbose"), paths=False),
    "nproc": names_only(Spec("", "", "all", "ignore"), operands=False),
    "getconf": names_only(Spec("a"), operands=2, paths=False),
    "sw_vers": _sw_vers,
    "date": _date,
    "hostname": _hostname,
    # processes
    "ps": _ps,
    "jobs": names_only(Spec("lnprs"), operands=False),
    "lsof": _lsof,
    "netstat": names_only(_NETSTAT, operands=False),
    "pgrep": names_only(_PGREP, paths=False),
    "ss": names_only(_SS, operands=False),
    "systemctl": _systemctl,
    # looking at files
    "cat": content(_CAT),
    "head": _head_tail,
    "tail": _head_tail,
    "wc": _wc,
    "stat": _stat,
    "echo": _nothing,
    "file": _file,
    "find": _find,
    # path lookup
    **{v: _which for v in ("which", "whereis")},
    "type": names_only(Spec("aftpP"), paths=False),
    "command": _command,
    # text filters
    **{v: _grep for v in ("grep", "egrep", "fgrep")},
    "rg": _rg,
    "cut": content(_CUT),
    "tr": _tr,
    "column": content(_COLUMN),
    "nl": content(_NL),
    "rev": _rev,
    "comm": _comm,
    "diff": _diff,
    "sort": content(_SORT),
    "uniq": _uniq,
    "jq": programs.jq,
    "awk": programs.awk,
    "sed": programs.sed,
}


def check_command(verb: Word, words: list[Word], piped: bool) -> Use:
    """Check one simple command (verb already resolved, assignments stripped)."""
    use = Use(verb.text)
    ctx = Ctx(verb, words, piped, use)
    if [w.text for w in words] == ["--version"] and (verb.text in VERSION_ONLY or
                                                   verb.text in VERBS):
        return use
    rule = VERBS.get(verb.text)
    if rule is None:
        raise Refused(f"{verb.text!r} is not a whitelisted read-only command")
    rule(ctx)
    return use
