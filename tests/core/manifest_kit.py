"""What the manifest tests compare against, shared by the three modules that test its bytes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flower.core import manifest as manifest_mod
from flower.core.manifest import escape_surrogates


def dumped(rows: list[dict[str, Any]], scrub: Any = lambda t: t) -> bytes:
    """The bytes ``json.dumps(indent=2)`` gives ``rows``: what the manifest writer wrote
    before it kept anything between writes, and what the original flower reads."""
    return escape_surrogates(scrub(json.dumps(rows, ensure_ascii=False, indent=2))) \
        .encode("utf-8")


def count_parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per parse of a manifest's bytes from now on."""
    calls: list[int] = []
    real = manifest_mod.parse
    monkeypatch.setattr(manifest_mod, "parse", lambda raw: calls.append(1) or real(raw))
    return calls
