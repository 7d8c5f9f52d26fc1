"""The verdict process's bookkeeping: claims read, variants built and ordered, cross-checks."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from bench.frameworks.behave.verdict import _Session, _Unstable, _wire, claim_verdict, ladder
from bench.model import Mutant, Outcome


def _mutant(i: int, replacement: str = "x - 1") -> Mutant:
    return Mutant(id=f"m{i}", file="src/pkg/core.py", line=10 + i, col=4, end_line=10 + i, end_col=9,
                  operator="arithmetic", original=EQUIVALENT, replacement=replacement, function="f",
                  function_line=9, lines=[10 + i], scope=(9, 20), function_end=20)


def _claim(passed: bool | None = True, steps_ran: int = 3, **extra: Any) -> dict[str, Any]:
    result: dict[str, Any] = {"passed": passed, "steps_ran": steps_ran, "first_failure": None}
    return {"exit": "ok", "findings": [], "garbled": 0, "results": 1, "result": result, **extra}


def test_claim_verdicts() -> None:
    assert claim_verdict(_claim(True)) == "survived"
    assert claim_verdict(_claim(False)) == "killed"
    assert claim_verdict(_claim(False, steps_ran=0)) == "infra_no_step"
    assert claim_verdict({"exit": "timeout"}) == "timeout"
    assert claim_verdict({"exit": "crashed", "error": "killed by signal 9"}) == "crashed"
    assert claim_verdict({"exit": "ok", "result": {"swap_error": "closure layout changes"}}) == "fallback"
    # a claim without a boolean pass is never a pass
    assert claim_verdict({"exit": "ok", "result": {"passed": "yes", "steps_ran": 3}}) == "killed"


def test_ladder_reads_the_traced_claim() -> None:
    assert ladder({"exit": "timeout", "elapsed": 3.0}, 1)[0] is Outcome.execution_failure
    assert ladder({"exit": "crashed", "error": "x"}, 1)[0] is Outcome.execution_failure
    load = {"exit": "ok", "result": {"load_error": "SyntaxError: bad"}}
    assert ladder(load, 1) == (Outcome.build_failure, "SyntaxError: bad")
    ambiguous = {"exit": "ok", "result": {"load_error": "AmbiguousStep: twice"}}
    assert ladder(ambiguous, 1)[0] is Outcome.binding_failure
    passed = {"exit": "ok", "result": {"exit": "ok", "scenarios": [{"line": 3, "status": "passed"}], "steps": []}}
    assert ladder(passed, 1) == (Outcome.passed, "")
    assert ladder(passed, 2)[0] is Outcome.execution_failure  # ran 1 of 2 selected


def test_wire_format_names_no_mutant() -> None:
    wire = _wire(_mutant(1))
    assert wire is not None and "id" not in wire and "operator" not in wire and "original" not in wire


class _FakeWarm:
    """Records the order the verdict process asks for; answers from a policy."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.requests: list[dict[str, Any]] = []
        self.init_reply: dict[str, Any] = {}

    def runs(self, feature: str, lines: list[int], limit: float, variants: list[dict[str, Any]],
             batched: bool = False) -> dict[str, Any]:
        self.requests.append({"op": "runs", "feature": feature, "lines": lines, "limit": limit, "variants": variants,
                              "batched": batched})
        policy = self.policy
        return {"runs": {v["token"]: (policy(v["mutant"], batched) if getattr(policy, "sees_batched", False)
                                      else policy(v["mutant"])) for v in variants}, "resets": {}}


EQUIVALENT = "1 + x"  # the replacement of the fake base's one equivalent variant


class _FakeBase:
    """A base whose production has one equivalent variant per file (no rewrite)."""

    def equivalents(self, rel: str) -> list[Mutant]:
        return [_mutant(99, replacement=EQUIVALENT).model_copy(update={"id": "eq-1", "file": rel})]

    def shifted(self, mutant: Mutant) -> Mutant:
        return mutant


def _session(warm: _FakeWarm, seed: int = 3) -> _Session:
    session = _Session.__new__(_Session)
    session.base = _FakeBase()  # type: ignore[assignment]
    session.covered = {}
    session.warm = warm  # type: ignore[assignment]
    session.rng = random.Random(seed)
    session.feature, session.lines = "features/a.feature", [3]
    session.confirmation = {}
    return session


def test_batches_hide_nulls_among_mutants_early_and_late() -> None:
    mutants = [_mutant(i) for i in range(40)]
    for seed in range(20):
        warm = _FakeWarm(lambda m: _claim(m is None or m["replacement"] == EQUIVALENT))
        session = _session(warm, seed)
        verdicts, fallbacks = session._batch(session._warm_runs, mutants, 2.0, "batch")
        variants = warm.requests[0]["variants"]
        nulls = [i for i, v in enumerate(variants) if v["mutant"]["replacement"] == EQUIVALENT]
        assert len(nulls) == 2 + 40 // 20
        assert min(nulls) < len(variants) / 2 and max(nulls) >= len(variants) / 2 - 1
        assert len({v["token"] for v in variants}) == len(variants)  # one-time tokens
        assert verdicts == {m.id: "killed" for m in mutants} and not fallbacks
        # a null is shaped exactly like a mutant: same keys, a real location
        assert {tuple(sorted(v["mutant"])) for v in variants} == {tuple(sorted(_wire(mutants[0])))}


def test_a_failing_clean_run_makes_the_claim_unstable() -> None:
    # detects "mutants" by counting runs: fails from the 5th run on, nulls included
    counter = {"n": 0}

    def policy(mutant: dict[str, Any] | None) -> dict[str, Any]:
        counter["n"] += 1
        return _claim(counter["n"] < 5)

    session = _session(_FakeWarm(policy))
    with pytest.raises(_Unstable, match="equivalent variant"):
        session._batch(session._warm_runs, [_mutant(i) for i in range(20)], 2.0, "batch 1")


def test_findings_in_any_run_are_tampering() -> None:
    from bench.frameworks.behave.verdict import _Tampering

    finding = {"kind": "introspection", "path": "features/steps/x.py", "line": 3, "evidence": "sys._getframe"}
    warm = _FakeWarm(lambda m: _claim(True, findings=[finding]))
    session = _session(warm)
    with pytest.raises(_Tampering, match="introspection"):
        session._batch(session._warm_runs, [_mutant(1)], 2.0, "batch 1")
    session = _session(_FakeWarm(lambda m: _claim(True, results=2)))
    with pytest.raises(_Tampering, match="2 results"):
        session._batch(session._warm_runs, [_mutant(1)], 2.0, "batch 1")


def test_sessions_clean_up(tmp_path: Path) -> None:
    session = _session(_FakeWarm(lambda m: _claim()))
    session.sandboxes = []
    session.dir = tmp_path / "inst"
    session.dir.mkdir()
    session.cleanup()
    assert not session.dir.exists()


def _batch_aware(fn: Any) -> Any:
    fn.sees_batched = True
    return fn


def test_reproductions_share_children_and_what_hides_there_runs_pristine() -> None:
    mutants = {m.id: m for m in (_mutant(i) for i in range(30))}
    hidden = {"x - 3", "x - 7"}  # replacements whose kills a shared child does not show

    @_batch_aware
    def policy(mutant: dict[str, Any] | None, batched: bool) -> dict[str, Any]:
        if mutant is None or mutant["replacement"] == EQUIVALENT:
            return _claim(True)
        return _claim(batched and mutant["replacement"] in hidden)

    warm = _FakeWarm(policy)
    session = _session(warm)
    session.manifest = mutants
    for i in (3, 7):
        mutants[f"m{i}"] = _mutant(i, replacement=f"x - {i}")
    first = {m: "killed" for m in mutants}
    session._reproduce(set(mutants), first, 2.0)
    assert [r["batched"] for r in warm.requests] == [True, False]
    retried = [v["mutant"]["replacement"] for v in warm.requests[1]["variants"]]
    assert sorted(r for r in retried if r != EQUIVALENT) == sorted(hidden)
    assert session.confirmation["reproduced_pristine"] == 2


def test_a_null_failing_in_a_shared_child_sends_every_reproduction_pristine() -> None:
    mutants = {m.id: m for m in (_mutant(i) for i in range(10))}

    @_batch_aware
    def policy(mutant: dict[str, Any] | None, batched: bool) -> dict[str, Any]:
        is_null = mutant is None or mutant["replacement"] == EQUIVALENT
        return _claim(is_null and not batched)  # in a shared child every run fails, nulls too

    warm = _FakeWarm(policy)
    session = _session(warm)
    session.manifest = mutants
    session._reproduce(set(mutants), {m: "killed" for m in mutants}, 2.0)
    assert [r["batched"] for r in warm.requests] == [True, False]
    assert session.confirmation["reproduced_pristine"] == 10


def test_a_kill_that_shows_in_no_second_run_is_unstable() -> None:
    mutants = {m.id: m for m in (_mutant(i) for i in range(5))}
    session = _session(_FakeWarm(lambda m: _claim(True)))  # every second look passes
    session.manifest = mutants
    with pytest.raises(_Unstable, match="did not reproduce"):
        session._reproduce({"m1"}, {"m1": "killed"}, 2.0)


def test_a_test_that_fails_equivalent_variants_again_while_production_passes_is_tampering() -> None:
    from bench.frameworks.behave.verdict import _Tampering

    # a change detector: fails whatever swaps code in, equivalent variants included
    session = _session(_FakeWarm(lambda m: _claim(m is None)))
    with pytest.raises(_Tampering, match="behaviour-preserving variant"):
        session._batch(session._warm_runs, [_mutant(i) for i in range(6)], 2.0, "batch 1")


def test_a_clean_run_failing_once_is_run_again_before_concluding() -> None:
    # a busy machine: the first equivalent-variant run times out, nothing else fails
    seen = {"equivalent": 0}

    def policy(mutant: dict[str, Any] | None) -> dict[str, Any]:
        if mutant is not None and mutant["replacement"] == EQUIVALENT:
            seen["equivalent"] += 1
            if seen["equivalent"] == 1:
                return {"exit": "timeout", "elapsed": 2.1, "findings": [], "garbled": 0, "results": 0}
        return _claim(mutant is None or mutant["replacement"] == EQUIVALENT)

    session = _session(_FakeWarm(policy))
    verdicts, _ = session._batch(session._warm_runs, [_mutant(i) for i in range(6)], 2.0, "batch 1")
    assert set(verdicts.values()) == {"killed"} and session.confirmation["clean_reruns"] == 1
    assert session.warm.requests[-1]["limit"] == 8.0  # the re-run's budget is four times as large


def test_a_test_whose_clean_runs_fail_too_is_unstable_not_tampering() -> None:
    # fails equivalent variants and unchanged production alike (a flaky or broken test)
    session = _session(_FakeWarm(lambda m: _claim(False)))
    with pytest.raises(_Unstable, match="equivalent variant"):
        session._batch(session._warm_runs, [_mutant(i) for i in range(6)], 2.0, "batch 1")
