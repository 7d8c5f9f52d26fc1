"""``req2test build`` for a Cucumber-JVM project. The stages and exclusion reasons are godog's and
cucumber-js's, at step-method granularity:

- **prepare**: a copy of the tree in scratch, ``mvn test-compile`` and the dependency class path
  (``workspace.prepare``), an AppCDS archive of the JDK's and the dependencies' classes
  (``runner.create_archive``), JaCoCo's jars, and one JVM that selects no scenario (a tag none
  has) whose coverage is what loading the suite runs;
- **isolation runs**: each selected scenario ``runs`` times, every Examples row in a JVM of its
  own, selected by its own line; the first run of each row carries the JaCoCo agent;
- **bindings**: each reported step's Java method (the JSON formatter's ``match.location``) is its
  annotated step method in source (``testside.site_for_method``); cucumber-jvm refuses an
  ambiguous step, so nothing is shadowed;
- **validation**: the scenario passes with only its step methods kept (positive:
  ``files_keeping``) and fails with them removed (negative: ``files_without``), every line of
  the glue in place. Each workspace's glue is compiled by the warm javac (``workspace``), one
  compile per distinct set of step methods and kind;
- **analysis**: API calls and target interfaces from the step methods' calls that JaCoCo shows
  ran, the target-hidden map, relations; the gold's closure is the step methods plus the helpers
  they reach.

- **mutants** (``mutation``): every mutant compiled once as mutant schemata, runs in warm JVMs (a
  class loader per run), kills per instance, the empty test's infrastructure kills, the
  then-stripped test's assertion-dependent subset; **fresh_check**: a sample replayed as plain
  recompiles in fresh JVMs.
"""

from __future__ import annotations

import itertools
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from bench.builder.pipeline import (
    BuildError,
    BuildOptions,
    Candidate,
    StageTimer,
    bound_after_isolation,
    collect_candidates,
    sampled,
    validation_verdicts,
    write_dataset,
)
from bench.builder.run_memo import RunMemo, memo_for, sites_digest
from bench.builder.schemata_stage import checkpoint_for
from bench.builder.stepdef_analysis import ROLES, Bound, analyse, site_roles
from bench.frameworks.call_reader import HandlerSpan
from bench.frameworks.cucumber_jvm.declarations import CallReader, JavaProductionDeclarations
from bench.frameworks.cucumber_jvm.framework import CucumberJvmFramework
from bench.frameworks.cucumber_jvm.interfaces import interface_groups, scenario_calls
from bench.frameworks.cucumber_jvm.jacoco import CoverageBaseline, report
from bench.frameworks.cucumber_jvm.javac_server import JavacPool
from bench.frameworks.cucumber_jvm.pickles import COMPANIONS_ONLY, is_companion
from bench.frameworks.cucumber_jvm.runner import CucumberJvmRun, Jacoco, Suite, create_archive, run_scenario
from bench.frameworks.cucumber_jvm.settings import CucumberJvmSettingsError, read_settings
from bench.frameworks.cucumber_jvm.toolchain import JavaToolchain, jacoco_jars
from bench.frameworks.cucumber_jvm.workspace import JavaProject, PrepareError, compile_variant, prepare
from bench.frameworks.trees import copy_tree
from bench.isolation import IsolationError, resolve_mode
from bench.model import (
    DatasetCard,
    Exclusion,
    GoldTest,
    Instance,
    Mutant,
)
from bench.progress import Progress
from bench.project import ProjectSource

NO_SCENARIO_TAG = "@req2test-selects-no-scenario"


@dataclass
class _Runs:
    """What every scenario JVM of the build shares."""

    project: JavaProject
    archive: Path | None
    jacoco: Jacoco
    cli: Path
    timeout: float
    progress: Progress
    scratch: Path
    numbers: Any = None

    def __post_init__(self) -> None:
        self.numbers = itertools.count()

    def run(self, suite: Suite, feature: str, line: int, coverage: bool = False,
            advance: bool = True) -> tuple[CucumberJvmRun, dict[str, set[int]] | None]:
        """One JVM; with ``coverage`` the production lines it ran (None: no exec file/report);
        ``advance``: one step of the stage's progress (not for a run inside another stage's unit)."""
        out = self.scratch / "out" / f"run-{next(self.numbers)}"
        try:
            result = run_scenario(suite, feature, line, out, archive=self.archive,
                                  jacoco=self.jacoco if coverage else None, timeout=self.timeout)
            lines = None
            if coverage and result.exec_file is not None:
                made = report(self.project.java, self.cli, result.exec_file, self.project.classes,
                              self.project.root / self.project.settings.production[0], out / "jacoco.xml")
                if made.coverage is not None:
                    lines = made.coverage.under(self.project.settings.production[0])[0]
            return result, lines
        finally:
            shutil.rmtree(out, ignore_errors=True)
            if advance:
                self.progress.advance()

    def trace(self, test_classes: Path, inst: Instance) -> dict[int, dict[str, set[int]] | None]:
        """Each row of ``inst`` run by the test side compiled into ``test_classes``, with JaCoCo:
        the production lines each row's JVM ran (None: a row without a report, or that failed)."""
        suite = self.project.suite(test_classes=test_classes)
        found: dict[int, dict[str, set[int]] | None] = {}
        for line in inst.requirement.run_lines:
            run, lines = self.run(suite, inst.requirement.feature_file, line, coverage=True, advance=False)
            found[line] = lines if run.passed else None
        return found


def _companion_coverage(runs: _Runs, suite: Suite, features: list[str]) -> dict[str, dict[str, set[int]]]:
    """The production lines each feature's companion scenarios run alone (one JVM per feature
    that has any). ``BuildError`` when they fail: every scenario of the feature would too."""
    found: dict[str, dict[str, set[int]]] = {}
    for feature in features:
        if not suite.has_companions(feature):
            continue
        run, lines = runs.run(suite, feature, COMPANIONS_ONLY, coverage=True)
        if not run.companions_passed or lines is None:
            raise BuildError(f"the setup/teardown scenarios of {feature} do not pass on their own: "
                             f"{run.output[-400:]}")
        found[feature] = lines
    return found


def build_project(framework: CucumberJvmFramework, source: ProjectSource, out_dir: Path, options: BuildOptions,
                  progress: Progress, timer: StageTimer, tmp: Path) -> DatasetCard:
    project_name = options.name or source.name
    if options.isolation == "bwrap":
        raise BuildError("cucumber-jvm: the builder's runs are plain JVMs (the ground truth is the project's own "
                         "code); build with --isolation none (or auto)")
    try:
        resolve_mode(options.isolation)
    except IsolationError as exc:
        raise BuildError(str(exc)) from exc
    workers = max(1, options.workers)
    warnings: list[str] = []

    with timer("prepare"):
        try:
            toolchain = JavaToolchain.find()
            settings = read_settings(source.root, source.features_dir)
        except (RuntimeError, CucumberJvmSettingsError) as exc:
            raise BuildError(str(exc)) from exc
        if len(settings.production) != 1:
            raise BuildError(f"cucumber-jvm: one production source root is supported, not {list(settings.production)}")
        work = copy_tree(source.root, tmp / "work")
        shutil.rmtree(work / "target", ignore_errors=True)
        progress.log("mvn test-compile")
        try:
            project = prepare(work, read_settings(work, source.features_dir), toolchain, tmp / "prepare")
        except PrepareError as exc:
            raise BuildError(str(exc)) from exc
        framework.note_classpath(project.dependencies)
        side = framework.side(work, source.features_dir)
        if not side.sites():
            raise BuildError(f"no step method (@Given/@When/@Then...) in the glue packages {list(settings.glue)} "
                             f"under {settings.test_sources}")
        try:
            agent, cli = jacoco_jars(toolchain, offline=True)
        except RuntimeError:
            try:
                agent, cli = jacoco_jars(toolchain)
            except RuntimeError as exc:
                raise BuildError(str(exc)) from exc
        declarations = JavaProductionDeclarations(work, list(settings.production))

    with timer("parse"):
        candidates, exclusions, parse_warnings, features_total, scenarios_total = collect_candidates(
            work, source, project_name, framework, options)
        warnings += parse_warnings
        candidates = _without_companions(candidates, exclusions, settings.setup_tags, settings.teardown_tags)
        candidates = sampled(candidates, exclusions, options)
    if not candidates:
        raise BuildError(f"{source.root / source.features_dir} has no runnable scenarios")

    suite = project.suite()
    runs = _Runs(project, None, Jacoco(agent, (settings.production_package,)), cli, options.timeout, progress, tmp)
    with timer("prepare"):
        first = candidates[0].requirement
        progress.log("AppCDS archive of the JDK's and the dependencies' classes")
        archived = create_archive(suite, list(project.dependencies), first.feature_file, first.run_lines[0],
                                  tmp / "cds", timeout=options.timeout)
        if archived.archive is None:
            warnings.append(f"cucumber-jvm: no AppCDS archive ({archived.problem[:200]}); JVMs start without one")
        runs.archive = archived.archive
        loading, load_cover = runs.run(replace(suite, tags=(NO_SCENARIO_TAG,)), first.feature_file, 0, coverage=True)
        if load_cover is None:
            raise BuildError(f"the Cucumber-JVM suite fails to load: {loading.output[-400:]}")
        load_time = {d.key for d in declarations.ran(load_cover)}
        companion_cover = _companion_coverage(runs, suite, sorted({c.requirement.feature_file for c in candidates}))

    traced: dict[str, list[tuple[CucumberJvmRun, dict[str, set[int]] | None]]] = {}
    memo = memo_for(out_dir, source.sha256, options.timeout)  # a resumed build replays these runs
    with timer("isolation_runs"):
        jobs = [(cand, k, line) for cand in candidates for k in range(options.runs)
                for line in cand.requirement.run_lines]
        progress.stage("scenarios in isolation (one JVM per scenario or Examples row)", len(jobs))

        def isolated(job: tuple[Candidate, int, int]) -> tuple[CucumberJvmRun, dict[str, set[int]] | None]:
            cand, k, line = job
            return memo.run(lambda: runs.run(suite, cand.requirement.feature_file, line, coverage=k == 0),
                            "isolation", cand.instance_id, line, k, on_reuse=progress.advance)

        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(isolated, jobs))
        by_run: dict[tuple[str, int], list[tuple[CucumberJvmRun, dict[str, set[int]] | None]]] = {}
        for (cand, k, _line), result in zip(jobs, results):
            by_run.setdefault((cand.instance_id, k), []).append(result)
            cand.runtime += result[0].elapsed
        for cand in candidates:
            for k in range(options.runs):
                rows = by_run[(cand.instance_id, k)]
                cand.isolation.append(all(r.passed for r, _ in rows))
                if k == 0:
                    traced[cand.instance_id] = rows
                if not cand.isolation[-1] and cand.failure is None:
                    cand.failure = _failure(next(r for r, _ in rows if not r.passed))

    bound: dict[str, list[Bound]] = {}

    def bind_candidate(cand: Candidate) -> str:
        found, problem = _bindings(cand, [r for r, _ in traced[cand.instance_id]], side)
        if not problem:
            bound[cand.instance_id] = found
        return problem

    passing = bound_after_isolation(candidates, exclusions, bind_candidate)

    javac = JavacPool(toolchain.java)
    try:
        return _rest(framework, source, out_dir, project_name, project, side, runs, candidates, exclusions, warnings,
                     features_total, scenarios_total, traced, bound, passing, declarations,
                     CoverageBaseline(load_cover, companion_cover), load_time, javac, options, progress, timer, workers, tmp,
                     memo)
    finally:
        javac.close()


def _rest(framework: CucumberJvmFramework, source: ProjectSource, out_dir: Path, project_name: str,
          project: JavaProject,
          side: Any, runs: _Runs, candidates: list[Candidate], exclusions: list[Any], warnings: list[str],
          features_total: int, scenarios_total: int,
          traced: dict[str, list[tuple[CucumberJvmRun, dict[str, set[int]] | None]]], bound: dict[str, list[Bound]],
          passing: list[Candidate], declarations: JavaProductionDeclarations, baseline: CoverageBaseline,
          load_time: set[str], javac: JavacPool, options: BuildOptions, progress: Progress, timer: StageTimer,
          workers: int, tmp: Path, memo: RunMemo) -> DatasetCard:
    work = project.root
    with timer("validation_runs"):
        _validation(passing, bound, project, side, runs, options, progress, workers, tmp, javac, memo)
        if memo.reused:
            progress.log(f"resumed {memo.reused} isolation/validation runs from the checkpoint in {out_dir}")
    validated = validation_verdicts(passing, exclusions, "its step methods alone", "its step methods")

    with timer("analysis"):
        reader = CallReader(work, declarations)
        covered: dict[str, dict[str, set[int]]] = {}
        calls = {}
        for cand in validated:
            lines: dict[str, set[int]] = {}
            for _run, hits in traced[cand.instance_id]:
                for file, hit in (hits or {}).items():
                    lines.setdefault(file, set()).update(hit)
            spans: list[tuple[HandlerSpan, str]] = []
            for site, roles in site_roles(bound[cand.instance_id]).items():
                closure = side.closure([site])
                for decl in closure.functions:
                    spans += [(HandlerSpan(decl.file, decl.line, decl.end_line), role) for role in sorted(roles)]
            calls[cand.instance_id] = scenario_calls(declarations.ran(lines), reader, spans)
            covered[cand.instance_id] = baseline.scenario_lines(cand.requirement.feature_file, lines)
        instances, gold = _analyse(project_name, source, validated, bound, side, work, options, calls, covered,
                                   load_time)
        if any(hits is None for rows in traced.values() for run, hits in rows if run.passed):
            warnings.append("cucumber-jvm: a traced run wrote no JaCoCo coverage; its instance's covered lines and "
                            "API calls are incomplete")
    mutants: list[Mutant] = []
    mutation: dict[str, Any] = {}
    if options.mutants and instances:
        from bench.frameworks.cucumber_jvm.mutation import KILL_RULE, fresh_check, run_mutation_stage

        row_coverage = {i.id: {run.line: hits for run, hits in traced[i.id]} for i in instances}
        with timer("mutants"):
            try:
                mutants, gold, mutation = run_mutation_stage(framework, project, side, instances, gold, row_coverage,
                                                             javac, runs.archive, options.timeout,
                                                             options.mutant_workers or workers, progress, tmp,
                                                             checkpoint_for(out_dir, source.sha256, KILL_RULE),
                                                             trace=runs.trace)
            except RuntimeError as exc:
                raise BuildError(str(exc)) from exc
        with timer("fresh_check"):
            mutation["fresh_check"] = fresh_check(framework, project, instances, gold, {m.id: m for m in mutants},
                                                  options.timeout, workers, progress)
    with timer("write"):
        return write_dataset(out_dir, project_name, source, instances, gold, exclusions, timer, options,
                             features_total, scenarios_total, 0, warnings, sorted(load_time), mutants, mutation,
                             "none")


def _without_companions(candidates: list[Candidate], exclusions: list[Any], setup_tags: tuple[str, ...],
                        teardown_tags: tuple[str, ...]) -> list[Candidate]:
    """The candidates less the setup/teardown companions (``settings.setup_tags``): they run
    with every scenario of their feature and are no instance of their own."""
    kept = []
    for cand in candidates:
        tags = [*cand.requirement.feature_tags, *cand.requirement.scenario_tags]
        if is_companion(tags, setup_tags, teardown_tags):
            exclusions.append(Exclusion(id=cand.instance_id, reason="companion_scenario",
                                        detail="a setup/teardown scenario: it runs beside every selected scenario "
                                               "of its feature"))
        else:
            kept.append(cand)
    return kept


# --------------------------------------------------------------------------- runs
def _failure(run: CucumberJvmRun) -> tuple[str, str]:
    """Why a run did not pass, in the reasons the other builders use."""
    where = f"line {run.line}"
    if run.timed_out:
        return "timeout", f"{where}: the run exceeded its timeout"
    if not run.report.written:
        return "load_error", f"{where}: {run.report.problem} (exit {run.exit_code}): {_first_line(run.output)}"
    scenario = run.scenario
    if not run.report.scenarios:
        return "not_run", f"{where}: cucumber ran no scenario at this line"
    if scenario is None or any(other.line not in run.companions for other in run.others):
        return "not_run", f"{where}: cucumber ran {len(run.report.scenarios)} scenarios, not the selected one"
    for step in scenario.steps:
        if step.status in ("undefined", "pending", "ambiguous"):
            return "step_unbound", f"{step.status}: {step.text}"
        if step.status == "failed":
            return "failed", f"{where}: {step.text}: {_first_line(step.error)[:200]}"
    for hook in (*scenario.before, *scenario.after):
        if hook.status == "failed":
            return "failed", f"{where}: hook {hook.location}: {_first_line(hook.error)[:200]}"
    for other in run.others:
        if not other.passed:
            return "failed", f"{where}: its companion scenario at line {other.line} failed"
    return "failed", f"{where}: exit {run.exit_code}: {_first_line(run.output)[:200]}"


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


def _bindings(cand: Candidate, rows: list[CucumberJvmRun], side: Any) -> tuple[list[Bound], str]:
    effective = cand.requirement.effective_steps
    by_line = {s.line: s for s in effective}
    found: list[Bound] = []
    for run in rows:
        scenario = run.scenario
        if scenario is None:
            return [], f"line {run.line}: no result to bind"
        for index, step in enumerate(scenario.steps):
            if step.match is None:
                return [], f"no step definition location reported for {step.text!r}"
            site = side.site_for_method(step.match)
            if site is None:
                return [], f"cucumber ran {step.location} for {step.text!r}, not an annotated method of the glue sources"
            effective_step = by_line.get(step.line) or (effective[index] if index < len(effective) else None)
            # the feature's keyword, And/But resolved; the annotation's only when the step is not found
            role = effective_step.type if effective_step is not None else (site.kind if site.kind in ROLES
                                                                            else "given")
            found.append(Bound(run.line, effective_step, site, role))
    return found, ""


def _validation(passing: list[Candidate], bound: dict[str, list[Bound]], project: JavaProject, side: Any,
                runs: _Runs, options: BuildOptions, progress: Progress, workers: int, tmp: Path,
                javac: JavacPool, memo: RunMemo) -> None:
    """Positive and negative workspaces, one compiled glue per distinct (kind, step methods); a
    workspace whose every run ``memo`` holds (a resumed build) is not compiled again."""
    groups: dict[tuple[str, frozenset[Any]], list[Candidate]] = {}
    for cand in passing:
        sites = frozenset(b.site for b in bound[cand.instance_id])
        for kind in ("positive", "negative"):
            groups.setdefault((kind, sites), []).append(cand)
    total = sum(len(c.requirement.run_lines) * options.runs for cands in groups.values() for c in cands)
    progress.stage(f"positive/negative validation ({len(groups)} compiled workspaces)", total)

    def record(kind: str, cand: Candidate, rows: list[CucumberJvmRun]) -> None:
        broken = [r for r in rows if r.timed_out or not r.report.written] if kind == "negative" else []
        failed = [r for r in rows if not r.passed]
        first = broken or failed
        cand.record_validation(kind, not failed, _failure(first[0]) if first else None, broken=bool(broken))

    def one(n: int, kind: str, sites: frozenset[Any], cands: list[Candidate]) -> None:
        keys = memo.workspace_keys((kind, sites_digest(sites)), cands, options.runs)
        if memo.replay_workspace(keys, cands, options.runs, partial(record, kind), progress.advance):
            return
        files = side.files_keeping(sites) if kind == "positive" else side.files_without(sites)
        variant = compile_variant(project, files, tmp / "variants" / f"{kind}-{n}", javac)
        if not variant.compile.ok:
            failure = ("build_failed",
                       f"the {kind} workspace does not compile: {_first_line(variant.compile.output)[:300]}")
            for cand in cands:
                for _ in range(options.runs):
                    cand.record_validation(kind, False, failure, broken=True)
                progress.advance(len(cand.requirement.run_lines) * options.runs)
            return
        suite = project.suite(variant.classes)
        for cand in cands:
            for r in range(options.runs):
                record(kind, cand, [
                    # each lambda runs at once, inside its own iteration
                    memo.run(lambda: runs.run(suite, cand.requirement.feature_file, line)[0],  # noqa: B023
                             *keys[(cand.instance_id, r, line)], on_reuse=progress.advance)
                    for line in cand.requirement.run_lines])
        shutil.rmtree(tmp / "variants" / f"{kind}-{n}", ignore_errors=True)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for future in [pool.submit(one, n, kind, sites, cands)
                       for n, ((kind, sites), cands) in enumerate(groups.items())]:
            future.result()


# --------------------------------------------------------------------------- analysis
RULE = ("target interfaces (public production methods and constructors the When/Then step methods call and JaCoCo "
        "shows ran) + production code the scenario's run executed, minus code more than {share:.0%} of instances "
        "execute, minus code that runs while the suite loads; the test implementation is the scenario's annotated "
        "step methods and the helpers they reach")


def _analyse(project: str, source: ProjectSource, validated: list[Candidate], bound: dict[str, list[Bound]],
             side: Any, work: Path, options: BuildOptions, calls: dict[str, Any],
             covered: dict[str, dict[str, set[int]]], load_time: set[str]) -> tuple[list[Instance], dict[str, GoldTest]]:
    return analyse(project, source, validated, bound, lambda _cand, sites: side.closure(sites), work, options, calls,
                   covered, load_time, interface_groups, RULE.format(share=options.shared_threshold),
                   "cucumber-jvm: the test level is not classified yet")


__all__ = ["build_project"]
