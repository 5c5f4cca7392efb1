"""Every string flower prints, hands to a model or parses, in one place so it can be
translated. They are Chinese, as in the original flower; keep wording stable — tests and
users rely on it.

The strings are split by who reads them, because a change means something different for
each: :mod:`~flower.texts.prompts` (a model: changes agent behaviour),
:mod:`~flower.texts.messages` (a person: free to reword), :mod:`~flower.texts.vocab`
(flower's parsers: changes what parses). Every name is re-exported here, so
``texts.NAME`` works whichever module holds it. Names are UPPER_CASE and unique across
the three modules.
"""

from flower.texts import messages, prompts, vocab
from flower.texts.messages import *  # noqa: F403
from flower.texts.prompts import *  # noqa: F403
from flower.texts.vocab import *  # noqa: F403

__all__ = [*prompts.__all__, *messages.__all__, *vocab.__all__]
