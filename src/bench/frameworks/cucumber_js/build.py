"""``req2test build`` for a cucumber-js project (stages II–V of docs/building.md#what-build-does).

The same stages and exclusion reasons as behave's pipeline, at step-definition
granularity:

- **isolation runs**: each selected scenario alone, ``runs`` times, a new ``node`` process
  each; the first run's Cucumber Messages give the bindings (pickle step → step definition →
  the ``Given(...)`` call statement in the test side, ``testside``);
- **validation**: the scenario passes with only its own step-definition statements kept
  (positive) and fails with them removed (negative), every other line of the step files
  unchanged;
- **mutants and ground-truth kills**: one Stryker run (instrumenter + cucumber runner,
  per-test coverage, ``disableBail`` so every killing scenario is recorded, static mutants
  ignored: they would need a new process per mutant for every scenario); the pool of an
  instance is the mutants its scenario's rows cover, its kills those any row kills;
- **fresh-process check**: a sample of (instance, mutant) verdicts replayed in new ``node``
  processes with the mutant written to disk; the card records every disagreement.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from bench.builder.pipeline import (
    BuildError,
    BuildOptions,
    Candidate,
    StageTimer,
    bound_after_isolation,
    collect_candidates,
    id_order,
    sampled,
    validation_verdicts,
    write_dataset,
)
from bench.builder.relations import RelationInput, compute_relations
from bench.frameworks.cucumber_js.declarations import CallReader, ProductionDeclarations
from bench.frameworks.cucumber_js.framework import (
    CUCUMBER_VERSION,
    STRYKER_VERSION,
    CucumberJsFramework,
    fresh_verdict,
)
from bench.frameworks.cucumber_js.interfaces import (
    ScenarioCalls,
    hidden_declarations,
    interface_groups,
    scenario_calls,
)
from bench.frameworks.cucumber_js.language import make_mutant, production_files
from bench.frameworks.cucumber_js.runner import CucumberRun, compile_cache_for, link_tree, run_cucumber, step_files
from bench.frameworks.cucumber_js.testside import STEP_TYPES, StepSite, TestSideJs
from bench.frameworks.cucumber_js.v8coverage import RunCoverage, coverage_env, load_coverage, read_coverage
from bench.isolation import IsolationError, resolve_mode, wrap
from bench.model import (
    ClosureFile,
    DatasetCard,
    GoldTest,
    Instance,
    Mutant,
    StepBinding,
    StepDefRef,
    TestLevel,
    ValidationRecord,
    ViewSpec,
)
from bench.progress import Progress
from bench.project import ProjectSource

FRESH_SAMPLE = 60  # (instance, mutant) pairs replayed in fresh processes, half of them kills


def check_packages(root: Path, mutants: bool) -> Path:
    """The project's node_modules, with the runner (and Stryker) req2test pins; else one line."""
    modules = root / "node_modules"
    wanted = [("@cucumber/cucumber", CUCUMBER_VERSION)]
    if mutants:
        wanted += [("@stryker-mutator/core", STRYKER_VERSION), ("@stryker-mutator/cucumber-runner", STRYKER_VERSION)]
    for package, version in wanted:
        manifest = modules / package / "package.json"
        found = json.loads(manifest.read_text(encoding="utf-8")).get("version") if manifest.is_file() else None
        if found != version:
            have = f"has {found}" if found else "is not installed"
            raise BuildError(f"{root}: {package} {have}; req2test runs {package}@{version} "
                             f"(npm install --save-dev {package}@{version})")
    if shutil.which("node") is None:
        raise BuildError("node is not on PATH (Debian: apt-get install nodejs npm)")
    return modules


def build_project(framework: CucumberJsFramework, source: ProjectSource, out_dir: Path, options: BuildOptions,
                  progress: Progress, timer: StageTimer, tmp: Path) -> DatasetCard:
    project = options.name or source.name
    try:
        isolation = resolve_mode(options.isolation)
    except IsolationError as exc:
        raise BuildError(str(exc)) from exc
    # the suite's hooks may bind fixed ports (js-algorand-sdk's mock servers): only runs in
    # their own network namespace can overlap
    workers = max(1, options.workers) if isolation == "bwrap" else 1
    with timer("prepare"):
        modules = check_packages(source.root, options.mutants)
        work = tmp / "work"
        link_tree(source.root, work, node_modules=modules)
        files = step_files(work)
        if not files:
            raise BuildError(f"{source.root}: cucumber.json's default profile names no step files (require/import)")
        side = TestSideJs(work, files)
        cache = compile_cache_for(tmp / "tsx-cache", isolation)
        production = production_files(work, list(source.production))
        declarations = ProductionDeclarations(work, production)
        # what runs while the suite loads (a dry run loads every support file and what they
        # require): a view that hid it would break loading
        loading = load_coverage(work, source.features_dir, tmp / "out" / "load", set(production),
                                timeout=options.timeout, isolation=isolation, compile_cache=cache)
        load_time = {d.key for d in declarations.ran(loading.functions)}
    with timer("parse"):
        candidates, exclusions, warnings, features_total, scenarios_total = collect_candidates(
            work, source, project, framework, options)
        candidates = sampled(candidates, exclusions, options)
    if not candidates:
        raise BuildError(f"{source.root / source.features_dir} has no runnable scenarios")

    def run(tree: Path, cand: Candidate, tag: str, coverage: bool = False) -> CucumberRun:
        selection = [f"{cand.requirement.feature_file}:{line}" for line in cand.requirement.run_lines]
        out = tmp / "out" / tag
        return run_cucumber(tree, selection, out, timeout=options.timeout, isolation=isolation,
                            compile_cache=cache, env=coverage_env(out) if coverage else None)

    traced: dict[str, CucumberRun] = {}
    covered: dict[str, RunCoverage] = {}
    with timer("isolation_runs"):
        # the first of each scenario's runs also records V8's coverage (it is the traced run)
        jobs = [(cand, k) for cand in candidates for k in range(options.runs)]
        progress.stage("scenarios in isolation", len(jobs))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(lambda n_job: _advance(progress, run(work, n_job[1][0], f"iso-{n_job[0]}",
                                                                         coverage=n_job[1][1] == 0)),
                                    enumerate(jobs)))
        for n, ((cand, k), result) in enumerate(zip(jobs, results)):
            cand.isolation.append(result.passed and len(result.report.pickles) == len(cand.requirement.run_lines))
            cand.runtime += result.elapsed
            if k == 0:
                traced[cand.instance_id] = result
                covered[cand.instance_id] = read_coverage(tmp / "out" / f"iso-{n}" / "v8", work,
                                                          set(production)).without(loading.lines)
            if not cand.isolation[-1] and cand.failure is None:
                cand.failure = _failure(result, len(cand.requirement.run_lines))
    sites: dict[str, list[tuple[int, int, StepSite, str]]] = {}  # id -> (row line, step index, site, type)

    def bind_candidate(cand: Candidate) -> str:
        bound, problem = _bindings(traced[cand.instance_id], side)
        if not problem:
            sites[cand.instance_id] = bound
        return problem

    passing = bound_after_isolation(candidates, exclusions, bind_candidate)

    with timer("validation_runs"):
        jobs2: list[tuple[Candidate, str, Path]] = []
        for n, cand in enumerate(passing):
            closure = {site for _, _, site, _ in sites[cand.instance_id]}
            for kind, replaced in (("positive", side.files_keeping(closure)),
                                   ("negative", side.files_without(closure))):
                tree = tmp / "trees" / f"{kind}-{n}"
                link_tree(work, tree, replaced, modules)
                jobs2 += [(cand, kind, tree)] * options.runs
        progress.stage("positive/negative validation", len(jobs2))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results2 = list(pool.map(lambda n_job: _advance(progress, run(n_job[1][2], n_job[1][0], f"val-{n_job[0]}")),
                                     enumerate(jobs2)))
        for (cand, kind, _tree), result in zip(jobs2, results2):
            ok = result.passed and len(result.report.pickles) == len(cand.requirement.run_lines)
            cand.record_validation(kind, ok, broken=kind == "negative" and (result.timed_out or
                                                                            result.exit_code not in (0, 1)))
        shutil.rmtree(tmp / "trees", ignore_errors=True)
    validated = validation_verdicts(passing, exclusions, "its step definitions alone", "its step definitions")

    with timer("analysis"):
        calls = {cand.instance_id: scenario_calls(
            declarations, declarations.ran(covered[cand.instance_id].functions), CallReader(work),
            [(site, STEP_TYPES.get(step_type, "given")) for _, _, site, step_type in sites[cand.instance_id]])
            for cand in validated}
        instances, gold = _analyse(project, source, validated, sites, side, options, calls, covered, load_time)

    mutants: list[Mutant] = []
    mutation: dict[str, Any] = {}
    if options.mutants and instances:
        with timer("mutants"):
            mutants, gold, mutation = _mutation_stage(work, source, instances, gold, options, progress, tmp,
                                                       isolation)
        with timer("fresh_check"):
            mutation["fresh_check"] = _fresh_check(framework, work, modules, instances, gold,
                                                   {m.id: m for m in mutants}, options, isolation, workers, tmp,
                                                   cache)
    with timer("write"):
        return write_dataset(out_dir, project, source, instances, gold, exclusions, timer, options, features_total,
                      scenarios_total, 0, warnings, [], mutants, mutation, isolation)


_T = TypeVar("_T")


def _advance(progress: Progress, value: _T) -> _T:
    progress.advance()
    return value


def _failure(run: CucumberRun, expected: int) -> tuple[str, str]:
    """Why an isolation run did not pass, in the reasons behave's pipeline uses."""
    if run.timed_out:
        return "timeout", "the run exceeded its timeout"
    if not run.report.pickles:
        if run.report.run_hook_failures or run.exit_code not in (0, 1):
            return "load_error", (run.report.run_hook_failures or [run.stderr.strip()[-300:]])[0]
        return "not_run", "cucumber-js ran no scenario at these lines"
    if len(run.report.pickles) != expected:
        return "not_run", f"cucumber-js ran {len(run.report.pickles)} of {expected} rows"
    for pickle in run.report.pickles:
        for step in pickle.steps:
            if step.status in ("UNDEFINED", "AMBIGUOUS", "PENDING"):
                return "step_unbound", f"{step.status.lower()}: {step.text}"
            if step.status == "FAILED":
                return "failed", f"line {pickle.line}: {step.text}: {step.message.strip().splitlines()[0][:200] if step.message.strip() else ''}"
        if pickle.hook_failures:
            return "failed", f"line {pickle.line}: hook {pickle.hook_failures[0][:200]}"
    return "failed", run.stderr.strip()[-200:]


def _bindings(run: CucumberRun, side: TestSideJs) -> tuple[list[tuple[int, int, StepSite, str]], str]:
    bound: list[tuple[int, int, StepSite, str]] = []
    for pickle in run.report.pickles:
        for index, step in enumerate(pickle.steps):
            if len(step.definition_ids) != 1:
                return [], f"{len(step.definition_ids)} definitions match: {step.text}"
            info = run.report.definitions.get(step.definition_ids[0])
            if info is None:
                return [], f"no step definition message for: {step.text}"
            site = side.site_for(info.pattern, step.step_type, info.uri, info.line)
            if site is None:
                return [], f"no literal Given/When/Then call for pattern {info.pattern!r} ({info.uri}:{info.line})"
            bound.append((pickle.line, index, site, step.step_type))
    return bound, ""


def _analyse(project: str, source: Any, validated: list[Candidate], sites: dict, side: TestSideJs,
             options: Any, calls: dict[str, ScenarioCalls], covered: dict[str, RunCoverage],
             load_time: set[str]) -> tuple[list[Instance], dict[str, GoldTest]]:
    def keys(cand: Candidate, types: set[str]) -> frozenset[str]:
        return frozenset(site.key for _, _, site, t in sites[cand.instance_id] if STEP_TYPES.get(t) in types)

    relations = compute_relations([RelationInput(id=c.instance_id, given_when=keys(c, {"given", "when"}),
                                                 when=keys(c, {"when"}), all_definitions=keys(c, {"given", "when", "then"}))
                                   for c in validated])
    # shared infrastructure: what most instances' runs execute
    frequency = Counter(d.key for c in calls.values() for d in {x.key: x for x in c.ran}.values())
    shared = {k for k, n in frequency.items() if n > options.shared_threshold * max(1, len(validated))}
    rule = (f"target interfaces (public production functions the When/Then step definitions name and V8 saw run) "
            f"+ production code the scenario's run executed, minus code more than "
            f"{options.shared_threshold:.0%} of instances execute, minus code that runs while the suite loads; "
            f"the test implementation is the scenario's step-definition statements")
    instances: list[Instance] = []
    gold: dict[str, GoldTest] = {}
    for cand in validated:
        bound = sites[cand.instance_id]
        closure = sorted({site for _, _, site, _ in bound}, key=lambda s: (s.file, s.line))
        effective = cand.requirement.effective_steps
        bindings = []
        for row_line, index, site, step_type in bound:
            step = effective[index] if index < len(effective) else None
            kind = STEP_TYPES.get(step_type, step.type if step else "given")
            bindings.append(StepBinding(step_line=step.line if step else 0, step_text=step.text if step else "",
                                        step_type=step.type if step else kind, role=kind,  # type: ignore[arg-type]
                                        background=bool(step and step.background), depth=0,
                                        binding=StepDefRef(file=site.file, line=site.line, qualname=site.qualname),
                                        scenario_line=row_line))
        closure_files = [ClosureFile(path=f, role="step_definitions", sha256=side.sha256(f),
                                     lines=sum(s.end_line - s.line + 1 for s in closure if s.file == f))
                         for f in sorted({s.file for s in closure})]
        instances.append(Instance(
            id=cand.instance_id, project=project, requirement=cand.requirement,
            target_interfaces=interface_groups(calls[cand.instance_id].targets), test_level=TestLevel.component,
            depends_on=relations.depends_on.get(cand.instance_id, []),
            variant_of=relations.variant_of.get(cand.instance_id, []), group=relations.group_of[cand.instance_id],
            view=ViewSpec(target_hidden=[d.body_span() for d in hidden_declarations(calls[cand.instance_id], shared,
                                                                                      load_time)],
                          hidden_rule=rule, all_hidden_scope=list(source.production))))
        gold[cand.instance_id] = GoldTest(
            instance_id=cand.instance_id, closure=closure_files,
            step_definitions=[StepDefRef(file=s.file, line=s.line, qualname=s.qualname) for s in closure],
            bindings=bindings, api_calls=calls[cand.instance_id].api_keys,
            target_calls=calls[cand.instance_id].target_keys,
            # per-step coverage is not measured: every declaration the scenario ran
            executed_when_then=sorted({d.key for d in calls[cand.instance_id].ran}),
            covered_lines=covered[cand.instance_id].as_lists(),
            data_files=[],
            validation=ValidationRecord(isolation_runs=cand.isolation, positive_runs=cand.positive,
                                        negative_runs=cand.negative, negative_initialized=cand.negative_initialized),
            test_level_evidence=["cucumber-js: the test level is not classified yet"],
            runtime_seconds=round(cand.runtime / max(1, len(cand.isolation)), 4))
    instances.sort(key=lambda i: id_order(i.id))
    return instances, gold


# --------------------------------------------------------------------------- mutants
def _shards(work: Path, files: list[str], count: int) -> list[list[str]]:
    """``count`` lists of files of about equal size (largest first, each to the lightest)."""
    shards: list[list[str]] = [[] for _ in range(count)]
    weight = [0] * count
    for file in sorted(files, key=lambda f: -(work / f).stat().st_size):
        k = weight.index(min(weight))
        shards[k].append(file)
        weight[k] += (work / f"{file}").stat().st_size
    return [sorted(s) for s in shards if s]


def _stryker(work: Path, features_dir: str, files: list[str], scratch: Path, options: Any, isolation: str) -> dict:
    """One Stryker run over ``files``, in a network namespace of its own under bubblewrap:
    a suite's hooks may bind fixed ports, so runs side by side must not share one (and
    Stryker itself runs one test-runner process for the same reason)."""
    scratch.mkdir(parents=True, exist_ok=True)
    os.chmod(scratch, 0o777)  # the sandbox's uid is nobody
    report_path = scratch / "report.json"
    config = {
        "testRunner": "cucumber", "plugins": ["@stryker-mutator/cucumber-runner"],
        "cucumber": {"features": [features_dir]},
        "coverageAnalysis": "perTest", "disableBail": True, "ignoreStatic": True,
        "mutate": files, "reporters": ["json"], "jsonReporter": {"fileName": str(report_path)},
        # the sandbox lives inside the tree, so its requires find the tree's node_modules
        "concurrency": 1, "tempDirName": f".stryker-tmp-{scratch.name}", "cleanTempDir": True,
        "ignorePatterns": [".stryker-tmp-*"],
        "timeoutMS": int(max(5.0, options.timeout / 4) * 1000), "logLevel": "warn",
    }
    config_path = scratch / "stryker.config.json"
    config_path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    command = ["node", "node_modules/@stryker-mutator/core/bin/stryker.js", "run", str(config_path)]
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(scratch), "TMPDIR": "/tmp", "LANG": "C.UTF-8"}
    if isolation == "bwrap":
        command = wrap(command, writable=[scratch, work], readonly=[(work / "node_modules").resolve()], cwd=work)
    else:
        env = {**os.environ, **env}
    proc = subprocess.run(command, cwd=work, env=env, capture_output=True, check=False)
    if proc.returncode != 0 or not report_path.is_file():
        tail = (proc.stdout + proc.stderr).decode(errors="replace").strip().splitlines()[-3:]
        raise BuildError("Stryker failed: " + " | ".join(tail))
    report = json.loads(report_path.read_text(encoding="utf-8"))
    shutil.rmtree(work / f".stryker-tmp-{scratch.name}", ignore_errors=True)
    return report


def _mutation_stage(work: Path, source: Any, instances: list[Instance], gold: dict[str, GoldTest],
                    options: BuildOptions, progress: Progress, tmp: Path, isolation: str) -> tuple[list[Mutant], dict[str, GoldTest], dict]:
    files = production_files(work, list(source.production))
    # Stryker runs side by side only in network namespaces of their own (bubblewrap); three
    # shards per worker, taken from a queue, keep both cores busy to the end (a shard's own
    # start and dry run cost ~20 s)
    parallel = max(1, options.workers) if isolation == "bwrap" else 1
    shards = _shards(work, files, parallel * 3 if parallel > 1 else 1)
    progress.stage(f"Stryker mutation runs ({len(shards)} shards, {parallel} at a time)", len(shards))
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        reports = list(pool.map(lambda k: _advance(progress, _stryker(work, source.features_dir, shards[k],
                                                                      tmp / f"stryker-{k}", options, isolation)),
                                range(len(shards))))
    stryker_seconds = time.perf_counter() - started
    report = {"files": {f: e for r in reports for f, e in r.get("files", {}).items()},
              "testFiles": reports[0].get("testFiles", {})}

    tests_of: dict[str, set[str]] = {}  # instance id -> Stryker test ids of its rows
    by_location: dict[tuple[str, int], str] = {}
    for feature, entry in report.get("testFiles", {}).items():
        for test in entry.get("tests", []):
            by_location[(feature, int(test.get("location", {}).get("start", {}).get("line", 0)))] = str(test["id"])
    for inst in instances:
        req = inst.requirement
        tests_of[inst.id] = {by_location[(req.feature_file, line)] for line in req.run_lines
                             if (req.feature_file, line) in by_location}
    mutants: list[Mutant] = []
    covered: dict[str, set[str]] = {}
    killed: dict[str, set[str]] = {}
    statuses: Counter[str] = Counter()
    excluded: dict[str, str] = {}
    for file, entry in sorted(report.get("files", {}).items()):
        text = (work / file).read_text(encoding="utf-8")
        for raw in entry.get("mutants", []):
            statuses[raw["status"]] += 1
            if raw["status"] == "Ignored":
                continue
            loc = raw["location"]
            mutant = make_mutant(work, file, raw["mutatorName"], raw.get("replacement", ""), loc["start"]["line"],
                                 loc["start"]["column"] - 1, loc["end"]["line"], loc["end"]["column"] - 1, text)
            mutants.append(mutant)
            covered[mutant.id] = {str(t) for t in raw.get("coveredBy") or []}
            killed[mutant.id] = {str(t) for t in raw.get("killedBy") or []} if raw["status"] == "Killed" else set()
            if raw["status"] in ("Timeout", "RuntimeError", "CompileError"):
                excluded[mutant.id] = raw["status"].lower()
    mutants.sort(key=lambda m: (m.file, m.line, m.col, m.id))
    updated: dict[str, GoldTest] = {}
    for inst in instances:
        tests = tests_of[inst.id]
        inst_pool = sorted(m for m, t in covered.items() if t & tests)
        kills = sorted(m for m in inst_pool if killed[m] & tests and m not in excluded)
        updated[inst.id] = gold[inst.id].model_copy(update={
            "pool": inst_pool, "kills": kills,
            "excluded_mutants": {m: excluded[m] for m in inst_pool if m in excluded}})
    pool_sizes = [len(g.pool) for g in updated.values()]
    kill_counts = [len(g.kills) for g in updated.values()]
    mutation = {"mutants_per_operator": dict(sorted(Counter(m.operator for m in mutants).items())),
                "mean_pool_size": round(sum(pool_sizes) / max(1, len(pool_sizes)), 2),
                "mean_ground_truth_kills": round(sum(kill_counts) / max(1, len(kill_counts)), 2),
                "mean_assertion_dependent_kills": 0.0,
                "scorable_instances": sum(1 for k in kill_counts if k),
                "fresh_process_fallbacks": 0,
                "generator": f"stryker {STRYKER_VERSION} (instrumenter; cucumber runner, perTest coverage, "
                             f"disableBail, static mutants ignored)",
                "mutants": len(mutants), "statuses": dict(sorted(statuses.items())),
                "stryker_seconds": round(stryker_seconds, 1), "stryker_runs": len(shards),
                "stryker_parallel": parallel,
                "covered_lines": "V8 block coverage of the traced isolation run, mapped to source lines, "
                                 "less what loading the suite covers"}
    return mutants, updated, mutation


def _fresh_check(framework: Any, work: Path, modules: Path, instances: list[Instance], gold: dict[str, GoldTest],
                 mutants: dict[str, Mutant], options: Any, isolation: str, workers: int, tmp: Path,
                 cache: Path | None) -> dict:
    """Replay a sample of Stryker's verdicts in fresh processes with the mutant on disk."""
    rng = random.Random(0)
    kills = [(i, m) for i in instances for m in gold[i.id].kills]
    survivors = [(i, m) for i in instances for m in gold[i.id].pool
                 if m not in gold[i.id].kills and m not in gold[i.id].excluded_mutants]
    sample = rng.sample(kills, min(len(kills), FRESH_SAMPLE // 2))
    sample += rng.sample(survivors, min(len(survivors), FRESH_SAMPLE - len(sample)))

    def replay(n_pair: tuple[int, tuple[Instance, str]]) -> tuple[str, str, str]:
        n, (inst, mutant_id) = n_pair
        mutant = mutants[mutant_id]
        tree = tmp / "fresh" / str(n)
        link_tree(work, tree, framework.language.mutated_files(work, mutant), modules)
        req = inst.requirement
        run = run_cucumber(tree, [f"{req.feature_file}:{line}" for line in req.run_lines], tmp / "fresh-out" / str(n),
                           timeout=options.timeout, isolation=isolation, compile_cache=cache)
        shutil.rmtree(tree, ignore_errors=True)
        expected = "killed" if mutant_id in gold[inst.id].kills else "survived"
        return inst.id, mutant_id, f"{expected}/{fresh_verdict(run, run.elapsed).verdict}"

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        outcomes = list(pool.map(replay, enumerate(sample)))
    disagreements = [f"{i} {m}: stryker/fresh = {v}" for i, m, v in outcomes if v.split("/")[0] != v.split("/")[1]]
    return {"sampled": len(outcomes), "kills_sampled": sum(1 for *_, v in outcomes if v.startswith("killed")),
            "agree": len(outcomes) - len(disagreements), "disagreements": disagreements,
            "seconds": round(time.perf_counter() - started, 1)}
