"""``is_ephemeral(cmd)``: is this shell command a read-only look whose answer goes stale?

One predicate, two users: the trim layer expires the results of these commands on resume,
and the coordinator's glance permission lets exactly these run on its main thread. The two
sets must stay identical (allowed-but-never-expired leaves a stale ``git status`` in context
forever; expired-but-not-allowed sends a subagent to run ``ls``). A consequence accepted on
purpose: a command refused here for safety (plain ``git status``) is also never expired.

Because the coordinator's permission rests on it, this is a security boundary. A wrong "yes"
can cost the user's workspace or leak a credential into the transcript; a wrong "no" costs
one subagent dispatch. So it is built the conservative way round:

* A small shell lexer splits the command into simple commands; anything it does not fully
  understand — expansions, substitutions, redirections to files, subshells, brace expansion,
  here-docs, backgrounding — makes the whole command non-ephemeral.
* Every simple command must be a whitelisted verb, and every option must be on that verb's
  own allowlist (short letters, also inside clusters, and exact long names — abbreviations
  are refused). Unknown means False. This closes, by construction:

  1. arguments that write: output operands (``uniq in out``), ``sort -o``, ``--output``,
     ``tee``, ``find -delete/-exec/-fprint``, ``sed w/W/e/-i``, awk redirections/pipes/
     ``system``/``getline``, ``git hash-object -w``;
  2. programs run through options or configuration: ``rg --pre``, pagers and ``man`` are
     not verbs at all, ``kubectl --kubeconfig``, ``diff -l`` (runs ``pr``), ``file -z``;
  3. reads of the environment or of credential files: ``env``/``printenv`` are not verbs,
     ``ps e``, ``jq env``/``$ENV``, awk ``ENVIRON``, any ``/proc/*/environ``, and a
     name-based deny list of credential paths (``.env``, ``.netrc``, ``.ssh/``, ``*.pem``,
     ``.aws/credentials``, ``.git-credentials``, ``.git/config`` …) for every verb that
     reads file contents (defence in depth: a symlink with an innocent name still reads);
  4. commands that never end: ``tail -f``, ``top`` (also writes its config dir), ``docker stats``
     without ``--no-stream``, ``kubectl get -w``, ``free -s``, ``lsof -r``, ``netstat -c``
     (``watch``, ``yes``, ``ping``, ``journalctl``, ``dmesg``, ``less`` are not verbs), and
     filters that would wait on stdin (``cat`` with no operand) unless fed by a pipe,
     ``/dev/*`` operands (``cat /dev/zero``), and the obvious loops in awk/jq programs
     (``while``/``do``/``for(;;``, ``repeat``/``until``/``def``). Termination of a program
     text is undecidable in general; the Bash tool's own timeout stays the backstop.

Git policy: the repository's own configuration, hooks and attributes are treated as
untrusted (a workspace may carry a hostile ``.git``). Measured on git 2.39 with a repo whose
config points every hook at a marker script:

* ``core.fsmonitor`` runs for every command that reads the index (status, diff, ls-files,
  check-ignore, ``rev-parse :path``) — disabled by ``-c core.fsmonitor=``;
* ``post-index-change`` runs when status/describe --dirty refresh the index;
* clean/smudge **filters** (``filter.<x>.clean`` + an attribute) run whenever git hashes a
  work-tree file (status, diff against the work tree, blame, ``ls-files -m``,
  hash-object) or prepares a textconv temp file. No command-line flag disables filters
  generically, so **``git status``, work-tree ``git diff`` and ``git blame`` are refused**;
* textconv and ``diff.external`` run for patches (diff/show/``log -p``/``-S``/``-G``) —
  allowed only with ``--no-textconv --no-ext-diff``;
* ``gpg.program`` runs for signed commits under ``log.showSignature`` and for ``%G``
  placeholders, including ones hidden in ``format.pretty``/``pretty.<alias>`` — so the log
  family needs ``--no-show-signature`` (or ``-c log.showSignature=false``) and an explicit,
  alias-free format (``--oneline`` or ``--format=...`` without ``%G``);
* pagers only run on a terminal (the glance has none) and ``-p``/``--paginate`` is refused.

So a status-like glance is spelled
``git -c core.fsmonitor= diff --cached --no-ext-diff --no-textconv --stat`` or
``git -c core.fsmonitor= ls-files``; ``git log --no-show-signature --oneline -5`` works.
The only ``-c`` values accepted are the disabling ones above; anything else (``-c
core.pager=…``, ``-c alias.x=!sh``) is refused. ``git config``/``remote -v`` dumps are
refused because remote URLs and ``http.extraheader`` often hold tokens.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

__all__ = ["is_ephemeral"]


class _Reject(Exception):
    """Internal: the command is not provably read-only (message says why)."""


# --------------------------------------------------------------------------- lexer

_SEPARATORS = {";", "&&", "||", "|", "|&", "\n"}
_GLOB = set("*?[")
_NEVER_UNQUOTED = {
    "(": "subshell", ")": "subshell", "{": "brace group/expansion",
    "}": "brace group/expansion", "`": "command substitution", "$": "expansion",
}


class _Word:
    """One shell word after quote removal, with what the raw text revealed about it."""

    __slots__ = ("glob", "raw", "text")

    def __init__(self, text: str, raw: str, glob: bool) -> None:
        self.text, self.raw, self.glob = text, raw, glob  # glob: has an unquoted * ? [


def _lex(cmd: str) -> list[_Word | str]:
    """Words and operators of ``cmd``; raises _Reject on anything outside the safe subset."""
    out: list[_Word | str] = []
    i, n = 0, len(cmd)
    buf: list[str] = []
    raw_start = -1
    glob = False

    def flush() -> None:
        nonlocal buf, raw_start, glob
        if raw_start >= 0:
            out.append(_Word("".join(buf), cmd[raw_start:i], glob))
        buf, raw_start, glob = [], -1, False

    while i < n:
        c = cmd[i]
        if (ord(c) < 32 and c not in "\t\n") or ord(c) == 127:
            raise _Reject("control character")
        if c in " \t":
            flush()
            i += 1
            continue
        if c == "\n":
            flush()
            out.append("\n")
            i += 1
            continue
        if c in ";&|":
            flush()
            two = cmd[i:i + 2]
            if two in ("&&", "||", "|&"):
                out.append(two)
                i += 2
            elif two in (";;", ";&"):
                raise _Reject("case terminator")
            elif c == "&" and cmd[i + 1:i + 2] == ">":
                i = _redirect(cmd, i, "", out)
            elif c == "&":
                raise _Reject("backgrounding")
            else:
                out.append(c)
                i += 1
            continue
        if c in "<>":
            fd = ""
            if raw_start >= 0 and cmd[raw_start:i].isdigit():
                fd = cmd[raw_start:i]
                buf, raw_start, glob = [], -1, False
            flush()
            i = _redirect(cmd, i, fd, out)
            continue
        if c in _NEVER_UNQUOTED:
            raise _Reject(_NEVER_UNQUOTED[c])
        if c == "#" and raw_start < 0:
            raise _Reject("comment")
        if c == "\\" and cmd[i + 1:i + 2] == "\n":  # line continuation: removed entirely
            i += 2
            continue
        if raw_start < 0:
            raw_start = i
        if c == "\\":
            if i + 1 >= n:
                raise _Reject("trailing backslash")
            buf.append(cmd[i + 1])
            i += 2
            continue
        if c == "'":
            end = cmd.find("'", i + 1)
            if end < 0:
                raise _Reject("unterminated quote")
            buf.append(cmd[i + 1:end])
            i = end + 1
            continue
        if c == '"':
            i = _double_quoted(cmd, i + 1, buf)
            continue
        if c in _GLOB:
            glob = True
        buf.append(c)
        i += 1
    flush()
    return out


def _double_quoted(cmd: str, i: int, buf: list[str]) -> int:
    """Consume a double-quoted string starting after its opening quote."""
    n = len(cmd)
    while i < n:
        c = cmd[i]
        if c == '"':
            return i + 1
        if c in "$`":
            raise _Reject("expansion inside double quotes")
        if c == "\\" and i + 1 < n and cmd[i + 1] in '"\\\n':
            if cmd[i + 1] != "\n":
                buf.append(cmd[i + 1])
            i += 2
            continue
        buf.append(c)
        i += 1
    raise _Reject("unterminated quote")


_DEV_NULL = "/dev/null"


def _redirect(cmd: str, i: int, fd: str, out: list[_Word | str]) -> int:
    """Validate one redirection at ``cmd[i]``; only fd duplication and /dev/null pass."""
    rest = cmd[i:]
    op = next(o for o in ("&>>", "&>", ">>", ">|", ">&", ">", "<") if rest.startswith(o))
    if op == "<":
        raise _Reject("input redirection / here-doc / process substitution")
    if cmd[i + len(op):i + len(op) + 1] == "(":
        raise _Reject("process substitution")
    j = i + len(op)
    while j < len(cmd) and cmd[j] in " \t":
        j += 1
    target: list[_Word | str] = []
    k = j
    while k < len(cmd) and cmd[k] not in " \t\n;&|<>()":
        k += 1
    target = _lex(cmd[j:k]) if k > j else []
    word = target[0].text if len(target) == 1 and isinstance(target[0], _Word) else None
    if word is None:
        raise _Reject("redirection without a target")
    if op == ">&" and (word.isdigit() or word == _DEV_NULL):
        return k
    if op != ">&" and word == _DEV_NULL:
        return k
    raise _Reject(f"redirection to a file ({fd}{op}{word})")


def _segments(cmd: str) -> list[tuple[list[_Word], bool]]:
    """Simple commands of ``cmd`` (split on ; && || | |& and newlines), each with whether
    its stdin is a pipe from the previous command."""
    segments: list[tuple[list[_Word], bool]] = [([], False)]
    for token in _lex(cmd):
        if isinstance(token, str):
            segments.append(([], token in ("|", "|&")))
        else:
            segments[-1][0].append(token)
    for words, piped in segments:
        if not words and piped:
            raise _Reject("empty command in a pipeline")
    return [s for s in segments if s[0]]


# --------------------------------------------------------------------------- options


class _Spec:
    """The options one verb may take: nothing outside this list passes.

    ``short``/``short_val``: letters without/with a value (also inside clusters; a value
    letter takes the rest of the cluster or the next word). ``long``/``long_val``/
    ``long_opt``: exact long names without/with/with an optional ``=value``. ``numeric``:
    ``-20`` style counts (head/tail/git log). ``posix``: options end at the first operand.
    """

    __slots__ = ("long", "long_opt", "long_val", "numeric", "posix", "short", "short_val")

    def __init__(self, short: str = "", short_val: str = "", long: str = "",
                 long_val: str = "", long_opt: str = "", *, numeric: bool = False,
                 posix: bool = False) -> None:
        self.short, self.short_val = set(short), set(short_val)
        self.long, self.long_val, self.long_opt = (set(long.split()), set(long_val.split()),
                                                   set(long_opt.split()))
        self.numeric, self.posix = numeric, posix


_Opts = list[tuple[str, "str | None"]]


def _parse(spec: _Spec, args: Sequence[str], verb: str) -> tuple[_Opts, list[str]]:
    """Split ``args`` into (options, operands); any option not in ``spec`` rejects."""
    opts: _Opts = []
    operands: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            operands.extend(args[i + 1:])
            break
        if a.startswith("--"):
            name, eq, val = a[2:].partition("=")
            if name in spec.long and not eq:
                opts.append(("--" + name, None))
            elif name in spec.long_opt:
                opts.append(("--" + name, val if eq else None))
            elif name in spec.long_val:
                if not eq:
                    if i + 1 >= len(args):
                        raise _Reject(f"{verb} {a} without a value")
                    i += 1
                    val = args[i]
                opts.append(("--" + name, val))
            else:
                raise _Reject(f"{verb} option {a}")
        elif a.startswith("-") and a != "-":
            if spec.numeric and a[1:].isdigit():
                opts.append(("-n", a[1:]))
            else:
                j = 1
                while j < len(a):
                    ch = a[j]
                    if ch in spec.short:
                        opts.append(("-" + ch, None))
                    elif ch in spec.short_val:
                        val = a[j + 1:]
                        if not val:
                            if i + 1 >= len(args):
                                raise _Reject(f"{verb} -{ch} without a value")
                            i += 1
                            val = args[i]
                        opts.append(("-" + ch, val))
                        break
                    else:
                        raise _Reject(f"{verb} option -{ch}")
                    j += 1
        else:
            operands.append(a)
            if spec.posix:
                operands.extend(args[i + 1:])
                break
        i += 1
    return opts, operands


def _has(opts: _Opts, *names: str) -> bool:
    return any(o in names for o, _ in opts)


def _values(opts: _Opts, *names: str) -> list[str]:
    return [v for o, v in opts if o in names and v is not None]


# --------------------------------------------------------------------------- secrets

# Defence in depth: names that hold credentials are refused as operands of every verb that
# prints file contents. (The environment itself is refused at the verb level.)
_SECRET_NAME = re.compile(
    r"""(?ix)^(?:
        \.env | \.env\..* | .+\.env | \.envrc | \.netrc | _netrc | \.pgpass | \.my\.cnf
      | \.git-credentials | \.npmrc | \.pypirc | \.vault-token | \.boto | \.s3cfg
      | \.dockercfg | \.htpasswd | \.(?:bash|zsh|sh|python|psql|mysql|node_repl)_history
      | id_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?(?:\..*)?
      | .*\.(?:pem|key|p12|pfx|jks|keystore|kdbx|ppk|gpg|asc|ovpn)
      | .*credential.* | .*secret.* | .*password.*
      | (?:.*[._-])?tokens?(?:\.(?:json|txt|ya?ml|cfg|conf|ini))?
      | shadow | gshadow | sudoers | master\.key | environ
    )$""")
_SECRET_DIR = {".ssh", ".gnupg", ".aws", ".azure", ".docker", ".kube", ".password-store",
               ".claude", ".terraform.d"}
_SECRET_SUBPATH = (".config/gh/", ".config/gcloud/", ".config/hub", ".git/config")
# /proc: only these system-wide files; /proc/<pid>/… holds other processes' environment and
# argv, and /proc/self/root or /cwd reaches any file under an innocent name.
_PROC_OK = {"cpuinfo", "meminfo", "loadavg", "uptime", "version", "stat", "vmstat",
            "partitions", "filesystems", "swaps", "diskstats", "cgroups", "mounts"}


def _secret_path(path: str) -> bool:
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    low = [p.lower() for p in parts]
    if any(p in _SECRET_DIR or _SECRET_NAME.match(p) for p in low):
        return True
    joined = "/".join(low) + ("/" if low else "")
    if any(("/" + sub) in ("/" + joined) for sub in _SECRET_SUBPATH):
        return True
    if path.startswith("/") and low and low[0] == "proc":
        return not (len(low) == 2 and low[1] in _PROC_OK)
    return False


_GLOB_SAFE_TAIL = re.compile(r"^[^/]*[*?\]][^*?\[\]/]*\.[A-Za-z0-9]+$")


def _readable(paths: Sequence[str], verb: str) -> None:
    """Operands whose contents ``verb`` prints: refuse credential-looking names and globs that
    could expand to one."""
    for p in paths:
        if p == "-":
            continue
        if p.startswith("/dev/") and p != _DEV_NULL:  # /dev/zero never ends, /dev/stdin waits
            raise _Reject(f"{verb} would read the device {p}")
        if _secret_path(p):
            raise _Reject(f"{verb} would print a credential file ({p})")
        if any(c in p for c in "*?["):
            base = p.rsplit("/", 1)[-1]
            if base.startswith(".") or not _GLOB_SAFE_TAIL.match(base) or _secret_path(
                    base.replace("*", "x").replace("?", "x")):
                raise _Reject(f"{verb}: glob {p!r} could match a credential file")


def _inputs(files: Sequence[str], piped: bool, verb: str) -> None:
    """A filter with no file operand (or ``-``) reads stdin: only when a pipe feeds it."""
    if (not files or "-" in files) and not piped:
        raise _Reject(f"{verb} would wait on stdin")
    _readable(files, verb)


_WIDE_ROOTS = {"/", "/home", "/root", "/proc", "/etc", "/var", "/run", "/sys", "/Users"}


def _narrow(paths: Sequence[str], verb: str) -> None:
    """Recursive readers may not sweep home, root or /proc (credentials, other processes' env)."""
    for p in paths:
        q = p.rstrip("/") or "/"
        if (q in _WIDE_ROOTS or q.startswith("/proc") or re.fullmatch(r"~[^/]*", q)
                or re.fullmatch(r"\.\.(/\.\.)*", q) or re.fullmatch(r"/(home|Users)/[^/]+", q)):
            raise _Reject(f"{verb} would search {p} recursively")


# --------------------------------------------------------------------------- verbs

_Check = Callable[[Sequence[str], bool], None]


def _spec_only(spec: _Spec, *, operands: bool | int = True) -> _Check:
    """Verbs that print no file contents: only the options are checked."""
    def check(args: Sequence[str], piped: bool) -> None:
        _, ops = _parse(spec, args, "command")
        if operands is False and ops:
            raise _Reject("operand not allowed")
        if operands is not True and operands is not False and len(ops) > operands:
            raise _Reject("too many operands")
    return check


def _filter(spec: _Spec, verb: str) -> _Check:
    """Verbs that print the contents of their file operands (or stdin)."""
    def check(args: Sequence[str], piped: bool) -> None:
        _, ops = _parse(spec, args, verb)
        _inputs(ops, piped, verb)
    return check


def _echo(args: Sequence[str], piped: bool) -> None:
    """echo prints its arguments and reads nothing."""


_LS = _Spec("aAbBcCdDfFgGhHiklLmnNopqQrRsStuUvxXZ1", "ITw",
            "all almost-all author escape human-readable si inode literal numeric-uid-gid "
            "no-group recursive reverse size directory dereference dereference-command-line "
            "classify file-type full-time group-directories-first hide-control-chars "
            "show-control-chars quote-name kibibytes context zero",
            "hide ignore sort time time-style format width block-size quoting-style tabsize "
            "indicator-style", "color hyperlink")
_DF = _Spec("ahHiklPTv", "BtxF", "all human-readable si inodes local portability print-type "
            "total", "block-size type exclude-type", "output")
_DU = _Spec("0abcDhHklLmPsSx", "dBt", "null all apparent-size bytes total dereference-args "
            "human-readable inodes dereference count-links no-dereference separate-dirs si "
            "summarize one-file-system", "max-depth threshold block-size exclude time-style",
            "time")
_FREE = _Spec("bkmghltwv", "", "bytes kibi mebi gibi tebi pebi kilo mega giga tera peta "
              "human si lohi total wide committed")


def _date(args: Sequence[str], piped: bool) -> None:
    # -f FILE would echo unparsable lines of FILE in the error; -s/--set and operands set
    # the clock.
    spec = _Spec("uR", "dr", "utc universal rfc-email debug", "date reference rfc-3339",
                 "iso-8601")
    norm = [a for a in args if not re.fullmatch(r"-I(date|hours|minutes|seconds|ns)?", a)]
    _, ops = _parse(spec, norm, "date")
    if any(not o.startswith("+") for o in ops) or len(ops) > 1:
        raise _Reject("date with an operand sets the clock")


def _hostname(args: Sequence[str], piped: bool) -> None:
    spec = _Spec("sfdiIaA", "", "short fqdn long domain ip-address all-ip-addresses alias "
                 "all-fqdns")
    _, ops = _parse(spec, args, "hostname")
    if ops:
        raise _Reject("hostname with an operand sets the hostname")


_PS_BSD = set("auxwfjlrTvScghnmsHLXZ")
_PS_BSD_VAL = set("oOpUtk")
_PS_UNIX = _Spec("AadefFHjlLMNTwcyZ", "CGgoOpqstuU", "forest no-headers headers cumulative",
                 "sort pid ppid user group sid tty cols columns width format rows lines")


def _ps(args: Sequence[str], piped: bool) -> None:
    """Unix options are allowlisted; BSD clusters may not hold ``e``/``E`` (environment)."""
    formats: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("-"):
            used = 1
            try:
                opts, ops = _parse(_PS_UNIX, [a], "ps")
            except _Reject as exc:
                if "without a value" not in str(exc) or i + 1 >= len(args):
                    raise
                opts, ops = _parse(_PS_UNIX, args[i:i + 2], "ps")
                used = 2
            if ops:
                raise _Reject("ps operand")
            formats += _values(opts, "-o", "-O", "--format", "--sort")
            i += used
            continue
        for k, ch in enumerate(a):
            if ch in _PS_BSD_VAL:
                val = a[k + 1:]
                if not val:
                    i += 1
                    if i >= len(args):
                        raise _Reject("ps option without value")
                    val = args[i]
                formats.append(val)
                break
            if ch not in _PS_BSD:
                raise _Reject(f"ps BSD option {ch!r} (e shows the environment)")
        i += 1
    if any("env" in f.lower() for f in formats):
        raise _Reject("ps format shows the environment")


def _lsof(args: Sequence[str], piped: bool) -> None:
    """lsof: no repeat mode (-r/+r never ends), no device cache file (-D)."""
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("+D", "+d", "-p", "-u", "-c", "-g", "-d"):
            i += 2
            continue
        if re.fullmatch(r"-i\S*", a):
            if a == "-i" and i + 1 < len(args) and not args[i + 1].startswith(("-", "+")):
                i += 1
        elif re.fullmatch(r"-s(TCP|UDP):\S+", a) or re.fullmatch(r"-[nPtalwUVbR]+", a):
            pass
        elif a.startswith(("-", "+")):
            raise _Reject(f"lsof option {a}")
        i += 1


_NETSTAT = _Spec("tulnpaeWsiorgvwx46", "A", "tcp udp udplite raw unix listening numeric "
                 "program all extend wide statistics interfaces route groups verbose "
                 "numeric-hosts numeric-ports numeric-users timers", "protocol")
_SS = _Spec("tulnpaxwsmoeiHrO46012S", "fA", "tcp udp raw unix listening numeric processes "
            "all extended memory options info summary no-header resolve oneline ipv4 ipv6 "
            "sctp", "family query")
_PGREP = _Spec("flaxnovciwrAvL", "dugGPst", "list-name list-full inverse lightweight count "
               "full newest oldest exact ignore-case", "delimiter euid uid pgroup group "
               "parent session terminal ns nslist")


def _systemctl(args: Sequence[str], piped: bool) -> None:
    if not args or args[0] != "status":
        raise _Reject("only systemctl status")
    spec = _Spec("la", "no", "no-pager full all user system", "lines output")
    _parse(spec, args[1:], "systemctl")


def _docker(args: Sequence[str], piped: bool) -> None:
    specs = {
        "ps": _Spec("aqls", "nf", "all quiet latest size no-trunc", "last filter format"),
        "images": _Spec("aq", "f", "all quiet no-trunc digests", "filter format"),
        "stats": _Spec("a", "", "all no-stream no-trunc", "format"),
    }
    if not args or args[0] not in specs:
        raise _Reject("only docker ps/images/stats")
    opts, _ = _parse(specs[args[0]], args[1:], "docker")
    if args[0] == "stats" and not _has(opts, "--no-stream"):
        raise _Reject("docker stats runs forever without --no-stream")


def _kubectl(args: Sequence[str], piped: bool) -> None:
    """kubectl get with display options only: no -w/--watch (never ends), no --kubeconfig /
    --context / --server / --token (other configs, exec plugins), no secrets."""
    if not args or args[0] != "get":
        raise _Reject("only kubectl get")
    spec = _Spec("A", "nolL", "all-namespaces show-labels no-headers show-kind",
                 "namespace output selector field-selector sort-by label-columns "
                 "chunk-size")
    opts, ops = _parse(spec, args[1:], "kubectl")
    if any("file" in v for v in _values(opts, "-o", "--output")):
        raise _Reject("kubectl output template from a file")
    if any("secret" in o.lower() for o in ops):
        raise _Reject("kubectl get secrets prints credentials")


_CAT = _Spec("AbeEnstTuv", "", "show-all number-nonblank show-ends number squeeze-blank "
             "show-tabs show-nonprinting")
_HEAD = _Spec("qvz", "nc", "quiet silent verbose zero-terminated", "lines bytes", numeric=True)
_WC = _Spec("clmwL", "", "bytes chars lines words max-line-length", "", "total")
_STAT = _Spec("LftZ", "c", "dereference file-system terse", "format printf cached")
_FILE = _Spec("bLhiNnpkrs0E", "F", "brief dereference no-dereference mime mime-type "
              "mime-encoding keep-going raw special-files no-pad print0 no-buffer "
              "extension apple", "separator")


def _wc(args: Sequence[str], piped: bool) -> None:
    _, ops = _parse(_WC, args, "wc")
    if (not ops or "-" in ops) and not piped:
        raise _Reject("wc would wait on stdin")


def _stat(args: Sequence[str], piped: bool) -> None:
    _, ops = _parse(_STAT, args, "stat")
    if not ops:
        raise _Reject("stat without operand")


def _file(args: Sequence[str], piped: bool) -> None:
    _, ops = _parse(_FILE, args, "file")
    if (not ops or "-" in ops) and not piped:
        raise _Reject("file would wait on stdin")


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


def _find(args: Sequence[str], piped: bool) -> None:
    """Only allowlisted primaries (no -delete/-exec*/-ok*/-fprint*/-fls)."""
    i = 0
    while i < len(args) and args[i] in ("-L", "-H", "-P"):
        i += 1
    while i < len(args) and not args[i].startswith("-") and args[i] not in ("!", "(", ")"):
        i += 1  # starting points
    while i < len(args):
        a = args[i]
        if a in _FIND_UNARY or re.fullmatch(r"-newer[aBcmt][aBcmt]", a):
            if i + 1 >= len(args):
                raise _Reject(f"find {a} without a value")
            i += 2
        elif a in _FIND_NULLARY:
            i += 1
        else:
            raise _Reject(f"find {a}")


_TREE = _Spec("adlfixpsughDFqNQrtvUcCASJX", "LPIT", "noreport dirsfirst du si prune "
              "matchdirs ignore-case gitignore", "charset filelimit sort timefmt")


def _which(args: Sequence[str], piped: bool) -> None:
    _parse(_Spec("ais", "", "all skip-alias skip-functions skip-dot skip-tilde"), args, "which")


def _command(args: Sequence[str], piped: bool) -> None:
    if not args or args[0] not in ("-v", "-V"):
        raise _Reject("command without -v runs the command")


_GREP = _Spec("EFGPiywxvcLlmoqsbHhnTZzaIrRUu", "eABCdDm",
              "extended-regexp fixed-strings basic-regexp perl-regexp ignore-case "
              "no-ignore-case word-regexp line-regexp null-data no-messages invert-match "
              "byte-offset line-number line-buffered with-filename no-filename "
              "only-matching quiet silent text recursive dereference-recursive "
              "files-without-match files-with-matches count initial-tab null",
              "regexp max-count label binary-files directories devices include exclude "
              "exclude-dir before-context after-context context", "color colour")


def _grep(args: Sequence[str], piped: bool) -> None:
    opts, ops = _parse(_GREP, args, "grep")
    if not _values(opts, "-e", "--regexp"):
        if not ops:
            raise _Reject("grep without a pattern")
        ops = ops[1:]
    recursive = _has(opts, "-r", "-R", "--recursive", "--dereference-recursive") or any(
        v in ("recurse",) for v in _values(opts, "-d", "--directories"))
    if recursive:
        _narrow(ops, "grep")
        _readable(ops, "grep")
    else:
        _inputs(ops, piped, "grep")


_RG = _Spec("cFiIlLnNoqsSUvwxHp0bPu", "eABCgjmMrtTE",
            "count fixed-strings ignore-case files-with-matches files-without-match follow "
            "line-number no-line-number only-matching quiet case-sensitive smart-case "
            "multiline invert-match word-regexp line-regexp with-filename no-filename "
            "heading no-heading column no-ignore no-ignore-vcs no-config json vimgrep "
            "stats trim files type-list byte-offset null pretty crlf no-messages pcre2",
            "regexp after-context before-context context glob iglob threads max-count "
            "max-columns replace type type-not encoding max-depth max-filesize sort sortr "
            "type-add field-match-separator field-context-separator", "color colors")


def _rg(args: Sequence[str], piped: bool) -> None:
    """ripgrep: no --pre/--pre-glob/-z/--hostname-bin (run programs), no --hidden/-uu (would
    read .env and other dotfiles)."""
    opts, ops = _parse(_RG, args, "rg")
    if sum(1 for o, _ in opts if o == "-u") > 1:
        raise _Reject("rg -uu searches hidden files")
    if not (_values(opts, "-e", "--regexp") or _has(opts, "--files", "--type-list")):
        if not ops:
            raise _Reject("rg without a pattern")
        ops = ops[1:]
    _narrow(ops, "rg")
    _readable(ops, "rg")


_CUT = _Spec("snz", "bcfd", "complement only-delimited zero-terminated",
             "bytes characters fields delimiter output-delimiter")
_COLUMN = _Spec("tnxJLde", "socNRHOWErilp", "table fillrows json keep-empty-lines",
                "separator output-separator columns table-columns table-right table-hide "
                "table-order table-wrap table-noextreme tree tree-id tree-parent")
_NL = _Spec("p", "bdfhilnsvw", "no-renumber", "body-numbering section-delimiter "
            "footer-numbering header-numbering line-increment join-blank-lines "
            "number-format number-separator starting-line-number number-width")
_SORT = _Spec("bdfgiMhnRrVusczm", "ktS", "ignore-leading-blanks dictionary-order ignore-case "
              "general-numeric-sort ignore-nonprinting month-sort human-numeric-sort "
              "numeric-sort random-sort reverse version-sort merge stable unique "
              "zero-terminated debug", "sort key field-separator buffer-size parallel",
              "check")
_UNIQ = _Spec("cdDuiz", "fsw", "count repeated ignore-case unique zero-terminated",
              "skip-fields skip-chars check-chars", "all-repeated group")


def _tr(args: Sequence[str], piped: bool) -> None:
    _, ops = _parse(_Spec("cCdst", "", "complement delete squeeze-repeats truncate-set1"),
                    args, "tr")
    if not piped or not 1 <= len(ops) <= 2:
        raise _Reject("tr reads stdin: only after a pipe")


def _rev(args: Sequence[str], piped: bool) -> None:
    _, ops = _parse(_Spec(), args, "rev")
    _inputs(ops, piped, "rev")


def _comm(args: Sequence[str], piped: bool) -> None:
    _, ops = _parse(_Spec("123z", "", "check-order nocheck-order total zero-terminated",
                          "output-delimiter"), args, "comm")
    if len(ops) != 2 or ("-" in ops and not piped):
        raise _Reject("comm takes two files")
    _readable(ops, "comm")


_DIFF = _Spec("qsyiEZbwBaNtTpurdPcu", "UCFISWxD",
              "brief report-identical-files side-by-side ignore-case ignore-tab-expansion "
              "ignore-trailing-space ignore-space-change ignore-all-space ignore-blank-lines "
              "text new-file unidirectional-new-file expand-tabs initial-tab recursive normal "
              "no-dereference strip-trailing-cr minimal speed-large-files show-c-function "
              "suppress-common-lines left-column suppress-blank-empty ignore-file-name-case "
              "no-ignore-file-name-case",
              "width label exclude ignore-matching-lines show-function-line from-file "
              "to-file horizon-lines tabsize starting-file ifdef",
              "unified context color")


def _diff(args: Sequence[str], piped: bool) -> None:
    """No -l/--paginate (runs pr), no -X/--exclude-from (reads a file)."""
    opts, ops = _parse(_DIFF, args, "diff")
    ops = ops + _values(opts, "--from-file", "--to-file")
    if len(ops) < 2 or ("-" in ops and not piped):
        raise _Reject("diff needs two files")
    if _has(opts, "-r", "--recursive"):
        _narrow(ops, "diff")
    _readable(ops, "diff")


def _uniq(args: Sequence[str], piped: bool) -> None:
    _, ops = _parse(_UNIQ, args, "uniq")
    if len(ops) > 1:
        raise _Reject("uniq with two operands writes the second")
    _inputs(ops, piped, "uniq")


# --- jq: no env/$ENV (environment), no -f/--rawfile/--slurpfile/-L/import (other files).

_JQ = _Spec("nrjacsSCMeR", "", "null-input raw-output join-output ascii-output "
            "compact-output slurp sort-keys color-output monochrome-output exit-status "
            "raw-input tab seq stream", "indent")
_JQ_BANNED = re.compile(r"\b(repeat|while|until|infinite|def|recurse_down)\b|"  # no end
                        r"\benv\b|\$ENV|\bENV\b|\b(import|include|input_filename|"
                        r"get_search_list|modulemeta|\$__prog|\$__loc__)\b|\$__")


def _jq(args: Sequence[str], piped: bool) -> None:
    plain: list[str] = []
    i = 0
    while i < len(args):
        if args[i] in ("--arg", "--argjson"):
            if i + 2 >= len(args):
                raise _Reject("jq --arg without name and value")
            i += 3
            continue
        if args[i] in ("--args", "--jsonargs"):
            raise _Reject("jq positional args")
        plain.append(args[i])
        i += 1
    opts, ops = _parse(_JQ, plain, "jq")
    if not ops:
        raise _Reject("jq without a filter")
    if _JQ_BANNED.search(ops[0]):
        raise _Reject("jq filter reads the environment or other files")
    files = ops[1:]
    if _has(opts, "-n", "--null-input") and not files:
        return
    _inputs(files, piped, "jq")


# --- awk: -F/-v only; the program must come from a tiny safe subset.

_AWK_BANNED = re.compile(r"system|getline|ENVIRON|PROCINFO|ARGV|ARGC|close|fflush|\||@|"
                         r"\\\n|include|load|namespace|extension|"
                         r"\bwhile\b|\bdo\b|for\s*\(\s*;")  # ARGV: reads other files


def _awk(args: Sequence[str], piped: bool) -> None:
    """Output redirection and pipes only exist inside actions, so ``>`` is refused anywhere
    after the first ``{`` (string contents included: a ``"}"`` cannot fool a raw scan), and
    ``|``, backslashes (line continuations), ``system``/``getline``/``ENVIRON``/``@`` anywhere.
    Comparisons in a pattern before any action (``$3 > 100 {print $1}``) still pass."""
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if not a.startswith("-") or a == "-":
            break
        if a in ("-F", "-v"):
            i += 2
            continue
        if a[:2] in ("-F", "-v"):
            i += 1
            continue
        raise _Reject(f"awk option {a}")
    if i >= len(args):
        raise _Reject("awk without a program")
    prog = args[i]
    brace = prog.find("{")
    if _AWK_BANNED.search(prog) or (brace >= 0 and ">" in prog[brace:]):
        raise _Reject("awk program can write, pipe or run commands")
    files = [a for a in args[i + 1:] if not re.match(r"[A-Za-z_][A-Za-z0-9_]*=", a)]
    if not files and not piped and re.fullmatch(r"\s*BEGIN\s*\{[^{}]*\}\s*", prog):
        return
    _inputs(files, piped, "awk")


# --- sed: no -i/-f; every script must parse as a whitelisted subset (no w/W/e/r/a/i/c).

_SED_SHORT = set("nEruzs")
_SED_LONG = {"--quiet", "--silent", "--regexp-extended", "--posix", "--null-data",
             "--zero-terminated", "--unbuffered", "--separate", "--debug", "--sandbox"}
_SED_SIMPLE_CMDS = set("pdqQ=lnNgGhHxPDz{}")


def _sed(args: Sequence[str], piped: bool) -> None:
    scripts: list[str] = []
    positionals: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            positionals.extend(args[i + 1:])
            break
        if a.startswith("--expression="):
            scripts.append(a.split("=", 1)[1])
        elif a == "--expression":
            if i + 1 >= len(args):
                raise _Reject("sed -e without script")
            scripts.append(args[i + 1])
            i += 1
        elif a.startswith("--"):
            if a not in _SED_LONG:
                raise _Reject(f"sed option {a}")
        elif a.startswith("-") and a != "-":
            j = 1
            while j < len(a):
                ch = a[j]
                if ch == "e":
                    rest = a[j + 1:]
                    if rest:
                        scripts.append(rest)
                    elif i + 1 < len(args):
                        scripts.append(args[i + 1])
                        i += 1
                    else:
                        raise _Reject("sed -e without script")
                    break
                if ch not in _SED_SHORT:
                    raise _Reject(f"sed option -{ch}")
                j += 1
        else:
            positionals.append(a)
        i += 1
    if not scripts:
        if not positionals:
            raise _Reject("sed without a script")
        scripts.append(positionals.pop(0))
    for script in scripts:
        _sed_script(script)
    _inputs(positionals, piped, "sed")


def _sed_regex(s: str, i: int, delim: str) -> int:
    """Index just past the closing ``delim`` of a regex/replacement starting at ``i``.

    Bracket expressions are tracked as GNU sed does; a delimiter inside one is rejected
    outright so a disagreement about where the regex ends can never hide a flag.
    """
    n = len(s)
    bracket = False
    while i < n:
        c = s[i]
        if c == "\n":
            raise _Reject("newline inside sed regex")
        if c == "\\":
            i += 2
            continue
        if bracket:
            if c == delim:
                raise _Reject("sed delimiter inside a bracket expression")
            if c == "[" and i + 1 < n and s[i + 1] in ":.=":
                close = s.find(s[i + 1] + "]", i + 2)
                if close < 0:
                    raise _Reject("unterminated sed class")
                if delim in s[i:close]:
                    raise _Reject("sed delimiter inside a bracket expression")
                i = close + 2
                continue
            if c == "]":
                bracket = False
            i += 1
            continue
        if c == delim:
            return i + 1
        if c == "[":
            bracket = True
            i += 1
            if i < n and s[i] == "^":
                i += 1
            if i < n and s[i] == "]":
                i += 1
            continue
        i += 1
    raise _Reject("unterminated sed regex")


def _sed_address(s: str, i: int) -> int:
    n = len(s)
    if i < n and s[i].isdigit():
        while i < n and (s[i].isdigit() or s[i] == "~"):
            i += 1
        return i
    if i < n and s[i] == "$":
        return i + 1
    if i < n and s[i] == "/":
        i = _sed_regex(s, i + 1, "/")
        while i < n and s[i] in "IM":
            i += 1
        return i
    return i


def _sed_script(s: str) -> None:
    i, n = 0, len(s)
    while i < n:
        while i < n and s[i] in " \t\n;":
            i += 1
        if i >= n:
            return
        i = _sed_address(s, i)
        if i < n and s[i] == ",":
            i += 1
            if i < n and s[i] in "+~":
                i += 1
            start = i
            i = _sed_address(s, i)
            if i == start:
                raise _Reject("sed: bad second address")
        while i < n and s[i] in " \t":
            i += 1
        if i < n and s[i] == "!":
            i += 1
        while i < n and s[i] in " \t":
            i += 1
        if i >= n:
            raise _Reject("sed: address without command")
        c = s[i]
        i += 1
        if c in "sy":
            if i >= n or s[i] in "\\\n":
                raise _Reject("sed: bad delimiter")
            delim = s[i]
            i = _sed_regex(s, i + 1, delim)
            i = _sed_regex(s, i, delim)
            if c == "s":
                while i < n and (s[i] in "gpiImM" or s[i].isdigit()):
                    i += 1
        elif c in "qQ":
            while i < n and s[i].isdigit():
                i += 1
        elif c not in _SED_SIMPLE_CMDS:
            raise _Reject(f"sed command {c!r}")
        while i < n and s[i] in " \t":
            i += 1
        if i < n and s[i] not in ";\n}":
            raise _Reject(f"sed: unexpected {s[i]!r}")


# --- git: see the module docstring for what the repository's config could make git run.

_GIT_DISABLING = {  # the only `-c key=value` accepted: they switch a program hook off
    "core.fsmonitor": {"", "false", "0", "no", "off"},
    "log.showsignature": {"false", "0", "no", "off"},
    "core.hookspath": {"/dev/null"},
}


class _Git:
    __slots__ = ("fsmonitor_off", "signature_off")

    def __init__(self) -> None:
        self.fsmonitor_off = self.signature_off = False


_GitCheck = Callable[[Sequence[str], _Git], None]

_GIT_DIFF_LONG = (
    "patch no-patch stat shortstat numstat summary name-only name-status raw minimal "
    "patience histogram ignore-all-space ignore-space-change ignore-space-at-eol "
    "ignore-blank-lines ignore-cr-at-eol no-renames full-index binary no-color "
    "no-textconv no-ext-diff check exit-code quiet text compact-summary irreversible-delete "
    "function-context pickaxe-all pickaxe-regex")
_GIT_DIFF_VAL = "diff-filter color-moved anchored"
_GIT_DIFF_OPT = "stat dirstat unified word-diff color abbrev relative find-renames"
_GIT_PATCHY = {"-p", "-u", "--patch", "-U", "--unified", "-S", "-G", "--word-diff", "--cc",
               "-m", "-c", "--full-diff", "--check", "-L", "-W", "--function-context",
               "--pickaxe-all", "--pickaxe-regex", "--binary", "--exit-code"}
_GIT_LOG = _Spec(
    "puswbRiEFgzmc", "nSGUL",
    _GIT_DIFF_LONG + " oneline abbrev-commit no-abbrev-commit all branches tags remotes "
    "reverse first-parent no-merges merges graph no-decorate follow date-order topo-order "
    "author-date-order left-right cherry-pick cherry-mark cherry boundary walk-reflogs "
    "source full-diff no-show-signature regexp-ignore-case extended-regexp fixed-strings "
    "perl-regexp all-match invert-grep no-walk do-walk simplify-by-decoration full-history "
    "dense sparse ancestry-path parents children relative-date log-size cc",
    _GIT_DIFF_VAL + " format author committer grep since after until before max-count skip "
    "date exclude glob min-parents max-parents",
    _GIT_DIFF_OPT + " pretty decorate", numeric=True)
_GIT_BUILTIN_FORMATS = {"oneline", "short", "medium", "full", "fuller", "reference", "email",
                        "raw", "mboxrd"}


def _git_format_ok(value: str) -> bool:
    """A format git will not look up in ``pretty.<alias>`` and that asks for no signature."""
    if "%G" in value:
        return False
    return value in _GIT_BUILTIN_FORMATS or "%" in value or value.startswith(
        ("format:", "tformat:"))


_GIT_SHORTLOG = _Spec("snec", "", "summary numbered email committer no-show-signature all "
                      "branches tags no-merges merges first-parent reverse",
                      "since after until before author grep max-count group format",
                      numeric=True)


def _git_log_like(verb: str, *, needs_format: bool, spec: _Spec = _GIT_LOG) -> _GitCheck:
    def check(args: Sequence[str], g: _Git) -> None:
        norm = [re.sub(r"^-([MCB])\d*%?$", r"--find-renames", a) for a in args]
        opts, ops = _parse(spec, norm, f"git {verb}")
        if verb == "shortlog":
            before = norm[:norm.index("--")] if "--" in norm else norm
            if not _parse(spec, before, "git shortlog")[1]:
                raise _Reject("git shortlog without a revision reads stdin")
        formats = _values(opts, "--format", "--pretty")
        if not all(_git_format_ok(f) for f in formats):
            raise _Reject("git format may call gpg (%G) or a repo-defined pretty alias")
        # `rev:path` names a blob or tree: nothing to sign, no patch (but `:/msg` is a commit)
        blob_only = verb == "show" and bool(ops) and all(
            re.fullmatch(r"[^:\s]+:[^:]*", o) for o in ops)
        patchy = _has(opts, *_GIT_PATCHY) or (verb == "show" and not blob_only
                                              and not _has(opts, "-s", "--no-patch"))
        if patchy and not (_has(opts, "--no-textconv") and _has(opts, "--no-ext-diff")):
            raise _Reject("patches run repo-configured textconv/external diff: "
                          "add --no-textconv --no-ext-diff")
        if blob_only and not patchy:
            return
        if not (g.signature_off or _has(opts, "--no-show-signature")):
            raise _Reject("log.showSignature would run gpg.program: add --no-show-signature")
        if needs_format and not (formats or _has(opts, "--oneline")):
            raise _Reject("format.pretty from the repo may call gpg: give --oneline/--format")
    return check


def _git_diff(args: Sequence[str], g: _Git) -> None:
    """Only index-vs-commit: the work tree is never hashed, so no clean filter runs."""
    spec = _Spec("puswbRz", "U", _GIT_DIFF_LONG + " cached staged", _GIT_DIFF_VAL,
                 _GIT_DIFF_OPT)
    norm = [re.sub(r"^-([MCB])\d*%?$", r"--find-renames", a) for a in args]
    opts, _ = _parse(spec, norm, "git diff")
    if not _has(opts, "--cached", "--staged"):
        raise _Reject("git diff against the work tree runs clean filters: use --cached")
    if not (g.fsmonitor_off and _has(opts, "--no-textconv") and _has(opts, "--no-ext-diff")):
        raise _Reject("git diff needs -c core.fsmonitor= --no-textconv --no-ext-diff")


def _git_spec(spec: _Spec, verb: str, *, max_ops: int = 99, fsmonitor: bool = False,
              ) -> _GitCheck:
    def check(args: Sequence[str], g: _Git) -> None:
        opts, ops = _parse(spec, args, f"git {verb}")
        if len(ops) > max_ops:
            raise _Reject(f"git {verb} with {len(ops)} operands")
        if fsmonitor and not g.fsmonitor_off:
            raise _Reject(f"git {verb} reads the index: add -c core.fsmonitor=")
        if any("signature" in v for v in _values(opts, "--format")):
            raise _Reject("git format asks for a signature check")
    return check


def _git_rev_parse(args: Sequence[str], g: _Git) -> None:
    spec = _Spec("q", "", "verify quiet show-toplevel is-inside-work-tree is-inside-git-dir "
                 "is-bare-repository is-shallow-repository git-dir absolute-git-dir "
                 "git-common-dir show-prefix show-cdup symbolic symbolic-full-name all "
                 "branches tags remotes revs-only no-revs flags no-flags sq not "
                 "show-object-format show-superproject-working-tree local-env-vars",
                 "default git-path", "short abbrev-ref path-format since until")
    _, ops = _parse(spec, args, "git rev-parse")
    if any(o.startswith(":") for o in ops) and not g.fsmonitor_off:
        raise _Reject("git rev-parse :path reads the index: add -c core.fsmonitor=")


def _git_branch(args: Sequence[str], g: _Git) -> None:
    spec = _Spec("arvli", "", "all remotes verbose list ignore-case no-color show-current "
                 "no-abbrev omit-empty", "contains no-contains merged no-merged points-at "
                 "sort format", "abbrev color column")
    opts, ops = _parse(spec, args, "git branch")
    if ops and not _has(opts, "-l", "--list"):
        raise _Reject("git branch <name> creates a branch")
    if any("signature" in v for v in _values(opts, "--format")):
        raise _Reject("git format asks for a signature check")


def _git_remote(args: Sequence[str], g: _Git) -> None:
    if args:  # -v / get-url print URLs, which often embed tokens; show/update contact remotes
        raise _Reject("git remote with options (URLs may hold tokens)")


_GIT_CONFIG_SAFE_KEY = re.compile(
    r"(?i)(user\.(name|email)|core\.(bare|autocrlf|eol|filemode|ignorecase|editor|"
    r"excludesfile|hookspath|fsmonitor)|init\.defaultbranch|pull\.(rebase|ff)|push\.default|"
    r"branch\.[\w./-]+\.(remote|merge|rebase)|merge\.ff|commit\.gpgsign|rebase\.\w+)")


def _git_config(args: Sequence[str], g: _Git) -> None:
    """Only ``--get <key>`` of a harmless key: dumps and URLs/headers can hold tokens."""
    rest = [a for a in args if a not in ("--local", "--global", "--system")]
    if len(rest) != 2 or rest[0] not in ("--get", "get") or not _GIT_CONFIG_SAFE_KEY.fullmatch(
            rest[1]):
        raise _Reject("git config: only --get of a harmless key")


def _git_stash(args: Sequence[str], g: _Git) -> None:
    if not args or args[0] != "list":
        raise _Reject("only git stash list")
    _git_log_like("stash list", needs_format=False)(args[1:], g)


def _git_reflog(args: Sequence[str], g: _Git) -> None:
    if args and args[0] == "show":
        args = args[1:]
    elif args and args[0] in ("expire", "delete", "drop", "write", "exists", "list"):
        raise _Reject("git reflog subcommand")
    _git_log_like("reflog", needs_format=False)(args, g)


def _git_worktree(args: Sequence[str], g: _Git) -> None:
    if not args or args[0] != "list":
        raise _Reject("only git worktree list")
    _parse(_Spec("vz", "", "porcelain verbose"), args[1:], "git worktree")


def _git_hash_object(args: Sequence[str], g: _Git) -> None:
    opts, _ = _parse(_Spec("", "t", "no-filters literally"), args, "git hash-object")
    if not _has(opts, "--no-filters"):
        raise _Reject("git hash-object runs clean filters: add --no-filters")


_GIT_SUBS: dict[str, _GitCheck] = {
    "rev-parse": _git_rev_parse,
    "branch": _git_branch,
    "remote": _git_remote,
    "config": _git_config,
    "log": _git_log_like("log", needs_format=True),
    "show": _git_log_like("show", needs_format=True),
    "shortlog": _git_log_like("shortlog", needs_format=False, spec=_GIT_SHORTLOG),
    "reflog": _git_reflog,
    "stash": _git_stash,
    "diff": _git_diff,
    "hash-object": _git_hash_object,
    "worktree": _git_worktree,
    "symbolic-ref": _git_spec(_Spec("q", "", "short quiet no-recurse"), "symbolic-ref",
                              max_ops=1),
    "describe": _git_spec(_Spec("", "", "tags all always long exact-match first-parent "
                                "contains", "match exclude candidates", "abbrev"),
                          "describe"),
    "cat-file": _git_spec(_Spec("tsep", "", "allow-unknown-type use-mailmap mailmap"),
                          "cat-file", max_ops=2),
    "count-objects": _git_spec(_Spec("vH", "", "verbose human-readable"), "count-objects",
                               max_ops=0),
    "for-each-ref": _git_spec(_Spec("", "", "shell perl python tcl ignore-case no-color",
                                    "format sort count points-at merged no-merged contains "
                                    "no-contains exclude", "color"), "for-each-ref"),
    "ls-files": _git_spec(_Spec("cdoiskuztvfx", "xX", "cached deleted others ignored stage "
                                "killed unmerged directory no-empty-directory full-name "
                                "error-unmatch exclude-standard deduplicate sparse debug",
                                "exclude exclude-per-directory format", "abbrev"),
                          "ls-files", fsmonitor=True),
    "check-ignore": _git_spec(_Spec("qvnz", "", "quiet verbose non-matching no-index"),
                              "check-ignore", fsmonitor=True),
}
# Refused: status / blame / work-tree diff (clean filters; see docstring), whatchanged and
# cherry (patch machinery without an opt-out we verified), var (-l dumps config), anything
# that writes, fetches or edits.


def _git(args: Sequence[str], piped: bool) -> None:
    g = _Git()
    i = 0
    while i < len(args) and args[i].startswith("-"):
        a = args[i]
        if a in ("--no-pager", "-P", "--no-optional-locks"):
            i += 1
        elif a == "-C" and i + 1 < len(args):
            i += 2
        elif a == "-c" and i + 1 < len(args):
            key, eq, val = args[i + 1].partition("=")
            if not eq or val.lower() not in _GIT_DISABLING.get(key.lower(), ()):
                raise _Reject(f"git -c {args[i + 1]} (only disabling settings)")
            if key.lower() == "core.fsmonitor":
                g.fsmonitor_off = True
            elif key.lower() == "log.showsignature":
                g.signature_off = True
            i += 2
        else:
            raise _Reject(f"git global option {a}")  # --exec-path, --git-dir=, -p …
    if i >= len(args) or args[i] not in _GIT_SUBS:
        raise _Reject("git subcommand not allowed as a glance")
    rest = args[i + 1:]
    for a in rest:
        if "%G" in a or ("signature" in a and a != "--no-show-signature"):
            raise _Reject("git format asks for a signature check (runs gpg.program)")
        if a.startswith(":") and not g.fsmonitor_off:
            raise _Reject("git :path reads the index: add -c core.fsmonitor=")
        if not a.startswith("-") and _secret_path(a.rsplit(":", 1)[-1]):
            raise _Reject(f"git would show a credential file ({a})")
    _GIT_SUBS[args[i]](rest, g)


# --------------------------------------------------------------------------- whitelist

_VERBS: dict[str, _Check] = {
    # directory / system information
    # (no `env`/`printenv`: dumping the environment would put credentials into the model's
    # context and the stored transcript)
    **{v: _spec_only(_LS) for v in ("ls", "ll", "dir")},
    "pwd": _spec_only(_Spec("LP"), operands=False),
    "df": _spec_only(_DF),
    "du": _spec_only(_DU),
    "free": _spec_only(_FREE, operands=False),
    "uptime": _spec_only(_Spec("ps", "", "pretty since"), operands=False),
    "whoami": _spec_only(_Spec(), operands=False),
    "id": _spec_only(_Spec("ugGnrzZa", "", "user group groups name real zero context"), ),
    "uname": _spec_only(_Spec("asnrvmpio", "", "all kernel-name nodename kernel-release "
                              "kernel-version machine processor hardware-platform "
                              "operating-system"), operands=False),
    "arch": _spec_only(_Spec(), operands=False),
    "locale": _spec_only(_Spec("akmv", "", "all-locales charmaps category-name keyword-name "
                               "verbose")),
    "nproc": _spec_only(_Spec("", "", "all", "ignore"), operands=False),
    "getconf": _spec_only(_Spec("a"), operands=2),
    "sw_vers": lambda a, p: _sw_vers(a),
    "date": _date,
    "hostname": _hostname,
    # processes and containers
    "ps": _ps,
    # (no `top`: even `top -b -n 1` creates ~/.config/procps — the shell-run oracle caught it;
    # `ps` covers the look)
    "jobs": _spec_only(_Spec("lnprs"), operands=False),
    "lsof": _lsof,
    "netstat": _spec_only(_NETSTAT, operands=False),
    "pgrep": _spec_only(_PGREP),
    "ss": _spec_only(_SS),
    "systemctl": _systemctl,
    "docker": _docker,
    "kubectl": _kubectl,
    # viewing files
    "cat": _filter(_CAT, "cat"),
    "head": _filter(_HEAD, "head"),
    "tail": _filter(_HEAD, "tail"),  # same options as head: no -f/-F/--follow/--pid/-s
    "wc": _wc,
    "stat": _stat,
    "echo": _echo,
    "file": _file,
    "find": _find,
    "tree": _spec_only(_TREE),
    # path lookup
    **{v: _which for v in ("which", "whereis")},
    "type": _spec_only(_Spec("aftpP")),
    "command": _command,
    # text filters
    **{v: _grep for v in ("grep", "egrep", "fgrep")},
    "rg": _rg,
    "cut": _filter(_CUT, "cut"),
    "tr": _tr,
    "column": _filter(_COLUMN, "column"),
    "jq": _jq,
    "nl": _filter(_NL, "nl"),
    "rev": _rev,
    "comm": _comm,
    "diff": _diff,
    "sort": _filter(_SORT, "sort"),
    "uniq": _uniq,
    "awk": _awk,
    "sed": _sed,
    "git": _git,
}


def _sw_vers(args: Sequence[str]) -> None:
    if any(a not in ("-productName", "-productVersion", "-buildVersion",
                     "-productVersionExtra") for a in args):
        raise _Reject("sw_vers option")


_ENV_NAME = re.compile(r"(LANG|LANGUAGE|LC_[A-Z]+|TZ|NO_COLOR|COLUMNS|LINES|TERM|CLICOLOR)$")
_ENV_VALUE = re.compile(r"[A-Za-z0-9_.:@/+-]*$")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")


def _check_assignment(word: _Word) -> None:
    """``NAME=value cmd``: only locale/display knobs; PAGER-like ones only as ``cat``.

    Arbitrary prefixes are code execution (``LD_PRELOAD``, ``GIT_EXTERNAL_DIFF``,
    ``PATH``, ``BASH_ENV`` …).
    """
    name, _, value = word.text.partition("=")
    if name in ("PAGER", "GIT_PAGER") and value in ("", "cat"):
        return
    if _ENV_NAME.match(name) and _ENV_VALUE.match(value):
        return
    raise _Reject(f"environment prefix {name}")


# Globs: these verbs cannot be turned into a writer by any file name a glob may expand to;
# content readers may glob only behind a literal prefix (so no expansion starts with "-")
# and only to names that cannot be credential files (see ``_readable``).
_GLOB_FREE = {"ls", "ll", "dir", "wc", "stat", "du", "df"}
_GLOB_READERS = {"cat", "head", "tail", "grep", "egrep", "fgrep", "nl", "cut", "sort", "rev",
                 "column", "file"}


def _check_segment(words: list[_Word], piped: bool) -> None:
    i = 0
    while i < len(words) and _ASSIGNMENT.match(words[i].raw):
        _check_assignment(words[i])
        i += 1
    if i >= len(words):
        raise _Reject("bare assignment")
    verb = words[i]
    if verb.glob or verb.text not in _VERBS:
        raise _Reject(f"{verb.text!r} is not a whitelisted read-only command")
    for w in words[i + 1:]:
        if not w.glob or verb.text in _GLOB_FREE:
            continue
        # A filename like "-delete" or "-i" turns `find . *` / `sed -n p *` into a write,
        # and one pattern can become several operands (`uniq a*` writes the second match).
        if verb.text not in _GLOB_READERS or w.text[:1] in "-*?[":
            raise _Reject(f"unquoted glob in arguments of {verb.text}")
    _VERBS[verb.text]([w.text for w in words[i + 1:]], piped)


def _why_not(cmd: str) -> str | None:
    """None if ``cmd`` is ephemeral, else the first reason it is not (for tests/logs)."""
    if not isinstance(cmd, str) or not cmd.strip():
        return "empty command"
    try:
        segments = _segments(cmd)
        if not segments:
            return "no command"
        for words, piped in segments:
            _check_segment(words, piped)
    except _Reject as exc:
        return str(exc)
    except (RecursionError, StopIteration):  # pragma: no cover - defensive
        return "unparseable"
    return None


def is_ephemeral(cmd: str) -> bool:
    """True only for read-only shell commands whose output goes stale (``git status``, ``ls``).

    Decides both "the coordinator may run it itself" (glance) and "its old result expires on
    resume". Conservative: anything not provably read-only is False.
    """
    return _why_not(cmd) is None
