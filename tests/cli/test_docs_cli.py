"""docs/cli.md against the command tree ``flower --help`` is built from.

The page is where a person looks up a flag; a flag or command added to ``flower/cli/app.py``
without a line there is invisible to them. Names are read from click's own objects, so a new
option fails this test until docs/cli.md mentions it.
"""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from flower.cli.app import GLOBAL_FLAGS, main

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def _page() -> str:
    return DOC.read_text(encoding="utf-8")


def _section(title: str) -> str:
    """The text under ``## title`` up to the next ``## `` heading."""
    found = re.search(rf"^## {re.escape(title)}.*?$(.*?)(?=^## |\Z)", _page(), re.M | re.S)
    assert found, f"docs/cli.md has no section {title!r}"
    return found.group(1)


def _names(params: list[click.Parameter]) -> list[str]:
    return [name for p in params if isinstance(p, click.Option)
            for name in (*p.opts, *p.secondary_opts)]


def _commands(group: click.Group, prefix: str = "flower") -> list[str]:
    """``flower go``, …, ``flower store copy``: every command path of the tree."""
    paths = []
    for name, command in group.commands.items():
        paths.append(f"{prefix} {name}")
        if isinstance(command, click.Group):
            paths += _commands(command, f"{prefix} {name}")
    return paths


def _in_backticks(name: str, text: str) -> bool:
    """``name`` inside some `…` span, as a whole word (``--run`` is not ``--run-dir``)."""
    return any(re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", span)
               for span in re.findall(r"`([^`]*)`", text))


@pytest.mark.parametrize("name", _names(main.params))
def test_every_global_flag_is_in_the_global_flags_table(name: str) -> None:
    assert _in_backticks(name, _section("Global flags")), f"{name} missing from docs/cli.md"


def test_the_lifted_flags_are_the_groups_options() -> None:
    # route() lifts GLOBAL_FLAGS wherever they stand; each is a group option documented above
    assert set(GLOBAL_FLAGS) <= set(_names(main.params))


@pytest.mark.parametrize("path", _commands(main))
def test_every_command_is_in_the_command_table(path: str) -> None:
    table = _page().split("## Global flags", 1)[0]
    assert _in_backticks(path, table), f"{path} missing from docs/cli.md's command table"


@pytest.mark.parametrize("name", [n for n in _names(main.commands["go"].params)
                                  if n not in ("-h", "--help")])
def test_every_go_flag_is_in_the_go_table(name: str) -> None:
    assert _in_backticks(name, _section("`go` flags")), f"go {name} missing from docs/cli.md"


def test_timeout_inf_is_documented_in_help_and_docs() -> None:
    timeout = next(p for p in main.commands["go"].params if p.name == "timeout")
    assert "inf" in (timeout.help or "")
    row = next(line for line in _section("`go` flags").splitlines() if "--timeout" in line)
    assert "`inf`" in row


def test_demo_help_says_where_minus_w_comes_from() -> None:
    text = main.commands["demo"].help or ""
    assert "-w DIR" in text and "global" in text
