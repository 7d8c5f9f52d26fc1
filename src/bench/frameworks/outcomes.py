"""Turn one structured behave run result (from the warm worker) into a verdict.

Read only from behave's model statuses and the worker's exit record — never from
text the test printed — so a test cannot talk its way into a pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RunVerdict:
    passed: bool
    reason: str | None = None  # None when passed
    detail: str = ""


def classify_run(result: dict[str, Any], expected_units: int) -> RunVerdict:
    """``expected_units``: scenarios the run selected (outline rows count one each)."""
    exit_kind = result.get("exit")
    if exit_kind == "timeout":
        return RunVerdict(False, "timeout", f"killed after {result.get('elapsed', 0):.1f}s")
    if exit_kind != "ok":
        return RunVerdict(False, "crashed", str(result.get("error", exit_kind)))
    if result.get("load_error"):
        return RunVerdict(False, "init_failed", _first_line(result["load_error"]))
    if result.get("abort"):
        return RunVerdict(False, "aborted", str(result["abort"]))
    steps = result.get("steps", [])
    for status, reason in (("undefined", "step_undefined"), ("pending", "step_pending")):
        hit = next((s for s in steps if s.get("status") == status), None)
        if hit is not None:
            return RunVerdict(False, reason, f"{hit['file']}:{hit['line']} {hit['name']}")
    if result.get("hook_failures") or result.get("feature_hook_failed") or any(
            s.get("hook_failed") for s in result.get("scenarios", [])):
        return RunVerdict(False, "hook_error", "a before/after hook failed")
    scenarios = result.get("scenarios", [])
    statuses = [s.get("status") for s in scenarios]
    if len(scenarios) != expected_units:
        if statuses and all(s == "skipped" for s in statuses):
            return RunVerdict(False, "skipped_by_runner", "behave skipped the scenario (tag or filter)")
        return RunVerdict(False, "selection_mismatch",
                          f"ran {len(scenarios)} of {expected_units} selected scenarios")
    if all(s == "passed" for s in statuses):
        return RunVerdict(True)
    if any(s == "skipped" for s in statuses):
        return RunVerdict(False, "skipped_by_runner", "behave skipped the scenario (tag or filter)")
    failing = next((s for s in steps if s.get("status") in ("failed", "error", "hook_error")), None)
    if failing is None:
        return RunVerdict(False, "failed", "scenario did not pass")
    kind = "assertion_failed" if failing["status"] == "failed" else "error"
    return RunVerdict(False, kind, f"{failing['file']}:{failing['line']} "
                                   f"{failing.get('error_type', '')}: {_first_line(failing.get('error_message', ''))}")


def _first_line(text: str) -> str:
    return (text or "").strip().splitlines()[0][:300] if (text or "").strip() else ""
