"""Build stage IV: mutants, instance pools, ground-truth kills, assertion-dependent subset.

A mutant the shared infrastructure detects by itself is not a kill of the test: when hooks
call production (an ``after_scenario`` that checks or tears down through the application),
a mutant there fails every scenario, even the *empty test* — the scenario's test
implementation with every step-definition body emptied (``bench.calibrate``'s "empty" arm),
beside the same hooks. Such mutants are recorded as the instance's ``infrastructure_kills``
and left out of its ground-truth ``kills`` (so out of every recall and of the
assertion-dependent and hidden subsets); a prediction can neither gain nor lose them.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.builder.closure import TestSide
from bench.builder.stats import mutation_statistics
from bench.builder.workspaces import WorkspaceLayout, WorkspacePool
from bench.frameworks.messages import RunWorkspace
from bench.frameworks.outcomes import classify_run
from bench.frameworks.registry import get_framework
from bench.frameworks.worker_pool import WorkerPool, WorkerSpec
from bench.model import GoldTest, Instance, Mutant
from bench.mutation.executor import (
    SessionOutcome,
    collect_session,
    fallback_jobs,
    pool_for,
    resolve_fallbacks,
    session_request,
)
from bench.mutation.generate import GENERATOR_VERSION, OPERATOR_FAMILIES
from bench.progress import Laps, Progress
from bench.testimpl import strip_step_bodies, then_step_targets


def run_mutation_stage(spec: WorkerSpec, roots: list[Path], production: list[str], python_path: list[str],
                       instances: list[Instance], gold: dict[str, GoldTest], infrastructure_py: set[str],
                       timeout: float, progress: Progress,
                       infer_stripped: bool = True, layout: WorkspaceLayout | None = None,
                       ) -> tuple[list[Mutant], dict[str, GoldTest], dict[str, Any]]:
    """``infer_stripped``: a ground-truth kill whose failing run executed no Then step
    definition is killed by the then-stripped test too, without running it (the stripped
    test runs the same code up to the same failure); False runs every kill again.
    ``layout``: how the workspaces of the empty and the stripped test are made (default:
    the features tree's test side, scanned from the first root)."""
    timed = Laps()
    started, seconds = timed.started, timed.seconds
    work = roots[0]
    if layout is None:
        layout = WorkspaceLayout.of(TestSide.scan(work, spec.features_dir, python_path=python_path,
                                                  production=production))

    def workspace_pool(preload: bool, **changes: Any) -> WorkerPool:
        return WorkspacePool(replace(spec, preload=preload, **changes), roots, layout)  # type: ignore[arg-type]
    mutants = get_framework(spec.framework).language.generate_mutants(work, production)
    by_id = {m.id: m for m in mutants}
    generated = time.perf_counter() - started
    timed("generation")
    pools = {inst.id: pool_for(mutants, gold[inst.id].covered_lines) for inst in instances}

    # 1. the ground-truth test against its pool, in the original tree (the full suite's steps)
    requests = [session_request(i.requirement.feature_file, i.requirement.run_lines, pools[i.id], timeout=timeout)
                for i in instances]
    progress.stage("ground-truth kills", len(requests))
    with WorkerPool(replace(spec, preload=True), roots) as pool:
        replies = _map_longest_first(pool, requests, [len(pools[i.id]) for i in instances], progress)
    outcomes: dict[str, SessionOutcome] = {}
    jobs = []
    for inst, reply in zip(instances, replies):
        outcomes[inst.id] = collect_session(reply)
        jobs += fallback_jobs(inst.id, outcomes[inst.id], by_id, inst.requirement.feature_file,
                              inst.requirement.run_lines)
    timed("ground_truth_sessions")
    packages = list(spec.import_packages)
    if jobs:
        with workspace_pool(False, import_packages=[]) as pool:
            resolve_fallbacks(pool, jobs, packages, progress)
    timed("ground_truth_import_time")

    # 2. the empty test (every step body emptied, the hooks as they are) against the kills:
    # what it detects, the shared infrastructure detects without the test
    infrastructure, empty_not_passing = _infrastructure_kills(
        instances, gold, outcomes, by_id, work, infrastructure_py, timeout, progress, workspace_pool, packages)
    timed("empty_test_sessions")
    kills_of: dict[str, set[str]] = {}
    for inst in instances:
        kills = outcomes[inst.id].killed
        if not classify_run(outcomes[inst.id].clean, len(inst.requirement.run_lines)).passed:
            # the clean run must pass for kills to mean anything; record it, score nothing
            kills = set()
        kills_of[inst.id] = kills - infrastructure.get(inst.id, set())

    # 3. the same test with its Then bodies emptied, against the ground-truth kills only
    stripped_requests, stripped_for, targets_for = [], [], {}
    inferred: dict[str, set[str]] = {}
    for inst in instances:
        record = gold[inst.id]
        kills = kills_of[inst.id]
        targets = then_step_targets(record)
        targets_for[inst.id] = targets
        if not kills or not targets:
            continue
        inferred[inst.id] = _killed_before_then(outcomes[inst.id], kills, targets) if infer_stripped else set()
        step_files = sorted({f.path for f in record.closure if f.role != "data"})
        files = strip_step_bodies(work, step_files, targets)
        workspace: RunWorkspace = {"key": "then-stripped-" + _digest(files), "keep_py": sorted(infrastructure_py),
                                   "files": files}
        # the clean stripped run always happens (a stripped test that no longer passes
        # makes every kill assertion-dependent), even when every kill was inferred
        stripped_requests.append(session_request(inst.requirement.feature_file, inst.requirement.run_lines,
                                                 [by_id[k] for k in sorted(kills - inferred[inst.id])],
                                                 workspace=workspace, timeout=timeout))
        stripped_for.append(inst)
    progress.stage("assertion-dependent subset", len(stripped_requests))
    stripped_kills: dict[str, set[str]] = {}
    stripped_broken = 0
    if stripped_requests:
        with workspace_pool(False) as pool:
            replies = _map_longest_first(pool, stripped_requests, [len(r["mutants"]) for r in stripped_requests],
                                         progress)
        stripped_outcomes: dict[str, SessionOutcome] = {}
        jobs = []
        for inst, request, reply in zip(stripped_for, stripped_requests, replies):
            clean = reply.get("clean", {})
            if not classify_run(clean, len(inst.requirement.run_lines)).passed:
                # without its checks the test no longer even passes: every kill depends on the checks
                stripped_broken += 1
                stripped_kills[inst.id] = set()
                continue
            stripped_outcomes[inst.id] = collect_session(reply)
            jobs += fallback_jobs(inst.id, stripped_outcomes[inst.id], by_id, inst.requirement.feature_file,
                                  inst.requirement.run_lines, request["workspace"])
        timed("stripped_sessions")
        if jobs:
            with workspace_pool(False, import_packages=[]) as pool:
                resolve_fallbacks(pool, jobs, packages, progress)
        for inst_id, outcome in stripped_outcomes.items():
            stripped_kills[inst_id] = outcome.killed | inferred.get(inst_id, set())
        timed("stripped_import_time")

    updated: dict[str, GoldTest] = {}
    for inst in instances:
        outcome = outcomes[inst.id]
        kills = kills_of[inst.id]
        hidden = [(h.file, h.def_line, h.body_end) for h in inst.view.target_hidden]
        hidden_kills = sorted(k for k in kills if any(by_id[k].file == f and a <= by_id[k].line <= b
                                                      for f, a, b in hidden))
        dependent = sorted(kills - stripped_kills.get(inst.id, kills)) if inst.id in stripped_kills else []
        gold_targets = [b.binding for b in gold[inst.id].bindings
                        if (b.binding.file, b.binding.line) in targets_for[inst.id]]
        unique_targets = list({t.key: t for t in gold_targets}.values())
        updated[inst.id] = gold[inst.id].model_copy(update={
            "pool": sorted(m.id for m in pools[inst.id]),
            "kills": sorted(kills),
            "excluded_mutants": outcome.excluded,
            "assertion_dependent": dependent,
            "hidden_kills": hidden_kills,
            "then_stripped_targets": unique_targets,
            "infrastructure_kills": sorted(infrastructure.get(inst.id, set())),
        })
    verdicts = Counter(v for o in outcomes.values() for v in o.verdicts.values())
    summary = {
        "generator_version": GENERATOR_VERSION,
        "operator_families": list(OPERATOR_FAMILIES),
        **mutation_statistics(mutants, instances, updated),
        # mutants the empty test detects (the hooks alone): not kills of the test, recorded apart
        "infrastructure_kills": sum(len(v) for v in infrastructure.values()),
        "instances_with_infrastructure_kills": sum(1 for v in infrastructure.values() if v),
        "empty_test_not_passing": empty_not_passing,
        "ground_truth_verdicts": dict(sorted(verdicts.items())),
        "fresh_process_fallbacks": sum(o.fallbacks for o in outcomes.values()),
        # sessions whose split-stream children disturbed the shared state (the driver's clean run
        # failed after them): their mutants were run whole instead
        "split_stream_discarded": sum(1 for o in outcomes.values() if o.split_stream_discarded),
        "then_stripped_not_passing": stripped_broken,
        # kills the stripped test shares without running it (the failure came before any Then step
        # definition ran), and the kills it was run against
        "then_stripped_inferred": sum(len(v) for v in inferred.values()),
        "then_stripped_runs": sum(len(r["mutants"]) for r in stripped_requests),
        "phase_seconds": seconds,
        "generation_seconds": round(generated, 2),
        "execution_seconds": round(time.perf_counter() - started - generated, 2),
    }
    return mutants, updated, summary


def empty_test_files(root: Path, record: GoldTest) -> dict[str, str]:
    """The empty test of a ground truth, as ``bench.calibrate`` submits it: its closure's code
    with every step-definition body emptied (helpers as they are)."""
    code = sorted(f.path for f in record.closure if f.role != "data")
    step_files = sorted(f.path for f in record.closure if f.role == "step_definitions")
    files = {path: (root / path).read_text(encoding="utf-8") for path in code}
    files.update(strip_step_bodies(root, step_files, None))
    return files


def _infrastructure_kills(instances: list[Instance], gold: dict[str, GoldTest], outcomes: dict[str, SessionOutcome],
                          by_id: dict[str, Mutant], work: Path, infrastructure_py: set[str], timeout: float,
                          progress: Progress, workspace_pool: Any, packages: list[str]) -> tuple[dict[str, set[str]], int]:
    """Per instance, the ground-truth kills its empty test makes too; and how many empty tests
    did not pass clean (they detect nothing). Coverage decides first: a kill whose mutant the
    empty test's clean run never reaches is decided without a run."""
    requests, owners = [], []
    for inst in instances:
        kills = outcomes[inst.id].killed
        if not kills or not classify_run(outcomes[inst.id].clean, len(inst.requirement.run_lines)).passed:
            continue
        files = empty_test_files(work, gold[inst.id])
        workspace: RunWorkspace = {"key": "empty-" + _digest(files), "keep_py": sorted(infrastructure_py),
                                   "files": files}
        requests.append(session_request(inst.requirement.feature_file, inst.requirement.run_lines,
                                        [by_id[k] for k in sorted(kills)], workspace=workspace, timeout=timeout))
        owners.append(inst)
    progress.stage("empty test (infrastructure kills)", len(requests))
    found: dict[str, set[str]] = {}
    not_passing = 0
    if not requests:
        return found, not_passing
    with workspace_pool(False) as pool:
        replies = _map_longest_first(pool, requests, [len(r["mutants"]) for r in requests], progress)
    empty_outcomes: dict[str, SessionOutcome] = {}
    jobs = []
    for inst, request, reply in zip(owners, requests, replies):
        if not classify_run(reply.get("clean", {}), len(inst.requirement.run_lines)).passed:
            not_passing += 1  # the empty test fails by itself: it tells nothing about a mutant
            continue
        empty_outcomes[inst.id] = collect_session(reply)
        jobs += fallback_jobs(inst.id, empty_outcomes[inst.id], by_id, inst.requirement.feature_file,
                              inst.requirement.run_lines, request["workspace"])
    if jobs:
        with workspace_pool(False, import_packages=[]) as pool:
            resolve_fallbacks(pool, jobs, packages, progress)
    for inst_id, outcome in empty_outcomes.items():
        found[inst_id] = outcome.killed & outcomes[inst_id].killed
    return found, not_passing


def _map_longest_first(pool: WorkerPool, requests: list[Any], weights: list[int], progress: Progress) -> list[dict[str, Any]]:
    """``pool.map`` with the heaviest sessions handed out first (replies in request order):
    the slots then finish together instead of one waiting for a large session taken last."""
    order = sorted(range(len(requests)), key=lambda i: -weights[i])
    replies = pool.map([requests[i] for i in order], on_result=lambda i, r: progress.advance())
    out: list[dict[str, Any]] = [{}] * len(requests)
    for position, index in enumerate(order):
        out[index] = replies[position]
    return out


def _killed_before_then(outcome: SessionOutcome, kills: set[str], targets: set[tuple[str, int]]) -> set[str]:
    """Kills whose failing run executed no Then step definition the stripped test empties:
    up to the failure the stripped test runs the same code, so it fails the same way. A kill
    without a reported binding list (a crashed child) is not inferred."""
    wanted = {f"{file}:{line}" for file, line in targets}
    return {k for k in kills if k in outcome.bindings and not wanted.intersection(outcome.bindings[k])}


def _digest(files: dict[str, str]) -> str:
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.encode() + b"\0" + files[path].encode() + b"\0")
    return digest.hexdigest()[:16]
