"""Lazy public names (PEP 562), shared by the package ``__init__`` modules.

``import flower`` and ``flower --help`` must stay fast and must not import the SDK, so each
package maps its public names to the module defining them and imports that module on first
attribute access only.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str],
                 namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Return ``(__getattr__, __dir__)`` for ``package`` resolving ``exports`` on demand;
    a resolved value is cached in ``namespace`` so later lookups are plain attributes."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
