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

import hashlib
import itertools
import shutil
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.builder.pipeline import (
    BuildError,
    BuildOptions,
    Candidate,
    StageTimer,
    bound_after_isolation,
    collect_candidates,
    id_order,
    validation_verdicts,
    write_dataset,
)
from bench.builder.relations import RelationInput, compute_relations
from bench.frameworks.cucumber_jvm.declarations import CallReader, HandlerSpan, JavaProductionDeclarations
from bench.frameworks.cucumber_jvm.framework import CucumberJvmFramework
from bench.frameworks.cucumber_jvm.interfaces import hidden_declarations, interface_groups, scenario_calls
from bench.frameworks.cucumber_jvm.jacoco import report
from bench.frameworks.cucumber_jvm.javac_server import JavacPool
from bench.frameworks.cucumber_jvm.runner import CucumberJvmRun, Jacoco, Suite, create_archive, run_scenario
from bench.frameworks.cucumber_jvm.settings import CucumberJvmSettingsError, read_settings
from bench.frameworks.cucumber_jvm.testside import StepSite
from bench.frameworks.cucumber_jvm.toolchain import JavaToolchain, jacoco_jars
from bench.frameworks.cucumber_jvm.workspace import JavaProject, PrepareError, compile_variant, prepare
from bench.frameworks.trees import copy_tree
from bench.isolation import IsolationError, resolve_mode
from bench.model import (
    ClosureFile,
    DatasetCard,
    GoldTest,
    Instance,
    Mutant,
    Step,
    StepBinding,
    StepDefRef,
    TestLevel,
    ValidationRecord,
    ViewSpec,
)
from bench.progress import Progress
from bench.project import ProjectSource

ROLES = ("given", "when", "then")
NO_SCENARIO_TAG = "@req2test-selects-no-scenario"


@dataclass(frozen=True)
class Bound:
    row_line: int
    step: Step | None
    site: StepSite
    role: str


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

    def run(self, suite: Suite, feature: str, line: int, coverage: bool = False) -> tuple[CucumberJvmRun,
                                                                                         dict[str, set[int]] | None]:
        """One JVM; with ``coverage`` the production lines it ran (None: no exec file/report)."""
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
            self.progress.advance()


def build_project(framework: CucumberJvmFramework, source: ProjectSource, out_dir: Path, options: BuildOptions,
                  progress: Progress, timer: StageTimer, tmp: Path) -> DatasetCard:
    project_name = options.name or source.name
    if options.isolation == "bwrap":
        raise BuildError("cucumber-jvm: the builder's runs are plain JVMs (the ground truth is the project's own "
                         "code); build with --isolation none (or auto)")
    try:
        resolve_mode(options.isolation)  # type: ignore[arg-type]
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

    traced: dict[str, list[tuple[CucumberJvmRun, dict[str, set[int]] | None]]] = {}
    with timer("isolation_runs"):
        jobs = [(cand, k, line) for cand in candidates for k in range(options.runs)
                for line in cand.requirement.run_lines]
        progress.stage("scenarios in isolation (one JVM per scenario or Examples row)", len(jobs))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(lambda job: runs.run(suite, job[0].requirement.feature_file, job[2],
                                                         coverage=job[1] == 0), jobs))
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
                     features_total, scenarios_total, traced, bound, passing, declarations, load_cover, load_time,
                     javac, options, progress, timer, workers, tmp)
    finally:
        javac.close()


def _rest(framework: CucumberJvmFramework, source: ProjectSource, out_dir: Path, project_name: str,
          project: JavaProject,
          side: Any, runs: _Runs, candidates: list[Candidate], exclusions: list[Any], warnings: list[str],
          features_total: int, scenarios_total: int,
          traced: dict[str, list[tuple[CucumberJvmRun, dict[str, set[int]] | None]]], bound: dict[str, list[Bound]],
          passing: list[Candidate], declarations: JavaProductionDeclarations, load_cover: dict[str, set[int]],
          load_time: set[str], javac: JavacPool, options: BuildOptions, progress: Progress, timer: StageTimer,
          workers: int, tmp: Path) -> DatasetCard:
    work = project.root
    with timer("validation_runs"):
        _validation(passing, bound, project, side, runs, options, progress, workers, tmp, javac)
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
            for site, roles in _site_roles(bound[cand.instance_id]).items():
                closure = side.closure([site])
                for decl in closure.functions:
                    spans += [(HandlerSpan(decl.file, decl.line, decl.end_line), role) for role in sorted(roles)]
            calls[cand.instance_id] = scenario_calls(declarations.ran(lines), reader, spans)
            covered[cand.instance_id] = {f: hit - set(load_cover.get(f, ())) for f, hit in lines.items()}
        instances, gold = _analyse(project_name, source, validated, bound, side, work, options, calls, covered,
                                   load_time)
        if any(hits is None for rows in traced.values() for run, hits in rows if run.passed):
            warnings.append("cucumber-jvm: a traced run wrote no JaCoCo coverage; its instance's covered lines and "
                            "API calls are incomplete")
    mutants: list[Mutant] = []
    mutation: dict[str, Any] = {}
    if options.mutants and instances:
        from bench.frameworks.cucumber_jvm.mutation import fresh_check, run_mutation_stage

        row_coverage = {i.id: {run.line: hits for run, hits in traced[i.id]} for i in instances}
        with timer("mutants"):
            try:
                mutants, gold, mutation = run_mutation_stage(framework, project, side, instances, gold, row_coverage,
                                                             javac, runs.archive, options.timeout, workers,
                                                             progress, tmp)
            except RuntimeError as exc:
                raise BuildError(str(exc)) from exc
        with timer("fresh_check"):
            mutation["fresh_check"] = fresh_check(framework, project, instances, gold, {m.id: m for m in mutants},
                                                  options.timeout, workers, progress)
    with timer("write"):
        return write_dataset(out_dir, project_name, source, instances, gold, exclusions, timer, options,
                             features_total, scenarios_total, 0, warnings, sorted(load_time), mutants, mutation,
                             "none")


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
    if scenario is None or len(run.report.scenarios) != 1:
        return "not_run", f"{where}: cucumber ran {len(run.report.scenarios)} scenarios, not the selected one"
    for step in scenario.steps:
        if step.status in ("undefined", "pending", "ambiguous"):
            return "step_unbound", f"{step.status}: {step.text}"
        if step.status == "failed":
            return "failed", f"{where}: {step.text}: {_first_line(step.error)[:200]}"
    for hook in (*scenario.before, *scenario.after):
        if hook.status == "failed":
            return "failed", f"{where}: hook {hook.location}: {_first_line(hook.error)[:200]}"
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


def _site_roles(bound: list[Bound]) -> dict[Any, set[str]]:
    roles: dict[Any, set[str]] = {}
    for b in bound:
        roles.setdefault(b.site, set()).add(b.role)
    return roles


def _validation(passing: list[Candidate], bound: dict[str, list[Bound]], project: JavaProject, side: Any,
                runs: _Runs, options: BuildOptions, progress: Progress, workers: int, tmp: Path,
                javac: JavacPool) -> None:
    """Positive and negative workspaces, one compiled glue per distinct (kind, step methods)."""
    groups: dict[tuple[str, frozenset[Any]], list[Candidate]] = {}
    for cand in passing:
        sites = frozenset(b.site for b in bound[cand.instance_id])
        for kind in ("positive", "negative"):
            groups.setdefault((kind, sites), []).append(cand)
    total = sum(len(c.requirement.run_lines) * options.runs for cands in groups.values() for c in cands)
    progress.stage(f"positive/negative validation ({len(groups)} compiled workspaces)", total)

    def one(n: int, kind: str, sites: frozenset[Any], cands: list[Candidate]) -> None:
        files = side.files_keeping(sites) if kind == "positive" else side.files_without(sites)
        variant = compile_variant(project, files, tmp / "variants" / f"{kind}-{n}", javac)
        if not variant.compile.ok:
            failure = ("build_failed",
                       f"the {kind} workspace does not compile: {_first_line(variant.compile.output)[:300]}")
            for cand in cands:
                for _ in range(options.runs):
                    if kind == "positive":
                        cand.positive.append(False)
                        cand.positive_failure = cand.positive_failure or failure
                    else:
                        cand.negative.append(False)
                        cand.negative_initialized = False
                        cand.negative_failure = cand.negative_failure or failure
                progress.advance(len(cand.requirement.run_lines) * options.runs)
            return
        suite = project.suite(variant.classes)
        for cand in cands:
            for _ in range(options.runs):
                rows = [runs.run(suite, cand.requirement.feature_file, line)[0] for line in cand.requirement.run_lines]
                ok = all(r.passed for r in rows)
                if kind == "positive":
                    cand.positive.append(ok)
                    if not ok and cand.positive_failure is None:
                        cand.positive_failure = _failure(next(r for r in rows if not r.passed))
                else:
                    cand.negative.append(ok)
                    broken = [r for r in rows if r.timed_out or not r.report.written]
                    if broken:
                        cand.negative_initialized = False
                        cand.negative_failure = cand.negative_failure or _failure(broken[0])
        shutil.rmtree(tmp / "variants" / f"{kind}-{n}", ignore_errors=True)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for future in [pool.submit(one, n, kind, sites, cands)
                       for n, ((kind, sites), cands) in enumerate(groups.items())]:
            future.result()


# --------------------------------------------------------------------------- analysis
def _analyse(project: str, source: ProjectSource, validated: list[Candidate], bound: dict[str, list[Bound]],
             side: Any, work: Path, options: BuildOptions, calls: dict[str, Any],
             covered: dict[str, dict[str, set[int]]], load_time: set[str]) -> tuple[list[Instance], dict[str, GoldTest]]:
    def keys(cand: Candidate, roles: set[str]) -> frozenset[str]:
        return frozenset(b.site.key for b in bound[cand.instance_id] if b.role in roles)

    relations = compute_relations([RelationInput(id=c.instance_id, given_when=keys(c, {"given", "when"}),
                                                 when=keys(c, {"when"}), all_definitions=keys(c, set(ROLES)))
                                   for c in validated])
    frequency = Counter(key for c in calls.values() for key in {d.key for d in c.ran})
    shared = {k for k, n in frequency.items() if n > options.shared_threshold * max(1, len(validated))}
    rule = (f"target interfaces (public production methods and constructors the When/Then step methods call and "
            f"JaCoCo shows ran) + production code the scenario's run executed, minus code more than "
            f"{options.shared_threshold:.0%} of instances execute, minus code that runs while the suite loads; the "
            f"test implementation is the scenario's annotated step methods and the helpers they reach")
    digests: dict[str, str] = {}

    def sha256(rel: str) -> str:
        if rel not in digests:
            digests[rel] = hashlib.sha256((work / rel).read_bytes()).hexdigest()
        return digests[rel]

    instances: list[Instance] = []
    gold: dict[str, GoldTest] = {}
    for cand in validated:
        steps = bound[cand.instance_id]
        sites = sorted({b.site for b in steps}, key=lambda s: (s.file, s.line))
        closure = side.closure(sites)
        spans: dict[str, int] = Counter()
        for site in sites:
            spans[site.file] += site.end_line - site.line + 1
        for decl in closure.functions:
            spans[decl.file] += decl.end_line - decl.line + 1
        site_files = {s.file for s in sites}
        closure_files = [ClosureFile(path=f, role="step_definitions" if f in site_files else "helper",
                                     sha256=sha256(f), lines=spans.get(f, 0)) for f in closure.files]
        bindings = [StepBinding(step_line=b.step.line if b.step else 0, step_text=b.step.text if b.step else "",
                                step_type=b.step.type if b.step else b.role,  # type: ignore[arg-type]
                                role=b.role,  # type: ignore[arg-type]
                                background=bool(b.step and b.step.background), depth=0,
                                binding=StepDefRef(file=b.site.file, line=b.site.line, qualname=b.site.qualname),
                                scenario_line=b.row_line)
                    for b in steps]
        scenario = calls[cand.instance_id]
        instances.append(Instance(
            id=cand.instance_id, project=project, requirement=cand.requirement,
            target_interfaces=interface_groups(scenario.targets), test_level=TestLevel.component,
            depends_on=relations.depends_on.get(cand.instance_id, []),
            variant_of=relations.variant_of.get(cand.instance_id, []), group=relations.group_of[cand.instance_id],
            view=ViewSpec(target_hidden=[d.body_span() for d in hidden_declarations(scenario, shared, load_time)],
                          hidden_rule=rule, all_hidden_scope=list(source.production))))
        gold[cand.instance_id] = GoldTest(
            instance_id=cand.instance_id, closure=closure_files,
            step_definitions=[StepDefRef(file=s.file, line=s.line, qualname=s.qualname) for s in sites],
            bindings=bindings, api_calls=scenario.api_keys, target_calls=scenario.target_keys,
            executed_when_then=sorted({d.key for d in scenario.ran}),
            covered_lines={f: sorted(lines) for f, lines in sorted(covered[cand.instance_id].items()) if lines},
            data_files=[],
            validation=ValidationRecord(isolation_runs=cand.isolation, positive_runs=cand.positive,
                                        negative_runs=cand.negative, negative_initialized=cand.negative_initialized),
            test_level_evidence=["cucumber-jvm: the test level is not classified yet"],
            runtime_seconds=round(cand.runtime / max(1, len(cand.isolation)), 4))
    instances.sort(key=lambda i: id_order(i.id))
    return instances, gold


__all__ = ["build_project"]
