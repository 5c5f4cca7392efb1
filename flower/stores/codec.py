"""Entry ⇄ stored text, shared by every backend (SQLite, PostgreSQL).

The stored text is exactly what ``json.dumps(entry, ensure_ascii=False)`` gives — readable
CJK in ``sqlite3 runs/sessions.db`` — except for an entry holding a lone surrogate (the CLI's
JSON may carry ``\\ud83d`` when it cuts an emoji in half). Such text is not valid UTF-8, so
no database accepts it; that one entry is stored with ``ensure_ascii`` escapes instead,
which is valid ASCII and decodes back to the very same Python string. Nothing else changes
and rows written before this module existed load as they always did.

Decoding uses ``orjson`` when it is installed (several times faster on a 50k-entry load)
and falls back to ``json`` per row for the few texts orjson refuses (it rejects escaped
lone surrogates); both give equal objects.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from flower.errors import Unstorable, one_line

__all__ = ["Unstorable", "decode", "decode_many", "encode", "encode_batch", "pretty", "safe_text"]

# Entries are plain JSON from the CLI (no cycles possible); skipping the cycle check and
# the per-call kwargs handling of json.dumps is ~15% of append time.
_FAST = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode
_ASCII = json.JSONEncoder(ensure_ascii=True, check_circular=False).encode

try:  # optional fast path: pip install 'flower[postgres]' (or orjson alone)
    import orjson as _orjson

    _ORJSON_LOADS: Callable[[Any], Any] | None = _orjson.loads
    _ORJSON_ERROR: type[Exception] = _orjson.JSONDecodeError
    _FRAGMENT: Any = getattr(_orjson, "Fragment", None)  # orjson 3.9+
except ImportError:  # pragma: no cover - exercised only without orjson
    _orjson = None  # type: ignore[assignment]
    _ORJSON_LOADS = None
    _ORJSON_ERROR = ValueError
    _FRAGMENT = None

#: The ``orjson`` module when it is installed, else ``None``: the one place that decides,
#: for other writers of JSON (``manifest.json``) that want its speed and must fall back.
ORJSON: Any = _orjson


def _valid_utf8(text: str) -> bool:
    if text.isascii():  # O(1) in CPython: the common case costs nothing
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def encode(entry: Any) -> str:
    """The stored text of one entry: valid UTF-8 that ``decode`` turns back into ``entry``.

    Raises :class:`Unstorable` for an entry that is no JSON value.
    """
    try:
        text = _FAST(entry)
    except (TypeError, ValueError, RecursionError) as exc:
        raise Unstorable(one_line(exc)) from exc
    if _valid_utf8(text):
        return text
    return _ASCII(entry)  # lone surrogates: \\udXXX escapes, lossless


def safe_text(value: str) -> str:
    """A plain string column value (a uuid) that a database accepts: unchanged when it is
    valid UTF-8, else its JSON-escaped form (the same input always maps to the same key)."""
    return value if _valid_utf8(value) else json.dumps(value)[1:-1]


def encode_batch(entries: Iterable[Any]) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """Encode a batch: ``(position, text)`` pairs of what can be stored, and
    ``(position, reason)`` of what cannot. One bad entry never costs the others."""
    good: list[tuple[int, str]] = []
    bad: list[tuple[int, str]] = []
    fast, valid = _FAST, _valid_utf8
    for i, entry in enumerate(entries):
        try:
            text = fast(entry)
        except (TypeError, ValueError, RecursionError) as exc:
            bad.append((i, one_line(exc)))
            continue
        if not valid(text):
            text = _ASCII(entry)
        good.append((i, text))
    return good, bad


def decode(text: str | bytes) -> Any:
    """One stored text back to the entry."""
    if _ORJSON_LOADS is not None:
        try:
            return _ORJSON_LOADS(text)
        except _ORJSON_ERROR:
            pass  # escaped lone surrogates: json accepts them
    return json.loads(text)


def decode_many(texts: Iterable[str | bytes]) -> list[Any]:
    """Decode rows in order (the hot loop of every load)."""
    loads = _ORJSON_LOADS
    if loads is None:
        jl = json.loads
        return [jl(t) for t in texts]
    out: list[Any] = []
    append = out.append
    err = _ORJSON_ERROR
    for t in texts:
        try:
            append(loads(t))
        except err:
            append(json.loads(t))
    return out


_INT64 = (-(2**63), 2**64 - 1)  # what orjson writes itself; beyond it json's digits are used


def _as_json_writes(value: Any) -> Any:
    """``value`` with every number orjson would write differently from ``json.dumps``
    replaced by ``json.dumps``'s own text: floats below 1e-4 (``5e-05`` vs ``5e-5``) or
    from 1e16 up, NaN/Infinity (orjson writes ``null``), integers beyond 64 bits (which
    orjson refuses). Every other float is written alike by both (shortest round-trip)."""
    kind = type(value)
    if kind is dict:
        return {k: _as_json_writes(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [_as_json_writes(v) for v in value]
    if kind is float:
        if value != value or (not 1e-4 <= abs(value) < 1e16 and value != 0.0):
            return _FRAGMENT(json.dumps(value).encode())
        return value
    if kind is int and not _INT64[0] <= value <= _INT64[1]:
        return _FRAGMENT(str(value).encode())
    return value


def pretty(doc: Any) -> bytes | None:
    """``doc`` as UTF-8 bytes, exactly ``json.dumps(doc, ensure_ascii=False, indent=2)``
    encoded — written by orjson, which is many times faster on a document of megabytes
    (``indent`` forces ``json`` into its pure-Python encoder). None when orjson is missing
    or cannot write ``doc`` the same way (a lone surrogate, a key that is no string):
    the caller then uses ``json``."""
    if _FRAGMENT is None:
        return None
    try:
        return _orjson.dumps(_as_json_writes(doc), option=_orjson.OPT_INDENT_2)
    except (TypeError, _orjson.JSONEncodeError):
        return None
