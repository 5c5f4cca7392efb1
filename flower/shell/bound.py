"""The bounded form a glance runs in, and how to recognise it again.

A glance reaches the Bash tool as::

    bash -c '<SCRIPT>' glance '<the hardened command>'

``SCRIPT`` is a constant (per ``timeout`` program name): it exports the git settings that
no repository config can override, runs the command under ``timeout -s KILL`` with stdin
closed and stderr folded into stdout, caps the output with ``head -c``, and appends a short
note when the command was killed or cut. The kill comes from inside, seconds before the
CLI's own Bash timeout — which would not kill the process but move it to the background,
where ``cat //dev/zero`` once went on writing 124 MB while the coordinator carried on.

``unwrap`` gives back the wrapped command when a command has exactly this shape, so the
predicate judges what runs, whichever of the two a transcript recorded.
"""

from __future__ import annotations

import shlex

from flower.shell.lexer import Refused, Word, segments

__all__ = ["GLANCE_SECONDS", "OUTPUT_CAP", "TOOL_TIMEOUT_MS", "script", "unwrap", "wrap"]

#: A glance is killed after this many seconds.
GLANCE_SECONDS = 8
#: The Bash tool's own timeout for a glance (ms): well after the kill, so it never fires.
TOOL_TIMEOUT_MS = 20_000
#: At most this many bytes of a glance's output reach the CLI.
OUTPUT_CAP = 200_000
#: Program names of coreutils ``timeout`` (``gtimeout`` from Homebrew's coreutils).
TIMEOUT_PROGRAMS = ("timeout", "gtimeout")
# Shown to the model after the output (no quote characters: they sit inside the script).
NOTE_KILLED = (f"[瞄一眼超过 {GLANCE_SECONDS} 秒,已被终止,上面的输出不完整。"
               "要完整结果就派给 subagent。]")
NOTE_CAPPED = f"[输出超过 {OUTPUT_CAP} 字节,后面的已截掉。要看全部就派给 subagent。]"
_ARGV0 = "glance"

#: Settings exported for every glance: git never fetches lazily, allows no transport (this
#: beats a repository's own ``protocol.<name>.allow``), takes no optional locks (so status
#: does not rewrite the index), never prompts and never pages.
_EXPORTS = ("GIT_NO_LAZY_FETCH=1 GIT_ALLOW_PROTOCOL=none GIT_OPTIONAL_LOCKS=0 "
            "GIT_TERMINAL_PROMPT=0 GIT_PAGER=cat PAGER=cat")


def script(timeout: str = "timeout") -> str:
    """The constant wrapper script for ``timeout`` program ``timeout``."""
    return (f"export {_EXPORTS}\n"
            f'{timeout} -s KILL {GLANCE_SECONDS} bash -c "$1" 2>&1 </dev/null'
            f" | head -c {OUTPUT_CAP}\n"
            's=("${PIPESTATUS[@]}")\n'
            f'if [ "${{s[0]}}" = 137 ]; then echo "{NOTE_KILLED}"; fi\n'
            f'if [ "${{s[0]}}" = 141 ]; then echo "{NOTE_CAPPED}"; s[0]=0; fi\n'
            'exit "${s[0]}"')


_SCRIPTS = {script(t) for t in TIMEOUT_PROGRAMS}


def wrap(cmd: str, timeout: str = "timeout") -> str:
    """``cmd`` in the bounded form (``timeout``: the program name found on this machine)."""
    if timeout not in TIMEOUT_PROGRAMS:
        raise ValueError(f"unknown timeout program {timeout!r}")
    return f"bash -c {shlex.quote(script(timeout))} {_ARGV0} {shlex.quote(cmd)}"


def unwrap(cmd: str) -> str | None:
    """The command inside ``cmd`` if ``cmd`` is exactly a bounded glance, else None."""
    if not cmd.startswith("bash -c "):
        return None
    try:
        segs = segments(cmd)
    except Refused:
        return None
    if len(segs) != 1:
        return None
    words: list[Word] = segs[0].words
    texts = [w.text for w in words]
    if len(texts) == 5 and texts[:2] == ["bash", "-c"] and texts[2] in _SCRIPTS \
            and texts[3] == _ARGV0:
        return texts[4]
    return None
