"""The verdict process: decides an instance's outcome from claims it cross-checks.

This code never runs prediction code. It holds what is worth stealing — the ground
truth's kills — and never sends it anywhere: a sandbox gets the instance's whole mutant
pool (kills and survivors alike, shuffled, under one-time tokens) plus *equivalent variants*
(``bench.mutation.equivalents``: real mutation sites rewritten without a change of behaviour,
swapped in by the same machinery), and production itself is a behaviour-preserving rewrite new
to each session (``bench.mutation.diversify``). So the process that runs the test cannot tell
which runs matter, or a mutant from an equivalent variant, without judging behaviour: a test
that compares code, text or hashes with the shipped source fails its own clean runs, and one
that reacts to any change of code fails the equivalent variants — ``tampering`` when that
failure shows again in a fresh child while unchanged production passes, never a kill. What
comes back is a *claim*; it counts only when

- every clean run agrees: the traced run, the equivalent variants spread through each batch
  (at least one early and one late), and a fresh-process equivalent replay all pass;
- every claimed ground-truth kill reproduces in a second, reshuffled batch. The first
  batch runs each variant in a pristine child (forked from a worker no prediction code
  ever ran in); the second re-observes those kills several per child, each swapped in and
  back out in turn, and whatever does not show again there (a test carrying state from run
  to run can hide a kill, or fail a clean run, only in a shared child) is run once more in
  pristine children;
- a KillComplete claim survives replay: a random sample of its kills (≥ 5 where there
  are that many) and one clean run, each in a fresh sandbox process with the mutant
  written to disk, all agree with the warm runs;
- no screen fired: the static scan of the files, the runtime audit hook and the
  runner-integrity check (outcome ``tampering``, evidence in the result).

Disagreement gives ``unstable`` (counted in N_exec, never a pass). Whatever the
prediction causes is the prediction's: a worker lost during its runs is an execution
failure unless a control session on the same instance shows the evaluator itself is
broken (then, and only then, ``infrastructure_failure``).
"""

from __future__ import annotations

import random
import secrets
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from bench import stopping
from bench.frameworks.behave.eval_sandbox import EvalSandbox, SandboxLimits, WorkerLost
from bench.frameworks.behave.evalspace import ProjectBase, instance_space, refresh_workspace, remove_space
from bench.frameworks.behave.failure import traced_run_failure
from bench.frameworks.behave.guard.static_scan import scan_prediction
from bench.frameworks.messages import RunClaim, WireMutant
from bench.frameworks.outcomes import classify_run
from bench.judging import (
    DETECTED,
    EQUIVALENT_PREFIX,
    RETRY_BUDGET,
    Judgement,
    RetryDecision,
    RunTrace,
    RunVerdict,
    decide_retries,
    equivalent_count,
    retry_plan,
    spread_among,
)
from bench.languages.python import PythonLanguage
from bench.model import GoldTest, Instance, Mutant, Outcome, Prediction
from bench.production_index import ProductionIndex

PYTHON = PythonLanguage()

@dataclass(frozen=True)
class VerdictOptions:
    timeout: float = 600.0  # the traced run (600 s: docs/evaluation.md#outcomes-the-first-failing-stage)
    mutants: bool = True
    replays: int = 5  # fresh-process replays of a KillComplete claim's kills
    isolation: str = "bwrap"
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    seed: int | None = None  # None: a fresh random order per evaluation
    untrusted_production: bool = False  # the reverse task: production is agent code, screened like a test


class _Tampering(Exception):
    def __init__(self, evidence: list[str]) -> None:
        super().__init__(evidence[0] if evidence else "tampering")
        self.evidence = evidence


class _Unstable(Exception):
    def __init__(self, evidence: list[str]) -> None:
        super().__init__(evidence[0])
        self.evidence = evidence


def judge(inst: Instance, prediction: Prediction, gold: GoldTest, manifest: dict[str, Mutant], base: ProjectBase,
          work_dir: Path, options: VerdictOptions, index: ProductionIndex) -> Judgement:
    """The verdict on one prediction; ``index`` names the production functions the traced run
    called (the trace's API keys)."""
    findings = scan_prediction(prediction.files)
    if findings:
        return Judgement(Outcome.tampering, _finding_text(findings[0].model_dump()),
                         evidence=[_finding_text(f.model_dump()) for f in findings][:20])
    rng = random.Random(options.seed) if options.seed is not None else random.SystemRandom()
    # the pool's mutants placed on this base's (rewritten) production
    placed = {m: base.shifted(manifest[m]) for m in gold.pool if m in manifest}
    session = _Session(inst, prediction, gold, placed, base, work_dir, options, rng, index)
    try:
        return session.run()
    except _Tampering as exc:
        return Judgement(Outcome.tampering, exc.evidence[0], trace=session.run_trace(), evidence=exc.evidence,
                         confirmation=session.confirmation)
    except _Unstable as exc:
        return Judgement(Outcome.unstable, exc.evidence[0], trace=session.run_trace(), evidence=exc.evidence,
                         confirmation=session.confirmation)
    except WorkerLost as exc:
        return _attribute(inst, prediction, base, work_dir, options, str(exc), session)
    finally:
        session.cleanup()


def _attribute(inst: Instance, prediction: Prediction, base: ProjectBase, work_dir: Path, options: VerdictOptions,
               reason: str, session: _Session) -> Judgement:
    """A lost worker is the prediction's doing unless the evaluator fails without it too."""
    # model_construct: the control session reads only the pool and the kills, so no other field is made
    control = _Session(inst, Prediction(instance_id=inst.id, files={}),
                       GoldTest.model_construct(pool=[], kills=[]),  # type: ignore[call-arg]
                       {}, base, work_dir, options, random.Random(0), session.index)
    try:
        control.start_warm()
        control.traced()
        healthy = True
    except (WorkerLost, _Tampering, _Unstable, OSError) as exc:
        healthy = False
        reason = f"{reason}; control session failed too: {exc}"
    finally:
        control.cleanup()
    if not healthy:
        return Judgement(Outcome.infrastructure_failure, f"evaluator failure: {reason}"[:300],
                         confirmation=session.confirmation)
    return Judgement(Outcome.execution_failure, f"the test took the evaluation worker down: {reason}"[:300],
                     trace=session.run_trace(), confirmation=session.confirmation,
                     evidence=[f"control session on the same instance ran normally; lost: {reason}"[:300]])


class _Session:
    _clock: float  # set by run() before any _lap

    def __init__(self, inst: Instance, prediction: Prediction, gold: GoldTest, manifest: dict[str, Mutant],
                 base: ProjectBase, work_dir: Path, options: VerdictOptions, rng: random.Random,
                 index: ProductionIndex) -> None:
        self.inst, self.prediction, self.gold, self.manifest = inst, prediction, gold, manifest
        self.index = index
        self.base, self.options, self.rng = base, options, rng
        self.dir = Path(tempfile.mkdtemp(prefix="inst-", dir=work_dir))
        self.feature = inst.requirement.feature_file
        self.lines = list(inst.requirement.run_lines)
        self.sandboxes: list[EvalSandbox] = []
        self.warm: EvalSandbox | None = None
        self.cold: EvalSandbox | None = None
        self.trace_result: dict[str, Any] = {}
        self.confirmation: dict[str, Any] = {}
        self.fresh_runs = 0
        self.covered: dict[str, set[int]] = {}

    def run_trace(self) -> RunTrace | None:
        """The traced run's measurement in the dataset's terms (None: no trace came back)."""
        if not self.trace_result:
            return None
        return RunTrace(api=sorted(generated_api(self.trace_result, self.index)),
                        coverage=self.trace_result.get("coverage", {}))

    # --------------------------------------------------------------- sandboxes
    def _sandbox(self, name: str, warm: bool) -> EvalSandbox:
        stopping.check()  # an interrupted run copies no workspace (a lost worker's control, a replay)
        space = instance_space(self.base, self.prediction.files, self.dir / name,
                               link_production=self.options.isolation == "bwrap")
        box = EvalSandbox(space, self.options.isolation, warm=warm, limits=self.options.limits, python=self.base.python,
                          untrusted_production=self.options.untrusted_production)
        self.sandboxes.append(box)
        box.start(space.prediction_files)
        return box

    def start_warm(self) -> None:
        self.warm = self._sandbox("warm", warm=True)

    def cleanup(self) -> None:
        for box in self.sandboxes:
            box.close()
            if box.space.workspace.parent.exists():
                remove_space(box.space)
        shutil.rmtree(self.dir, ignore_errors=True)

    # -------------------------------------------------------------------- runs
    def traced(self) -> RunClaim:
        assert self.warm is not None
        claim = self.warm.trace(self.feature, self.lines, self.options.timeout)
        self._screen(claim, "traced run")
        return claim

    def _screen(self, claim: Mapping[str, Any], where: str) -> None:
        findings = claim.get("findings") or []
        if findings:
            raise _Tampering([f"{where}: {_finding_text(f)}" for f in findings][:20])
        if claim.get("results", 0) > 1 or claim.get("garbled"):
            raise _Tampering([(f"{where}: the run wrote {claim.get('results')} results and "
                               f"{claim.get('garbled')} unreadable lines to its channel (one result expected)")])

    def _claim(self, runs: dict[str, Any], token: str, where: str) -> tuple[dict[str, Any], RunVerdict]:
        """A run's claim, screened, and its verdict; a run without a claim is a lost worker."""
        claim = runs.get(token)
        if not isinstance(claim, dict):
            raise WorkerLost(f"no claim for a run of {where}")
        self._screen(claim, where)
        return claim, claim_verdict(claim)

    def _lap(self, name: str) -> None:
        """Seconds per phase, for the result's confirmation record (evaluation cost)."""
        now = time.monotonic()
        seconds = self.confirmation.setdefault("seconds", {})
        seconds[name] = round(seconds.get(name, 0.0) + now - self._clock, 3)
        self._clock = now

    def run(self) -> Judgement:
        self._clock = time.monotonic()
        self.start_warm()
        self._lap("warm_start")
        claim = self.traced()
        self._lap("traced")
        self.trace_result = dict((claim.get("result") or {}).get("trace") or {})
        if "coverage" in self.trace_result:
            self.trace_result["coverage"] = self.base.shipped_coverage(self.trace_result["coverage"])
        outcome, detail = ladder(claim, len(self.lines))
        if outcome is not Outcome.passed:
            # the traced run is the clean run (no mutant in it): its failure is the prediction's own
            assert self.warm is not None
            roots = [str(self.warm.space.workspace), str(self.base.root)]
            return Judgement(outcome, detail, trace=self.run_trace(),
                             failure=traced_run_failure(claim, self.feature, roots))
        limit = max(2.0, 10.0 * float(claim.get("elapsed", 0.1)))
        pool = [self.manifest[m] for m in self.gold.pool if m in self.manifest] if self.options.mutants else []
        covered = {f: set(v) for f, v in self.trace_result.get("coverage", {}).items()}
        self.covered = covered
        reached = [m for m in pool if covered.get(m.file, set()).intersection(m.lines)]
        assert self.warm is not None
        import_lines = {f: set(v) for f, v in (self.warm.init_reply.get("import_lines") or {}).items()}
        cold_mutants = [m for m in reached if set(range(m.line, m.end_line + 1)) & import_lines.get(m.file, set())]
        truth = set(self.gold.kills)

        # warm phase: code swapped into the forked run, a batch and its reproduction
        verdicts, fallbacks = self._batch(self._warm_runs, [m for m in reached if m not in cold_mutants],
                                          limit, "warm batch 1")
        cold_mutants += fallbacks
        claimed = {m for m, v in verdicts.items() if v in DETECTED and m in truth}
        self._lap("warm_batch_1")
        self._reproduce(claimed, verdicts, limit)
        self._lap("warm_batch_2")
        self.warm.close()
        # cold phase: the mutant written to disk, production imported by the run itself
        # (mutated code that runs at import time; replays of a KillComplete claim)
        cold_limit = max(limit, 30.0)
        if cold_mutants:
            self.start_cold()
            self._lap("cold_start")
            cold, _ = self._batch(self._cold_runs, cold_mutants, cold_limit, "cold batch 1")
            verdicts.update(cold)
            cold_claimed = {m for m, v in cold.items() if v in DETECTED and m in truth}
            again, _ = self._batch(self._cold_runs, [self.manifest[m] for m in sorted(cold_claimed)], cold_limit,
                                   "cold batch 2")
            self._reproduced(cold_claimed, cold, again)
            claimed |= cold_claimed
            self._lap("cold_batches")
        self.confirmation.update(pool=len(pool), reached=len(reached), import_time=len(cold_mutants),
                                 claimed_kills=len(claimed), reproduced=len(claimed))
        if truth and truth <= claimed and self.options.replays > 0:
            if self.cold is None:
                self.start_cold()
            self._replay(sorted(claimed), cold_limit)
            self._lap("replays")
        timeouts = sum(1 for v in verdicts.values() if v == "timeout")
        verdicts.update({m.id: RunVerdict.survived for m in pool if m not in reached})  # never executed
        return Judgement(Outcome.passed, "", trace=self.run_trace(), kills=claimed, timeouts=timeouts,
                         confirmation=self.confirmation, fresh_runs=self.fresh_runs, verdicts=verdicts)

    def _reproduce(self, claimed: set[str], first: Mapping[str, str], limit: float) -> None:
        """Every claimed kill once more. Each was first seen in a pristine child, so the second
        look runs several kills per child (swapped in and back out in turn), which costs a
        fraction of a fork each. A kill that does not show again there, or a batch whose null
        variant failed, is run once more in pristine children: a test carrying state from
        one run to the next may hide a kill (or fail a clean run) only in a shared child."""
        mutants = [self.manifest[m] for m in sorted(claimed)]
        try:
            again, _ = self._batch(self._batched_warm_runs, mutants, limit, "warm batch 2")
        except _Unstable:  # a null variant failed in a shared child: decide in pristine ones
            again = {}
        missing = sorted(m for m in claimed if again.get(m) not in DETECTED)
        if missing:
            self.confirmation["reproduced_pristine"] = self.confirmation.get("reproduced_pristine", 0) + len(missing)
            retried, _ = self._batch(self._warm_runs, [self.manifest[m] for m in missing], limit,
                                     "warm batch 2 (pristine)")
            again.update(retried)
        self._reproduced(claimed, first, again)

    @staticmethod
    def _reproduced(claimed: set[str], first: Mapping[str, str], again: Mapping[str, str]) -> None:
        """A kill counts only if it reproduces."""
        lost = [f"kill of mutant {m} did not reproduce ({first[m]} then {again.get(m, 'not run')})"
                for m in sorted(claimed) if again.get(m) not in DETECTED]
        if lost:
            raise _Unstable(lost)

    def _batch(self, execute: Any, mutants: list[Mutant], limit: float,
               name: str) -> tuple[dict[str, RunVerdict], list[Mutant]]:
        """One batch: mutants and null variants shuffled, nulls early and late."""
        nulls = equivalent_count(len(mutants))
        variants: list[tuple[str, Mutant | None]] = [(secrets.token_hex(8), m) for m in mutants]
        self.rng.shuffle(variants)
        null_variants = [(secrets.token_hex(8), self._null(mutants)) for _ in range(nulls)]
        spread_among(variants, null_variants, self.rng)
        null_tokens = {token for token, _ in null_variants}
        runs, resets = execute(variants, limit)
        out: dict[str, RunVerdict] = {}
        fallbacks: list[Mutant] = []
        clean_failures = []
        failed_nulls: list[tuple[Mutant | None, str]] = []
        for token, mutant in variants:
            claim, verdict = self._claim(runs, token, name)
            if token in null_tokens:
                if verdict == "fallback":  # the variant could not be swapped in: no run, no evidence
                    self.confirmation["equivalent_fallbacks"] = self.confirmation.get("equivalent_fallbacks", 0) + 1
                elif verdict != "survived":
                    clean_failures.append(f"{name}: an equivalent variant (behaviour unchanged) failed "
                                          f"({verdict}: {_claim_detail(claim, limit)})")
                    failed_nulls.append((mutant, verdict))
            elif verdict == "fallback":
                assert mutant is not None
                fallbacks.append(mutant)
            else:
                assert mutant is not None
                out[mutant.id] = verdict
        self.confirmation["clean_runs"] = self.confirmation.get("clean_runs", 0) + nulls
        totals = self.confirmation.setdefault("resets", {})
        for key, value in resets.items():
            totals[key] = totals.get(key, 0) + int(value)
        if clean_failures:
            if execute != self._warm_runs or not self._clean_failures_transient(failed_nulls, limit, name):
                raise _Unstable(clean_failures)
            self.confirmation["clean_reruns"] = self.confirmation.get("clean_reruns", 0) + len(failed_nulls)
        return out, fallbacks

    def _clean_failures_transient(self, failed: list[tuple[Mutant | None, str]], limit: float, name: str) -> bool:
        """Decide the failures of clean runs (equivalent variants) of a pristine batch before
        concluding anything, as every judge does (``bench.judging.retry_plan``): each failed
        variant (at most 3) runs twice more, each time in a fresh pristine child, with a budget
        four times as large (a busy machine slows every run alike), beside four runs of unchanged
        production, shuffled.

        - everything passes now: the failure was the machine's (a timeout under load), not the
          test's; the batch stands;
        - a failed variant fails every retry while unchanged production passes: the test tells
          code apart, not behaviour → tampering;
        - anything else: a flaky test → unstable (the caller raises)."""
        plan = retry_plan(len(failed), self.rng)
        tokens = [secrets.token_hex(8) for _ in plan]
        runs, _ = self._warm_runs([(token, failed[index][0] if index is not None else None)
                                   for token, index in zip(tokens, plan, strict=True)], limit * RETRY_BUDGET)
        verdicts = [self._claim(runs, token, name)[1] for token in tokens]
        decision, again = decide_retries(plan, verdicts, len(failed), any(v == "killed" for _, v in failed))
        if decision is RetryDecision.tampering:
            shown = [m for m in (failed[i][0] for i in again) if m is not None]
            evidence = [f"{name}: the test failed a behaviour-preserving variant of production "
                        f"({m.file}:{m.line}, {m.operator}) on every retry in a fresh run while unchanged "
                        f"production passed: it tells code apart, not behaviour" for m in shown]
            fallback = f"{name}: the test failed a clean run on every retry while unchanged production passed"
            raise _Tampering(evidence or [fallback])
        return decision is RetryDecision.transient

    def _warm_runs(self, variants: list[tuple[str, Mutant | None]], limit: float) -> tuple[dict[str, Any], dict]:
        assert self.warm is not None
        reply = self.warm.runs(self.feature, self.lines, limit,
                               [{"token": t, "mutant": _wire(m)} for t, m in variants])
        return reply["runs"], dict(reply["resets"])

    def _batched_warm_runs(self, variants: list[tuple[str, Mutant | None]],
                           limit: float) -> tuple[dict[str, Any], dict]:
        assert self.warm is not None
        reply = self.warm.runs(self.feature, self.lines, limit,
                               [{"token": t, "mutant": _wire(m)} for t, m in variants], batched=True)
        return reply["runs"], dict(reply["resets"])

    def start_cold(self) -> None:
        """The cold sandbox reuses the instance's workspace, first restored from pristine."""
        assert self.warm is not None
        space = self.warm.space
        refresh_workspace(space)
        box = EvalSandbox(space, self.options.isolation, warm=False, limits=self.options.limits, python=self.base.python,
                          untrusted_production=self.options.untrusted_production,
                          preimport=list(self.warm.init_reply.get("dependencies") or []))
        self.sandboxes.append(box)
        box.start(space.prediction_files)
        self.cold = box

    def _cold_runs(self, variants: list[tuple[str, Mutant | None]], limit: float) -> tuple[dict[str, Any], dict]:
        """One run per variant; before each, this process writes the variant's file into
        the workspace's production (read-only inside the sandbox) — an equivalent variant
        exactly like a mutant — and restores it after."""
        assert self.cold is not None
        runs: dict[str, Any] = {}
        resets: dict[str, int] = {}
        production = self.cold.space.workspace
        for token, mutant in variants:
            target = production / mutant.file if mutant is not None else None
            original = target.read_text(encoding="utf-8") if target is not None else ""
            if target is not None and mutant is not None:
                _write_atomic(target, PYTHON.apply_mutant(original, mutant))
            try:
                self.fresh_runs += 1
                reply = self.cold.runs(self.feature, self.lines, limit, [{"token": token, "mutant": None}])
            finally:
                if target is not None:
                    _write_atomic(target, original)
            runs.update(reply["runs"])
            # Resets: every value an int (EvalSandbox validates the reply strictly)
            for key, value in cast(Mapping[str, int], reply["resets"]).items():
                resets[key] = resets.get(key, 0) + int(value)
        return runs, resets

    def _null(self, mutants: list[Mutant]) -> Mutant | None:
        """An equivalent variant (same behaviour, changed code, swapped in by the same steps),
        preferably in a function the batch's mutants are in and on a line the test covered;
        None (no swap: unchanged production) where no file of the batch has one."""
        if not mutants:
            return None
        files = sorted({m.file for m in mutants})
        functions = {(m.file, m.function) for m in mutants}
        candidates = [e for f in files for e in self.base.equivalents(f)]
        if not candidates:
            return None
        covered = [e for e in candidates if self.covered.get(e.file, set()).intersection(e.lines)]
        near = [e for e in covered if (e.file, e.function) in functions]
        chosen = self.rng.choice(near or covered or candidates)
        return self.base.shifted(chosen)

    def _replay(self, kills: list[str], limit: float) -> None:
        """Confirm a KillComplete claim: a random sample of its kills and one clean run,
        each a cold run with the mutant on disk, in random order, all must agree."""
        sample = self.rng.sample(kills, min(len(kills), max(self.options.replays, 0)))
        mutants = [self.manifest[m] for m in sample]
        plan: list[tuple[str, Mutant | None]] = [(secrets.token_hex(8), m) for m in mutants]
        plan.append((secrets.token_hex(8), self._null(mutants)))
        self.rng.shuffle(plan)
        runs, _ = self._cold_runs(plan, limit)
        disagreements = []
        for token, mutant in plan:
            claim, verdict = self._claim(runs, token, "replay")
            if mutant is None or mutant.id.startswith(EQUIVALENT_PREFIX):
                if verdict != "survived":
                    disagreements.append(f"replay of an equivalent variant failed ({verdict}: {_claim_detail(claim)}) "
                                         f"while the warm runs passed")
            elif verdict not in DETECTED:
                disagreements.append(f"replay of mutant {mutant.id} with the mutant on disk: {verdict}, "
                                     f"but the batches claimed a kill")
        self.confirmation["replayed_kills"] = len(sample)
        self.confirmation["replayed_clean"] = 1
        if disagreements:
            raise _Unstable(disagreements)


# ----------------------------------------------------------------------------- reading claims
def ladder(claim: Mapping[str, Any], expected_units: int) -> tuple[Outcome, str]:
    """The first failing stage (docs/evaluation.md#outcomes-the-first-failing-stage), from the traced run's claim."""
    if claim.get("exit") == "timeout":
        return Outcome.execution_failure, f"timeout: killed after {claim.get('elapsed', 0):.1f}s"
    if claim.get("exit") != "ok":
        return Outcome.execution_failure, f"crashed: {str(claim.get('error', ''))[:300]}"
    result = claim.get("result") or {}
    if result.get("load_error"):
        text = str(result["load_error"])
        kind = Outcome.binding_failure if "AmbiguousStep" in text else Outcome.build_failure
        return kind, text.strip().splitlines()[0][:300] if text.strip() else "load error"
    if result.get("unbound"):
        return Outcome.binding_failure, f"undefined step: {result['unbound'][0]}"
    verdict = classify_run(result, expected_units)
    if verdict.passed:
        return Outcome.passed, ""
    if verdict.reason in ("step_undefined", "step_pending"):
        return Outcome.binding_failure, f"{verdict.reason}: {verdict.detail}"
    if verdict.reason == "assertion_failed":
        return Outcome.assertion_failure, verdict.detail
    return Outcome.execution_failure, f"{verdict.reason}: {verdict.detail}"


def claim_verdict(claim: dict[str, Any]) -> RunVerdict:
    """A verdict run's claim → survived | killed | timeout | infra_no_step | crashed | fallback."""
    if claim.get("exit") == "timeout":
        return RunVerdict.timeout
    if claim.get("exit") != "ok":
        return RunVerdict.crashed
    result = claim.get("result") or {}
    if result.get("swap_error"):
        return RunVerdict.fallback
    if result.get("load_error"):
        return RunVerdict.infra_no_step
    if result.get("passed") is True:
        return RunVerdict.survived
    if not result.get("steps_ran"):
        return RunVerdict.infra_no_step
    return RunVerdict.killed


def _claim_detail(claim: dict[str, Any], limit: float | None = None) -> str:
    """What failed in a run, never empty: a timeout says its budget, a crash its cause."""
    result = claim.get("result") or {}
    if claim.get("exit") == "timeout":
        budget = f" of a {limit:.1f} s budget" if limit is not None else ""
        return f"timed out after {float(claim.get('elapsed', 0.0)):.1f} s{budget}"
    text = str(result.get("first_failure") or result.get("load_error") or result.get("swap_error")
               or claim.get("error") or "")[:200]
    return text or f"exit {claim.get('exit')!s}, passed={result.get('passed')!s}, steps run {result.get('steps_ran')!s}"


def _finding_text(finding: dict[str, Any]) -> str:
    where = f"{finding.get('path', '')}:{finding.get('line', 0)}" if finding.get("path") else "runtime"
    return f"{finding.get('kind', 'tampering')} at {where}: {str(finding.get('evidence', ''))[:200]}"


def _write_atomic(path: Path, text: str) -> None:
    """Replace a production file in one step (a running import never sees half a file)."""
    tmp = path.with_name(f".{path.name}.req2test-{secrets.token_hex(4)}")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _wire(mutant: Mutant | None) -> WireMutant | None:
    """What a run needs to swap the code in, and nothing else (no id, no operator)."""
    if mutant is None:
        return None
    return WireMutant(file=mutant.file, line=mutant.line, col=mutant.col, end_line=mutant.end_line,
                      end_col=mutant.end_col, replacement=mutant.replacement, function=mutant.function,
                      function_line=mutant.function_line, function_end=mutant.function_end,
                      scope=list(mutant.scope))



def generated_api(trace: dict[str, Any], index: ProductionIndex) -> set[str]:
    """The public production API the traced run's step code called directly (API keys)."""
    keys = set()
    for calls in trace.get("direct", {}).values():
        for file, line, qualname in calls:
            info = index.lookup(file, line, qualname)
            if info is not None and info.is_public:
                keys.add(info.key)
            elif info is None and qualname.endswith(".__init__"):
                keys.add(f"{file}:{qualname}")  # generated (dataclass) constructor
    return keys
