"""Start-up stays light: `import flower` and `flower --help` never import the SDK."""

from __future__ import annotations

import subprocess
import sys

import flower


def _imported_modules(code: str) -> str:
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", code],
                         capture_output=True, text=True, check=True)
    return out.stderr


def test_import_flower_does_not_import_the_sdk() -> None:
    assert "claude_agent_sdk" not in _imported_modules("import flower")


def test_help_does_not_import_the_sdk() -> None:
    log = _imported_modules("import sys; sys.argv=['flower','--help']\n"
                            "from flower.cli import main\n"
                            "try:\n    main()\nexcept SystemExit:\n    pass")
    assert "claude_agent_sdk" not in log
    assert "rich" not in log.split()  # rich loads only when something is rendered


def test_version() -> None:
    out = subprocess.run([sys.executable, "-m", "flower", "--version"], capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == f"flower, version {flower.__version__}"


def test_public_names_resolve() -> None:
    for name in flower.__all__:
        assert getattr(flower, name) is not None, name
    assert "Runtime" in dir(flower)


def test_core_exports_resolve() -> None:
    import flower.core

    for name in flower.core.__all__:
        assert getattr(flower.core, name) is not None, name
