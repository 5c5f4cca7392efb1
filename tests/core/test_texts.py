"""flower.texts is split by reader (prompts / messages / vocab) but stays one namespace:
every ``texts.NAME`` that code uses must resolve, to the one object its module defines."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import pytest

import flower
from flower import texts
from flower.texts import messages, prompts, vocab

GROUPS = {"prompts": prompts, "messages": messages, "vocab": vocab}
FLOWER = Path(flower.__file__).parent


def _defined(module: ModuleType) -> set[str]:
    """Public names a text module binds itself (not imported modules)."""
    return {n for n, v in vars(module).items()
            if not n.startswith("_") and not isinstance(v, ModuleType)}


def test_every_string_a_module_defines_is_in_its_all() -> None:
    # a lower-case or otherwise skipped name would be missing from texts.NAME
    for name, module in GROUPS.items():
        assert _defined(module) == set(module.__all__), name


def test_the_three_modules_share_no_name() -> None:
    seen: dict[str, str] = {}
    for group, module in GROUPS.items():
        for name in module.__all__:
            assert name not in seen, f"{name} is in both {seen[name]} and {group}"
            seen[name] = group


def test_the_package_exports_exactly_the_union() -> None:
    union = set().union(*(set(m.__all__) for m in GROUPS.values()))
    assert _defined(texts) - set(GROUPS) == union
    assert sorted(texts.__all__) == sorted(union)
    for module in GROUPS.values():
        for name in module.__all__:
            assert getattr(texts, name) is getattr(module, name), name


def test_every_texts_name_flower_code_uses_resolves() -> None:
    # `texts.X` attribute use and `from flower.texts import X, Y` across the package
    used: set[str] = set()
    for path in FLOWER.rglob("*.py"):
        if path.parent.name == "texts":
            continue
        source = path.read_text(encoding="utf-8")
        used |= set(re.findall(r"\btexts\.([A-Z][A-Z0-9_]*)\b", source))
        for names in re.findall(r"from flower\.texts import ([^\n(]+)", source):
            used |= {n.strip() for n in names.split(",")}
    assert len(used) > 250  # the scan itself works
    assert sorted(n for n in used if not hasattr(texts, n)) == []


@pytest.mark.parametrize(("group", "names"), [
    ("prompts", ["COORDINATOR_RULES", "WORKER_RULES", "CLARIFIER_RULES", "JUDGE_RULES",
                 "ORACLE_RULES", "DENY_ROLE", "DENY_HINTS", "INTERRUPT_NOTE", "SPILL_NOTE",
                 "RESUME_PROMPT", "HANDOFF_PROMPT", "VERIFY_PROMPT", "TIMEOUT",
                 "HUMAN_WORDS_PENDING"]),
    ("messages", ["SETUP_TITLE", "CRED_MISSING", "LOG_RUN", "UI_DONE", "DEMO_START",
                  "STORE_BAD_URL", "DIST_STATES", "CLOSING", "ABORTED_AT", "TRIM_DONE",
                  "WAKE_BANNER", "RUN_FLAG_HELP", "HANDOFF_NEAR"]),
    ("vocab", ["BRIEF_ALIASES", "VERDICT_ALIASES", "HANDOFF_ALIASES", "GOAL_ALIASES",
               "BRIEF_SECTIONS", "GOAL_SECTIONS", "HANDOFF_SECTIONS", "VERDICT_WORDS",
               "VERDICT_NONE", "GOAL_UNVERIFIABLE_MARKS", "WB_INJECT_OPEN", "QA_LOG_NOTE"]),
])
def test_names_live_with_their_reader(group: str, names: list[str]) -> None:
    assert [n for n in names if n not in GROUPS[group].__all__] == []


def test_prompts_ask_for_headings_the_parsers_accept() -> None:
    # a model told to write a heading the parser does not know produces an "incomplete"
    # document every time
    def asks(prompt: str, heading: str) -> bool:
        return re.search(rf"^## {re.escape(heading)}$", prompt, re.MULTILINE) is not None

    for field, heading in zip(vocab.BRIEF_ALIASES, vocab.BRIEF_SECTIONS, strict=True):
        assert heading in vocab.BRIEF_ALIASES[field]
        assert asks(prompts.CLARIFIER_RULES, heading), heading
    for heading in vocab.GOAL_SECTIONS:
        assert any(heading in a for a in vocab.GOAL_ALIASES.values())
        assert asks(prompts.JUDGE_RULES, heading), heading
    for aliases in vocab.VERDICT_ALIASES.values():
        assert asks(prompts.JUDGE_RULES, aliases[0]), aliases[0]
    for field, heading in zip(vocab.HANDOFF_ALIASES, vocab.HANDOFF_SECTIONS, strict=True):
        assert heading in vocab.HANDOFF_ALIASES[field]
        assert asks(prompts.HANDOFF_PROMPT, heading), heading


def test_interrupt_note_says_failures_after_an_interrupt_are_its_side_effect() -> None:
    """After an interrupt the model sees half-run tools fail; left alone it debugs the
    "environment" and writes defensive rules. The note says: retry, do not investigate,
    add no defensive rules."""
    note = prompts.INTERRUPT_NOTE
    assert "插话造成的" in note and "副作用" in note
    assert "直接重试" in note
    assert "不要去排查" in note
    assert "不要因此加防御性的规则" in note
