"""The ``flower`` command line.

``flower "一句话"`` runs the default job, bare ``flower`` asks what to do (or wakes up),
``run TARGET`` drives your own workflow, ``once PROMPT`` one agent; ``setup``, ``demo``,
``log`` and ``analyze`` are the helpers around them; ``update`` installs a newer flower.

Kept import-light: only click is imported at module load; everything heavy (rich, the SDK,
prompt_toolkit) is imported inside the command that needs it, so ``flower --help`` is fast.

Global flags (``-w -r -v -W -T --store --run --sandbox --allow-domain --notify
--offline-wait``) may stand before or after the command:
they are lifted out of the argument list before click parses it, and the first remaining
word decides the command — anything that is not a command name is the ask of ``go``.
Three exceptions keep a slip of the keyboard from starting a paid run: ``help`` is the
help, a single ASCII word a typo or two away from a command name is refused (exit 2,
nothing created, the line says how to send it as an ask anyway), and an unknown flag
before any ask is the group's usage error, not ``go``'s.

Exit codes are ``flower.cli.exitcodes.ExitCode``. An exception out of a command body ends in
``FlowerGroup.invoke``: one line and exit 1 (``flower.cli.crash`` tells an error the person
can act on from a bug in flower); click's usage errors (exit 2) and Ctrl-C pass as before.
"""

from __future__ import annotations

import errno
import re
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from flower import __version__
from flower.cli.context import Globals, console, dirs
from flower.texts import NOT_A_COMMAND, NOTIFY_FLAG_HELP, ONE_WORD, RUN_FLAG_HELP

COMMANDS = ("go", "run", "once", "setup", "doctor", "demo", "log", "analyze", "store",
            "worker", "status", "update", "checkpoints", "rewind", "diff", "trust-env")
# flag -> takes a value?
GLOBAL_FLAGS = {"-w": True, "--workspace": True, "-r": True, "--run-dir": True,
                "-v": False, "--verbose": False, "-W": False, "--workbench": False,
                "-T": False, "--trim": False, "--store": True, "--run": True,
                "--sandbox": True, "--allow-domain": True, "--notify": True,
                "--offline-wait": True}
#: ``--sandbox`` values (flower.core.sandbox.MODES, not imported: ``--help`` stays light)
SANDBOX_MODES = ("auto", "on", "strict", "off")
HELP = ("-h", "--help")
HELP_WORD = "help"  # ``flower help [COMMAND]`` is ``flower [COMMAND] --help``
#: words people reach for, and what they mean here
ALIASES = {"version": ["--version"], "resume": ["go"], "list": ["log"]}
#: words guessed for a command that is named otherwise here: refused, naming that command
GUESSES = {"init": "setup", "config": "setup", "configure": "setup", "login": "setup",
           "auth": "setup", "check": "doctor", "health": "doctor", "history": "log",
           "runs": "log", "ls": "log", "show": "log", "report": "analyze", "continue": "resume",
           "start": "go", "upgrade": "update"}
#: a single ASCII word: what a mistyped command name looks like (a real ask rarely does)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
GROUP_ONLY = (*HELP, "-V", "--version")  # answered by the group itself
HARD_EXIT = "flower.hard_exit"  # ctx.meta key: this command talked to Temporal (see _leave)
# click's own control flow: usage errors (exit 2), --help/--version (Exit), Abort (Ctrl-C)
_CLICK = (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort)


def lift_globals(argv: list[str]) -> tuple[list[str], list[str]]:
    """Split ``argv`` into (global flags with their values, the rest), wherever they stand.

    ``--flag=value`` is understood; scanning stops at ``--`` so an ask can start with ``-``.
    """
    lifted: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest += argv[i:]
            break
        name = arg.split("=", 1)[0] if arg.startswith("--") else arg
        if name in GLOBAL_FLAGS:
            lifted.append(arg)
            if GLOBAL_FLAGS[name] and "=" not in arg and i + 1 < len(argv):
                lifted.append(argv[i + 1])
                i += 1
        else:
            rest.append(arg)
        i += 1
    return lifted, rest


def route(argv: list[str]) -> list[str]:
    """The default-command rule: global flags first, then the command; a first word that is
    no command (or nothing at all) means ``go`` — ``flower "X"`` is ``flower go "X"``, bare
    ``flower`` is ``flower go``. ``-h`` alone asks for the group's help."""
    lifted, rest = lift_globals(argv)
    if not rest:
        return lifted + ([] if any(a in HELP for a in lifted) else ["go"])
    if rest[0] == HELP_WORD:
        return [*lifted, *rest[1:2], "--help"]
    if rest[0] in ALIASES and (rest[0] != "version" or len(rest) == 1):
        return [*lifted, *ALIASES[rest[0]], *rest[1:]]
    if rest[0] in GROUP_ONLY and len(rest) == 1:
        return lifted + rest
    if rest[0] in COMMANDS:
        return lifted + rest
    if rest[0].startswith("-") and rest[0] not in ("--", *HELP) and not _go_option(rest[0]):
        return lifted + rest  # the group reports it, with its own usage and options
    return [*lifted, "go", *rest]


def _go_option(arg: str) -> bool:
    """Is ``arg`` (``--rounds`` or ``--rounds=2``) one of ``go``'s own options?"""
    name = arg.split("=", 1)[0]
    return any(name in p.opts or name in p.secondary_opts for p in go.params)


def _distance(a: str, b: str) -> int:
    """Edits (insert, delete, change, swap two neighbours) turning ``a`` into ``b``: a
    swapped pair (``lgo``) is one slip, as it is on a keyboard."""
    rows = [list(range(len(b) + 1))]
    for i, ca in enumerate(a, 1):
        row = [i]
        for j, cb in enumerate(b, 1):
            best = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                best = min(best, rows[-2][j - 2] + 1)
            row.append(best)
        rows.append(row)
    return rows[-1][-1]


def near_command(word: str) -> str | None:
    """The command ``word`` is most likely a typo of, or ``None`` when it reads as an ask.

    Only a single ASCII word counts: one of ``GUESSES`` (``init`` is ``setup``), or within
    one edit of a name of up to four letters (``lgo``, ``dmeo``) and two of a longer one
    (``stup``, ``anaylze``). Other words (``fix``, ``test``) are no typo: alone they are
    refused with the list of commands, in a sentence they are the ask.
    """
    if not _WORD.fullmatch(word):
        return None
    low = word.lower()
    if low in GUESSES:
        return GUESSES[low]
    near = [((d, abs(len(name) - len(low))), name) for name in (*COMMANDS, HELP_WORD)
            if (d := _distance(low, name)) <= (1 if len(name) <= 4 else 2)]
    # on a tie the name of the same length wins: ``lgo`` is ``log`` swapped, not ``go``
    return min(near)[1] if near else None


class FlowerGroup(click.Group):
    """A group that applies ``route`` before parsing."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        routed = route(list(args))
        _, rest = lift_globals(list(args))
        known = (*COMMANDS, *ALIASES, HELP_WORD)
        if rest and rest[0] not in known and (typo := near_command(rest[0])):
            # refused before anything runs: no .flower/, no credential probe, no request
            click.echo(NOT_A_COMMAND.format(word=rest[0], command=typo), err=True)
            ctx.exit(2)
        if len(rest) == 1 and rest[0] not in known and _WORD.fullmatch(rest[0]):
            # one ASCII word is a command guessed far more often than a task: a paid run
            # started by `flower doctor` would be the worst answer to it
            click.echo(ONE_WORD.format(word=rest[0], commands=", ".join(COMMANDS)), err=True)
            ctx.exit(2)
        return super().parse_args(ctx, routed)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; an exception out of its body becomes one line and exit 1 (a bug
        also gets its traceback written to a file, see ``flower.cli.crash``). click's own
        exceptions, a closed stdout and ``KeyboardInterrupt`` go on to click unchanged."""
        try:
            return super().invoke(ctx)
        except _CLICK:
            raise
        except Exception as exc:
            if isinstance(exc, OSError) and exc.errno == errno.EPIPE:
                raise  # stdout closed (flower log | head): click exits 1 quietly, as before
            from flower.cli.crash import handle

            code = handle(console(), exc, _run_dir(ctx.obj))
            if ctx.meta.get(HARD_EXIT):
                _leave(code)
            sys.exit(code)


def _run_dir(g: Any) -> Path | None:
    """Where a crash report goes: the run dir the global flags name, if they were parsed."""
    if not isinstance(g, Globals):
        return None
    try:
        return dirs(g)[1]
    except (OSError, ValueError, RuntimeError):  # a path resolve() cannot take
        return None


CONTEXT = {"help_option_names": list(HELP), "max_content_width": 100}


def _leave(code: int) -> NoReturn:
    """Exit after talking to Temporal: output flushed, then ``os._exit`` — the temporalio
    core's native threads can abort a normal interpreter shutdown (``PyGILState_Release``)."""
    import os

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _talks_to_temporal() -> None:
    """Mark the running command: an exception out of it also ends through ``_leave``."""
    click.get_current_context().meta[HARD_EXIT] = True


def cap_options() -> Any:
    """``--budget USD`` and ``--max-hours H``: caps for the whole task (every step, every
    wake until ``--new``), kept in the run dir's ledger (flower/core/ledger.py). Command
    options like ``--timeout``, not global flags: ``once`` has a ``-b/--budget`` of its own."""

    def wrap(f: Any) -> Any:
        f = click.option("--max-hours", "max_hours", type=float, default=None, metavar="H",
                         help="Time cap for the task, in hours of running (asks at the cap; "
                              "nobody answering stops it).")(f)
        return click.option("--budget", "budget", type=float, default=None, metavar="USD",
                            help="Spending cap for the task in dollars, across steps, "
                                 "workers and wakes; a wake without it keeps the last cap.")(f)

    return wrap


def temporal_options() -> Any:
    """``--temporal HOST:PORT`` and ``--queue Q`` (plus ``--heartbeat``), for the commands
    that talk to a Temporal server (docs/distributed.md)."""

    def wrap(f: Any) -> Any:
        f = click.option("--heartbeat", type=float, default=30.0, show_default=True,
                         help="Seconds without a heartbeat before a step moves to another "
                              "worker.")(f)
        f = click.option("--queue", default="flower", show_default=True,
                         help="Temporal task queue the workers serve.")(f)
        return click.option("--temporal", "temporal", default=None,
                            metavar="HOST:PORT",
                            help="Run on Temporal workers (flower worker) instead of here.")(f)

    return wrap


@click.group(cls=FlowerGroup, context_settings=CONTEXT, invoke_without_command=True)
@click.option("-w", "--workspace", default=".", show_default=True,
              help="Folder the agents work in (the workbench .flower/ lives there).")
@click.option("-r", "--run-dir", default=None,
              help="Sessions, manifest and lineage (default: <workspace>/runs).")
@click.option("-v", "--verbose", is_flag=True,
              help="Also show subagent text and successful tool results; print the config.")
@click.option("-W", "--workbench", is_flag=True,
              help="run/once: give a workflow without one a workbench (<run-dir>/workbench).")
@click.option("-T", "--trim", is_flag=True,
              help="run/once: trim old large tool results on resume (go trims by default).")
@click.option("--store", "store", default=None, metavar="URL",
              help="Session store: postgresql://… or a sessions.db path "
                   "(default: $FLOWER_STORE_URL, else <run-dir>/sessions.db).")
@click.option("--run", "run", default=None, metavar="NAME", help=RUN_FLAG_HELP)
@click.option("--sandbox", "sandbox", type=click.Choice(SANDBOX_MODES), default="auto",
              show_default=True,
              help="go/run/once: OS sandbox for Bash. auto: the read-only roles where this "
                   "machine has one; on: that or fail; strict: workers too; off.")
@click.option("--allow-domain", "allow_domain", multiple=True, metavar="D",
              help="--sandbox strict: one more host workers' commands may reach (repeatable; "
                   "package registries and git hosts are on the list already).")
@click.option("--notify", "notify", default=None, metavar="CMD", help=NOTIFY_FLAG_HELP)
@click.option("--offline-wait", "offline_wait", type=float, default=None, metavar="SECONDS",
              help="go/run/once: how long a step waits for an unreachable API before it "
                   "gives up (default 3600; env FLOWER_OFFLINE_WAIT).")
@click.version_option(__version__, "-V", "--version", prog_name="flower")
@click.pass_context
def main(ctx: click.Context, workspace: str, run_dir: str | None, verbose: bool,
         workbench: bool, trim: bool, store: str | None, run: str | None, sandbox: str,
         allow_domain: tuple[str, ...], notify: str | None,
         offline_wait: float | None) -> None:
    """flower: long-horizon agent runs that survive crashes, outages and full context windows.

    \b
      flower "写个 md 转 html 的脚本"   clarify → goal → coordinator + workers → judge
      flower                           same folder, later: wake up and carry on
      flower run flows.py:main         your own workflow (import flower)
      flower once "读一眼这个仓库"       one agent, one shot
    """
    if store:
        import os

        # every Runtime of this process (and flower log) picks the store up from here
        os.environ["FLOWER_STORE_URL"] = store
    if run:
        import os

        # the run name of a shared store (stores/book.py), read by every Runtime here
        os.environ["FLOWER_RUN"] = run
    if offline_wait is not None:
        import os

        # the bound of every Runtime's wait for the network here (runtime.py reads it)
        os.environ["FLOWER_OFFLINE_WAIT"] = str(max(0.0, offline_wait))
    ctx.obj = Globals(workspace, run_dir, verbose, workbench, trim, store, run, sandbox,
                      allow_domain, notify)
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


@main.command(context_settings=CONTEXT)
@click.argument("ask", required=False)
@click.option("--asks", type=int, default=-1, show_default=True,
              help="Question quota; negative = unlimited, 0 = never ask.")
@click.option("--rounds", type=int, default=3, show_default=True,
              help="Work rounds in total (each judged by a fresh judge).")
@click.option("--no-goal", is_flag=True, help="No goal step, no judge.")
@click.option("--judge-can-run", is_flag=True,
              help="The round judge may run commands (harder verdicts; it could change files).")
@click.option("--timeout", type=float, default=1800.0, show_default=True,
              help="Seconds to wait for an answer; inf = wait as long as it takes; "
                   "0 or less = fully automatic.")
@click.option("--isolate", is_flag=True, help="Each worker in its own git worktree.")
@click.option("--window", type=int, default=None,
              help="Context window for handoff (default: from the model name).")
@click.option("--no-handoff", is_flag=True, help="Let the CLI compact instead of handing off.")
@click.option("--new", is_flag=True, help="Start a new task here (the old one is archived).")
@click.option("--clarify-only", is_flag=True, help="Only confirm the requirement.")
@click.option("--no-trim", is_flag=True, help="Keep old large tool results on resume.")
@click.option("--no-bequest", is_flag=True,
              help="At the end, do not write the handover block into CLAUDE.md / AGENTS.md.")
@cap_options()
@temporal_options()
@click.pass_obj
def go(g: Globals, ask: str | None, temporal: str | None, queue: str, heartbeat: float,
       **opts: Any) -> None:
    """The default job: clarify → set goal → coordinator dispatches → judge each round."""
    if temporal:
        from flower.cli.commands.temporal import go as submit_go

        _talks_to_temporal()
        _leave(submit_go(g, ask, address=temporal, queue=queue, heartbeat=heartbeat, **opts))
    from flower.cli.commands.go import go as run_go

    sys.exit(run_go(g, ask, **opts))


@main.command(context_settings=CONTEXT)
@click.argument("target")
@cap_options()
@temporal_options()
@click.pass_obj
def run(g: Globals, target: str, temporal: str | None, queue: str, heartbeat: float,
        budget: float | None, max_hours: float | None) -> None:
    """Run your workflow: TARGET is module:attr or path/to/file.py:attr (a Workflow, or a
    callable returning one)."""
    if temporal:
        from flower.cli.commands.temporal import run_target as submit_target

        _talks_to_temporal()
        _leave(submit_target(g, target, address=temporal, queue=queue, heartbeat=heartbeat,
                             budget=budget, max_hours=max_hours))
    from flower.cli.commands.run import run as run_target

    sys.exit(run_target(g, target, budget=budget, max_hours=max_hours))



@main.command(context_settings=CONTEXT)
@click.argument("prompt")
@click.option("-i", "--instructions", default="", help="Appended to Claude Code's prompt.")
@click.option("-t", "--tools", default="Read,Glob,Grep", show_default=True,
              help="Comma-separated tools the agent may use.")
@click.option("-p", "--permission-mode", default="default", show_default=True,
              type=click.Choice(["default", "acceptEdits", "plan", "bypassPermissions"]))
@click.option("-b", "--budget", type=float, default=None, help="Dollar cap.")
@click.option("--resume", "resume", default=None, help="Continue this session id.")
@click.option("--fork", is_flag=True, help="With --resume: branch off instead of continuing.")
@click.pass_obj
def once(g: Globals, prompt: str, **opts: Any) -> None:
    """One agent, one shot: no workflow, no clarify, no judge."""
    from flower.cli.commands.once import once as run_once

    sys.exit(run_once(g, prompt, **opts))


@main.command(context_settings=CONTEXT)
def setup() -> None:
    """Configure the credential (~/.config/flower/.env, mode 600) and check it."""
    from flower.cli.commands.setup import setup as run_setup

    sys.exit(run_setup())


@main.command(context_settings=CONTEXT)
@click.pass_obj
def doctor(g: Globals) -> None:
    """Check what a run here needs: the credential (with one tiny request), the bundled
    claude CLI, the sandbox, git, docker, the session store, the disk — one line each."""
    from flower.cli.commands.doctor import doctor as run_doctor

    sys.exit(run_doctor(g))


@main.command(context_settings=CONTEXT)
@click.option("--check", "check_only", is_flag=True,
              help="Only say whether a newer version exists (exit 0 either way).")
def update(check_only: bool) -> None:
    """Install a newer flower the way install.sh installed this one (pipx, uv or its venv)."""
    from flower.cli.commands.update import update as run_update

    sys.exit(run_update(check_only=check_only))


@main.command(context_settings=CONTEXT)
@click.pass_obj
def demo(g: Globals) -> None:
    """The whole default job offline against a built-in fake model: no credentials.

    Works in ./flower-demo, or in DIR with the global flag -w DIR (flower demo -w DIR).
    Kill it halfway (even kill -9) and run it again: it wakes up and carries on.
    """
    from flower.cli.commands.demo import run_demo

    sys.exit(run_demo(g.workspace if g.workspace != "." else None, notify=g.notify))


def schema_option(f: Any) -> Any:
    """``--schema NAME``: the PostgreSQL schema a store given to Runtime with
    ``PostgresSessionStore(schema=NAME)`` keeps its sessions in."""
    return click.option("--schema", default=None, metavar="NAME",
                        help="With a PostgreSQL --store: the schema holding the sessions "
                             "(default: flower).")(f)


@main.command("log", context_settings=CONTEXT)
@click.argument("run_dir", required=False)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@schema_option
@click.pass_obj
def log_cmd(g: Globals, run_dir: str | None, as_json: bool, schema: str | None) -> None:
    """The runs in this folder: steps, sessions, attempts, cost, context per round."""
    from flower.cli.commands.log import show_log

    sys.exit(show_log(g, run_dir, as_json=as_json, schema=schema))


@main.command("analyze", context_settings=CONTEXT)
@click.argument("run_dir", required=False)
@click.option("--json", "as_json", is_flag=True, help="The report as one JSON document.")
@schema_option
@click.pass_obj
def analyze_cmd(g: Globals, run_dir: str | None, as_json: bool,
                schema: str | None) -> None:
    """Post-mortem of a run folder: per step and session the turns, tools, subagents,
    retries, handoffs, resume rewrites, context slope, cache and largest tool results."""
    from flower.cli.commands.analyze import analyze_run

    sys.exit(analyze_run(g, run_dir, as_json=as_json, schema=schema))


@main.command("checkpoints", context_settings=CONTEXT)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def checkpoints_cmd(g: Globals, as_json: bool) -> None:
    """The project's snapshots, oldest first: id, time, step, what made it, files changed."""
    from flower.cli.commands.checkpoints import show_checkpoints

    sys.exit(show_checkpoints(g, as_json=as_json))


@main.command("rewind", context_settings=CONTEXT)
@click.argument("checkpoint")
@click.option("--dry-run", is_flag=True, help="Print what would change; change nothing.")
@click.pass_obj
def rewind_cmd(g: Globals, checkpoint: str, dry_run: bool) -> None:
    """Restore the project's files to CHECKPOINT (the current state is kept as a
    before-rewind checkpoint first); the steps after it run again next time."""
    from flower.cli.commands.checkpoints import rewind

    sys.exit(rewind(g, checkpoint, dry_run=dry_run))


@main.command("diff", context_settings=CONTEXT)
@click.argument("checkpoint")
@click.argument("other", required=False)
@click.option("--stat", is_flag=True, help="Only the files and their line counts.")
@click.pass_obj
def diff_cmd(g: Globals, checkpoint: str, other: str | None, stat: bool) -> None:
    """What changed from CHECKPOINT to OTHER (default: the project now)."""
    from flower.cli.commands.checkpoints import diff

    sys.exit(diff(g, checkpoint, other, stat=stat))


@main.command("trust-env", context_settings=CONTEXT)
def trust_env_cmd() -> None:
    """Read this folder's .env again: it changed while agents ran, so flower stopped
    reading it until you have looked at it."""
    from pathlib import Path

    from flower import config, texts

    path = Path.cwd() / ".env"
    if not path.is_file():
        print(texts.ENV_NOTHING_TO_TRUST.format(path=path))
        sys.exit(1)
    config.trust_env(path)
    print(texts.ENV_TRUSTED.format(path=path))


@main.group("store", context_settings=CONTEXT)
def store_group() -> None:
    """Session stores: copy sessions between SQLite and PostgreSQL."""


@store_group.command("copy", context_settings=CONTEXT)
@click.argument("src")
@click.argument("dst")
def store_copy(src: str, dst: str) -> None:
    """Copy every session from SRC to DST (each a postgresql:// URL or a sessions.db path)
    and verify every entry; sessions already in DST are completed, never doubled."""
    from flower.cli.commands.store import copy_store

    sys.exit(copy_store(src, dst))


@main.command(context_settings=CONTEXT)
@click.option("--temporal", "temporal", required=True, metavar="HOST:PORT",
              help="The Temporal server (temporal server start-dev: 127.0.0.1:7233).")
@click.option("--queue", default="flower", show_default=True,
              help="Temporal task queue to serve.")
@click.option("--concurrency", type=int, default=None,
              help="Steps this worker runs at once (default 8).")
@click.pass_obj
def worker(g: Globals, temporal: str, queue: str, concurrency: int | None) -> None:
    """Run steps of distributed runs (flower run … --temporal). Sessions go to --store
    (shared PostgreSQL when workers are on several machines); targets must be importable."""
    from flower.cli.commands.temporal import worker as serve

    _talks_to_temporal()
    _leave(serve(g, temporal, queue, concurrency))


@main.command(context_settings=CONTEXT)
@click.option("--temporal", "temporal", required=True, metavar="HOST:PORT",
              help="The Temporal server.")
@click.option("--limit", type=int, default=50, show_default=True, help="At most this many runs.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def status(temporal: str, limit: int, as_json: bool) -> None:
    """Distributed runs: current step, cost and state of each."""
    from flower.cli.commands.temporal import status as show_status

    _talks_to_temporal()
    _leave(show_status(temporal, limit=limit, as_json=as_json))


if __name__ == "__main__":  # pragma: no cover
    main()
