"""The requests that are not an agent's turn, answered by the fake itself.

Besides the agent's turns, the real ``claude`` CLI asks the model for a few things of its
own — a title for the session, a one-token quota check — and flower asks once more to
check a credential (its start-up probe). A script written for the agent's turns would be
off by one for each of them: the first answer would go to the title, the last turn would
get ``(fake: script exhausted)``. So the fake recognises these requests by their shape and
answers them without popping or counting a step (``FakeServer(auxiliary=False)`` turns
this off, for a test that scripts the probe's answer itself).

Each is recognised only by a mark of its own: the CLI's title instructions, the CLI's
one-token ``quota`` check, flower's ``flower-probe`` user agent. Size alone marks nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flower.testing.script import Reply, reply

if TYPE_CHECKING:
    from flower.testing.request import Request

TITLE = "title"
PROBE = "probe"
QUOTA = "quota"

#: What the fake answers each kind with: a title is the JSON object the CLI asked for.
TITLE_REPLY = '{"title": "Fake session"}'
PROBE_REPLY = "ok"

# The CLI's title request: its user message wraps the session in <session> tags and ends
# with one of two sentences starting so (the other names the language to write in).
_TITLE_ASK = "Write the title in "
_TITLE_SYSTEM = "You are naming a coding session"
# flower's probe (flower/core/env.py) is known by its user agent alone: a user's own small
# request (``max_tokens: 8``, no tools) is a turn like any other and gets the script's answer.
_PROBE_AGENT = "flower-probe"


def kind(req: Request) -> str | None:
    """``"title"``, ``"probe"`` or ``"quota"`` for a request that is not an agent's turn;
    None for everything else (which then pops a step as usual)."""
    body = req.body if isinstance(req.body, dict) else {}
    if req.tool_names:
        return None
    first = req.first_user_text()
    if _TITLE_SYSTEM in req.system_text or (
            first.lstrip().startswith("<session>") and _TITLE_ASK in first):
        return TITLE
    if req.system_text:
        return None
    if req.headers.get("user-agent", "").startswith(_PROBE_AGENT):
        return PROBE
    if body.get("max_tokens") == 1 and first.strip() == "quota":
        return QUOTA
    return None


def answer(what: str) -> Reply:
    """The fake's own answer to an auxiliary request of kind ``what``."""
    return reply(TITLE_REPLY if what == TITLE else PROBE_REPLY)
