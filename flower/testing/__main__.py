"""``python -m flower.testing --script FILE.json [--port N] [--log FILE] [--no-auxiliary]
[--no-strict]``:
serve a scripted fake Anthropic API until SIGINT/SIGTERM. Prints the base URL (one line on
stdout) first, so a wrapper can read it and export ``ANTHROPIC_BASE_URL``. Script format:
docs/testing.md."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from flower.testing.request import Request
from flower.testing.server import FakeServer

_KEYS = ("steps", "routes", "fallback")
# The test kit imports nothing of flower (so it cannot share flower's bugs): its own lines.
# a script it cannot use: one line on stderr, exit 2
FAKE_SCRIPT_UNREADABLE = "flower.testing: cannot read the script {path}: {error}"
FAKE_SCRIPT_NOT_JSON = "flower.testing: the script {path} is not valid JSON: {error}"
FAKE_SCRIPT_BAD_SHAPE = (
    "flower.testing: the script {path} must be a JSON object with \"steps\"/\"routes\"/"
    "\"fallback\" (or a bare list of steps), got {got}"
)
FAKE_SCRIPT_BAD_PART = "flower.testing: the script {path} is not usable: {error}"


class ScriptError(ValueError):
    """A script file the process mode cannot use; the message is the one line to print."""


def read_script(path: Path) -> dict[str, Any]:
    """The script in ``path`` as the object ``FakeServer.load`` takes; a bare JSON list is
    the ``steps`` shorthand. ``ScriptError`` (one readable line) for anything else."""
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScriptError(FAKE_SCRIPT_UNREADABLE.format(path=path, error=exc)) from exc
    try:
        script = json.loads(raw)
    except ValueError as exc:
        raise ScriptError(FAKE_SCRIPT_NOT_JSON.format(path=path, error=exc)) from exc
    if isinstance(script, list):
        script = {"steps": script}
    if not isinstance(script, dict) or not set(script) <= set(_KEYS) or not all(
            isinstance(script.get(k, []), list) for k in ("steps", "routes")) or not all(
            isinstance(r, dict) for r in script.get("routes", [])):
        got = type(script).__name__ if not isinstance(script, dict) else json.dumps(
            script, ensure_ascii=False)[:80]
        raise ScriptError(FAKE_SCRIPT_BAD_SHAPE.format(path=path, got=got))
    try:  # build every step and predicate once, on a server that never starts
        FakeServer().load(script)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        detail = f"{type(exc).__name__}: {exc}"[:200]
        raise ScriptError(FAKE_SCRIPT_BAD_PART.format(path=path, error=detail)) from exc
    return script


def load_script(fake: FakeServer, script: dict[str, Any]) -> None:
    """Apply a JSON script to a server (kept for callers; same as ``fake.load``)."""
    fake.load(script)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m flower.testing",
                                 description="Scripted fake Anthropic Messages API.")
    ap.add_argument("--script", type=Path, help="JSON script (see docs/testing.md)")
    ap.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--log", type=Path, help="append one JSON line per request to this file")
    ap.add_argument("--no-auxiliary", action="store_true",
                    help="script every request: the CLI's title and quota requests and "
                         "flower's credential probe pop steps too (default: answered by "
                         "the fake itself)")
    ap.add_argument("--no-strict", action="store_true",
                    help="accept every request (default: a request the real API refuses — a "
                         "tool_use without its tool_result, say — gets its HTTP 400)")
    args = ap.parse_args(argv)
    script = None
    if args.script:
        try:
            script = read_script(args.script)
        except ScriptError as exc:
            print(exc, file=sys.stderr, flush=True)
            return 2

    log = args.log.open("a", encoding="utf-8") if args.log else None
    log_lock = threading.Lock()

    def on_request(req: Request) -> None:
        if log is not None:
            with log_lock:
                log.write(json.dumps(req.to_json(), ensure_ascii=False) + "\n")
                log.flush()

    fake = FakeServer(port=args.port, host=args.host, on_request=on_request,
                      auxiliary=not args.no_auxiliary, strict=not args.no_strict)
    if script is not None:
        load_script(fake, script)
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    fake.start()
    print(fake.url, flush=True)
    print(f"fake Anthropic API on {fake.url} — export ANTHROPIC_BASE_URL={fake.url}; "
          f"Ctrl-C to stop", file=sys.stderr, flush=True)
    while not done.wait(0.5):
        pass
    fake.stop()
    if log is not None:
        log.close()
    print(f"served {len(fake.message_requests())} model turns "
          f"(+{len(fake.auxiliary_requests())} auxiliary, {len(fake.rejected)} refused), "
          f"{fake.remaining()} steps left, {fake.exhausted} exhausted", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
