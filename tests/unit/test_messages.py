"""The evaluation worker's typed messages: what the verdict process accepts from a worker."""

from __future__ import annotations

import pytest

from bench.frameworks.behave.eval_sandbox import _CLAIM, _INIT_REPLY, _RUNS_REPLY, WorkerLost, _validated
from bench.frameworks.behave.verdict import claim_verdict


def _claim(**over: object) -> dict[str, object]:
    claim = {"elapsed": 0.01, "findings": [], "garbled": 0, "results": 1, "oversized": False, "exit": "ok",
             "result": {"passed": True, "steps_ran": 3, "first_failure": None}}
    claim.update(over)
    return claim


def test_well_formed_replies_validate_unchanged() -> None:
    reply = {"runs": {"a1": _claim(), "b2": _claim(exit="timeout")},
             "resets": {"killed": 0, "restored": 2, "removed": 1}}
    assert _validated(_RUNS_REPLY, reply, "runs") == reply
    assert _validated(_CLAIM, _claim(elapsed=1), "trace")["elapsed"] == 1.0  # a JSON integer is a number
    init = {"ok": True, "import_lines": {"src/p/m.py": [1, 2]}, "dependencies": ["lxml"], "import_errors": {},
            "load_error": None, "behave_version": "1.3.3", "python": "3.11.7"}
    assert _validated(_INIT_REPLY, init, "init") == init


@pytest.mark.parametrize("broken", [
    {"exit": "passed"},            # not one of ok / timeout / crashed
    {"exit": 1},
    {"elapsed": "0.1"},            # strict: no string-to-number coercion
    {"results": True},             # a bool is not a count
    {"findings": "none"},
])
def test_a_reply_that_does_not_fit_is_a_lost_worker_not_a_coerced_value(broken: dict[str, object]) -> None:
    reply = {"runs": {"a1": _claim(**broken)}, "resets": {"killed": 0, "restored": 0, "removed": 0}}
    with pytest.raises(WorkerLost, match="worker broke the protocol"):
        _validated(_RUNS_REPLY, reply, "runs")


def test_the_childs_own_claim_passes_through_as_written_and_is_read_defensively() -> None:
    """The run child is the untrusted part: its result is not coerced (``"yes"`` stays a
    string) and the verdict reader only takes ``passed is True`` as a pass."""
    claim = _validated(_CLAIM, _claim(result={"passed": "yes", "steps_ran": 2}), "runs")
    assert claim["result"]["passed"] == "yes"
    assert claim_verdict(claim) == "killed"
    assert claim_verdict(_validated(_CLAIM, _claim(), "runs")) == "survived"
