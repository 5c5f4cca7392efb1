"""The ``flower`` command line.

Kept import-light: only click is imported at module load; everything heavy (rich, the SDK,
the fake server) is imported inside the command that needs it, so ``flower --help`` is fast.
"""

from __future__ import annotations

import sys

import click

from flower import __version__


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="flower")
@click.pass_context
def main(ctx: click.Context) -> None:
    """flower: long-horizon agent runs that survive crashes, outages and full context windows."""
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


@main.command()
@click.option("-w", "--workspace", type=click.Path(file_okay=False), default=None,
              help="Folder the demo works in (default: ./flower-demo; run again to continue).")
def demo(workspace: str | None) -> None:
    """The whole flow, offline: clarify → goals → work, against a built-in fake model.

    No credentials, no network. Kill it halfway (even kill -9) and run it again: it wakes
    up and carries on.
    """
    from flower.demo import run_demo

    sys.exit(run_demo(workspace))


if __name__ == "__main__":  # pragma: no cover
    main()
