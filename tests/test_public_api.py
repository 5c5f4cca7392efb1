"""The names scripts import keep resolving, from the module paths they import them from.

Scripts written for the original flower import from these exact paths (and
``flower.cli:main`` is the console-script entry point), so a refactor that moves a module
must leave each of these importing the same object. Each path is listed here on purpose:
this test is the list of promises, not a scan of whatever exists.
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import flower

# module path -> names defined there that scripts import
MODULE_MAP: dict[str, tuple[str, ...]] = {
    "flower.core.runtime": ("Runtime", "StepResult"),
    "flower.core.agent": ("AgentSpec", "build_options", "CompactPolicy", "HandoffPolicy",
                          "default_window", "PLUGIN_DIR", "remember_overflow",
                          "calibrated_window", "calib_path"),
    "flower.core.roles": ("coordinator", "worker", "clarify", "judge", "oracle",
                          "COORDINATOR_RULES", "WORKER_RULES", "CLARIFIER_RULES",
                          "JUDGE_RULES", "ORACLE_RULES"),
    "flower.core.brief": ("Brief",),
    "flower.core.handoff": ("Handoff", "is_overflow", "HANDOFF_PROMPT", "degraded"),
    "flower.core.goal": ("Goal", "Verdict"),
    "flower.core.guard": ("whitelist_guard", "delegate_guard", "spill_guard", "index_guard",
                          "isolate_guard", "isolated", "wants_isolation", "workbench_hooks",
                          "merge_hooks", "HANDS_ON", "WRITE_ONLY", "BULKY", "ISOLATE_ATTR"),
    "flower.core.workbench": ("Workbench",),
    "flower.core.resilience": ("Resilience", "classify", "endpoint", "reachable"),
    "flower.core.events": ("Event", "EventKind", "normalize"),
    "flower.core.human": ("Ask", "HumanChannel", "Mail", "OVER_BUDGET", "TIMEOUT", "DECLINED",
                          "NO_MAIL", "SERVER", "TOOL_NAME", "INBOX_NAME"),
    "flower.core.lineage": ("Lineage", "FILENAME"),
    "flower.core.env": ("load_dotenv", "check_credentials", "describe", "probe_credentials",
                        "user_env_path", "REQUIRED_ANY", "KNOWN", "PROBE_OK", "PROBE_AUTH",
                        "PROBE_NET", "PROBE_CONFIG", "PROBE_MAX_TOKENS"),
    "flower.stores.sqlite": ("SqliteSessionStore",),
    "flower.stores.trim": ("TrimmingSessionStore", "TrimPolicy", "EphemeralPolicy",
                           "is_ephemeral", "trim_report"),
    "flower.stores.prune": ("PruningSessionStore", "PrunePolicy", "is_denial", "is_api_error",
                            "heal_orphans"),
    "flower.stores.ephemeral": ("is_ephemeral",),
    "flower.workflow.base": ("Ctx", "Step", "Workflow", "StepAbort"),
    "flower.workflow.clarify": ("clarify_step", "BRIEF_KEY", "MISSING_KEY", "CLARIFY_RESUME"),
    "flower.workflow.goal": ("goal_step", "with_goal", "GOAL_KEY", "VERDICT_KEY", "ROUND_KEY",
                             "SET_PROMPT", "VERIFY_PROMPT"),
    "flower.workflow.starter": ("starter_flow", "wake_state"),
    "flower.cli": ("main",),
}

TOP_LEVEL = {
    "Runtime", "StepResult", "Step", "Workflow", "StepAbort", "clarify_step", "goal_step",
    "with_goal", "starter_flow", "wake_state", "BRIEF_KEY", "MISSING_KEY", "CLARIFY_RESUME",
    "GOAL_KEY", "VERDICT_KEY", "ROUND_KEY", "coordinator", "worker", "clarify", "judge",
    "oracle", "COORDINATOR_RULES", "WORKER_RULES", "CLARIFIER_RULES", "JUDGE_RULES",
    "ORACLE_RULES", "AgentSpec", "build_options", "CompactPolicy", "HandoffPolicy",
    "default_window", "Brief", "Handoff", "Goal", "Verdict", "whitelist_guard",
    "delegate_guard", "spill_guard", "index_guard", "isolate_guard", "isolated",
    "wants_isolation", "workbench_hooks", "merge_hooks", "Workbench", "SqliteSessionStore",
    "TrimmingSessionStore", "PruningSessionStore", "TrimPolicy", "EphemeralPolicy",
    "PrunePolicy", "is_ephemeral", "trim_report", "Resilience", "classify", "endpoint",
    "reachable", "Event", "normalize", "Ask", "HumanChannel", "Lineage",
}


@pytest.mark.parametrize("module", sorted(MODULE_MAP))
def test_module_path_offers_its_names(module: str) -> None:
    mod = importlib.import_module(module)
    missing = [name for name in MODULE_MAP[module] if not hasattr(mod, name)]
    assert not missing, f"{module} lacks {missing}"


def test_top_level_names_are_the_promised_set_and_resolve() -> None:
    assert set(flower.__all__) >= TOP_LEVEL
    for name in flower.__all__:
        assert getattr(flower, name) is not None, name


def test_top_level_and_module_paths_give_the_same_objects() -> None:
    for module, names in MODULE_MAP.items():
        mod = importlib.import_module(module)
        for name in names:
            if name in TOP_LEVEL:
                assert getattr(flower, name) is getattr(mod, name), f"{module}.{name}"


@pytest.mark.parametrize(("package", "promised"), [
    ("flower.stores", {"SqliteSessionStore", "TrimmingSessionStore", "TrimPolicy",
                       "trim_report"}),
    ("flower.workflow", {"Ctx", "Step", "Workflow", "clarify_step", "BRIEF_KEY",
                         "MISSING_KEY"}),
    ("flower.core", {"AgentSpec", "CompactPolicy", "build_options", "check_credentials",
                     "describe", "load_dotenv", "Event", "EventKind", "normalize", "Runtime",
                     "StepResult"}),
])
def test_package_all_resolves(package: str, promised: set[str]) -> None:
    mod = importlib.import_module(package)
    assert promised <= set(mod.__all__)
    for name in mod.__all__:
        assert getattr(mod, name) is not None, f"{package}.{name}"


def test_console_script_entry_point_is_flower_cli_main() -> None:
    from importlib.metadata import entry_points

    (ep,) = [e for e in entry_points(group="console_scripts") if e.name == "flower"]
    assert ep.value == "flower.cli:main"
    assert ep.load() is importlib.import_module("flower.cli.app").main


def test_public_modules_import_alone_in_a_fresh_interpreter() -> None:
    """Each public store path imports in a fresh interpreter on its own (no import order
    hides a cycle). The interpreters are independent, so they start together and are
    waited for afterwards."""
    modules = ("flower.stores.trim", "flower.stores.prune", "flower.stores.sqlite",
               "flower.stores.ephemeral", "flower.core.runtime", "flower.workflow.base")
    procs = {m: subprocess.Popen([sys.executable, "-c", f"import {m}"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for m in modules}
    failed = {}
    for module, proc in procs.items():
        out, _ = proc.communicate(timeout=120)
        if proc.returncode != 0:
            failed[module] = out
    assert not failed, failed
