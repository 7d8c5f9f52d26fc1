"""Why a behave prediction's traced run failed, read from that run's claim.

The traced run is the clean run that decides the stage ladder (``verdict.ladder``): the
prediction on unchanged production, no mutant in the process. Its claim's step records carry,
for the first failing top-level step, the traceback and what the scenario printed
(``worker._failure_record``); nothing of a verdict run (a mutant's or an equivalent
variant's) is ever read here. The claim is the sandbox's word: every value is checked for its
type and the text bounded again (``bench.failure``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from bench.failure import failure_detail, python_frames_from_test
from bench.model import FailingStep, FailureDetail

FAILED = ("failed", "error", "hook_error", "undefined", "pending")


def traced_run_failure(claim: Mapping[str, Any], feature: str, roots: Iterable[str]) -> FailureDetail | None:
    """The failing step, error, traceback and captured output of the traced run (None: it has
    no result to read, e.g. a timeout, whose detail says so already)."""
    roots = list(roots)
    result = claim.get("result")
    if not isinstance(result, dict):
        return None
    load_error = _text(result.get("load_error"))
    if load_error:  # the step modules or hooks did not load: the traceback is the load's
        first = load_error.strip().splitlines()[0] if load_error.strip() else ""
        traceback = python_frames_from_test(load_error.strip().partition("\n")[2], roots)
        return failure_detail(error=first, traceback=traceback, roots=roots)
    steps = [s for s in result.get("steps") or [] if isinstance(s, dict)]
    failing = next((s for s in steps if s.get("status") in FAILED), None)
    if failing is None:
        unbound = [u for u in result.get("unbound") or [] if isinstance(u, str)]
        if unbound:  # "LINE: text" of a step no definition matches
            line, _, text = unbound[0].partition(": ")
            return failure_detail(step=FailingStep(keyword="", text=text, location=f"{feature}:{line}"),
                                  error="undefined step: no step definition matches it", roots=roots)
        return None
    step = FailingStep(keyword=_text(failing.get("keyword")), text=_text(failing.get("name")),
                       location=f"{_text(failing.get('file')) or feature}:{_int(failing.get('line'))}")
    error_type, message = _text(failing.get("error_type")), _text(failing.get("error_message"))
    error = f"{error_type}: {message}" if error_type else (message or f"step {failing.get('status')}")
    raw_cut = failing.get("cut")
    cut = raw_cut if isinstance(raw_cut, dict) else {}
    return failure_detail(step=step, error=error, traceback=_text(failing.get("traceback")),
                          stdout=_text(failing.get("stdout")), stderr=_text(failing.get("stderr")), roots=roots,
                          output_note="what the scenario printed up to the failing step (behave's capture)",
                          cut_before={k: v for k, v in cut.items() if isinstance(k, str) and isinstance(v, int)})


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
