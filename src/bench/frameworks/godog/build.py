"""``req2test build`` for a godog project. The stages and exclusion reasons are cucumber-js's, at
registration granularity:

- **prepare**: a copy of the tree in scratch, its modules downloaded into the shared cache, the
  suite's test binary compiled once with coverage of the production packages, its step
  definitions listed (``--godog.definitions``), and one process that selects no scenario (a tag
  none has) whose coverage profile is what loading the suite runs;
- **isolation runs**: each selected scenario ``runs`` times, every Examples row in a process of
  its own (``runner.run_scenario``); the first run of each writes a coverage profile;
- **bindings**: each reported step is bound as godog binds it, to the *first* registered
  pattern that matches (``definitions.bind``), then to its ``X.Step(...)`` statement
  (``testside.site_for_pattern``); godog's own ``match.location`` must agree;
- **validation**: the scenario passes with only its registrations kept (positive:
  ``files_keeping``) and fails with them removed (negative: ``files_without``), every line of
  the test package in place. Each workspace is its own test binary: one ``go test -c`` per
  distinct set of registrations and kind (``-trimpath``: only the changed package recompiles),
  run from the work tree's package directory (the binary holds all the code; the directory
  gives the fixtures);
- **analysis**: API calls and target interfaces from the handlers' calls that the coverage
  profile shows ran, the target-hidden map, relations; the gold's closure is the
  registrations plus the handlers and helpers they reach;
- **mutants** (``mutation``): every mutant compiled once as mutant schemata, kills per
  instance, the empty test's infrastructure kills, the then-stripped test's
  assertion-dependent subset; **fresh_check**: a sample replayed as plain rebuilds.
"""

from __future__ import annotations

import itertools
import re
import shutil
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
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
from bench.builder.stepdef_analysis import Bound, analyse, site_roles
from bench.frameworks.call_reader import HandlerSpan
from bench.frameworks.godog.cucumber_json import StepResult
from bench.frameworks.godog.declarations import CallReader, GoDeclaration, GoProductionDeclarations
from bench.frameworks.godog.definitions import StepDefinition, bind
from bench.frameworks.godog.framework import GodogFramework
from bench.frameworks.godog.interfaces import ScenarioCalls, interface_groups, scenario_calls
from bench.frameworks.godog.layout import GodogLayout, pattern_matches, suite_sites
from bench.frameworks.godog.runner import GodogRun, list_definitions, run_loading, run_scenario
from bench.frameworks.godog.settings import GODOG_MODULE, GodogSettingsError, required_godog
from bench.frameworks.godog.suites import GoSuite
from bench.frameworks.godog.testside import RegistrationSite, TestSideGo
from bench.frameworks.godog.toolchain import (
    GoToolchain,
    build_test_binary,
    compile_error,
    download_modules,
    first_line,
    module_path,
)
from bench.frameworks.trees import copy_tree, link_tree
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


def build_project(framework: GodogFramework, source: ProjectSource, out_dir: Path, options: BuildOptions,
                  progress: Progress, timer: StageTimer, tmp: Path) -> DatasetCard:
    project = options.name or source.name
    if options.isolation == "bwrap":
        raise BuildError("godog: the builder's runs are plain processes (the ground truth is the project's own "
                         "code); build with --isolation none (or auto): evaluation runs in bubblewrap")
    try:
        resolve_mode(options.isolation)
    except IsolationError as exc:
        raise BuildError(str(exc)) from exc
    isolation = "none"  # godog's build runs are plain processes (recorded as such in the card)
    workers = max(1, options.workers)

    with timer("prepare"):
        try:
            toolchain = GoToolchain.find()
            GodogLayout.of(source.root, source.features_dir)  # a project without a suite fails before the copy
        except (RuntimeError, GodogSettingsError) as exc:
            raise BuildError(str(exc)) from exc
        if required_godog(source.root) is None:
            raise BuildError(f"{source.root / 'go.mod'} does not require {GODOG_MODULE}")
        framework.note_project(source.root)
        work = copy_tree(source.root, tmp / "work")
        layout = GodogLayout.of(work, source.features_dir)
        settings = layout.settings
        progress.log("go mod download")
        downloaded = download_modules(work, toolchain)
        if not downloaded.ok:
            raise BuildError(f"go mod download failed: {first_line(downloaded.output)}")
        declarations = GoProductionDeclarations(work, list(source.production))
        module = module_path(work)
    with timer("parse"):
        candidates, exclusions, warnings, features_total, scenarios_total = collect_candidates(
            work, source, project, framework, options)
        suite_of: dict[str, GoSuite] = {}
        kept: list[Candidate] = []
        for cand in candidates:
            req = cand.requirement
            suite = layout.suite_of(req.feature_file, req.run_lines)
            if suite is None:
                exclusions.append(_no_suite(layout, cand))
                continue
            suite_of[cand.instance_id] = suite
            kept.append(cand)
            others = layout.also_run_by(req.feature_file, req.run_lines[0])
            if others:
                warnings.append(f"{req.feature_file}:{req.scenario_line} is also run by {', '.join(others)}: "
                                f"its instance is {suite.key}'s")
        candidates = sampled(kept, exclusions, options)
        # a suite none of whose scenarios was sampled is neither compiled nor loaded
        suite_of = {c.instance_id: suite_of[c.instance_id] for c in candidates}
        for suite, why in layout.skipped:
            warnings.append(f"godog suite {suite.key} not built: {why}")
    if not candidates:
        raise BuildError(f"{source.root / source.features_dir} has no runnable scenarios")

    binaries: dict[tuple[str, tuple[str, ...]], Path] = {}
    definitions: dict[str, list[StepDefinition]] = {}
    load_lines: dict[str, dict[str, set[int]]] = {}  # suite key -> what loading it covers
    load_time: set[str] = set()
    with timer("prepare"):
        for key in sorted({s.binary_key for s in suite_of.values()}):
            package, tags = key
            binary = tmp / "bin" / f"cover-{len(binaries)}.test"
            tag_note = f" (-tags {','.join(tags)})" if tags else ""
            progress.log(f"compiling ./{package}'s test binary{tag_note} with coverage of "
                         f"{', '.join(source.production)}")
            built = build_test_binary(work, package, binary, toolchain, cover=list(source.production), tags=tags)
            if not built.ok:
                if layout.flag_driven:
                    raise BuildError(f"the godog suite in ./{package} does not compile: {compile_error(built.output)}")
                for cand in [c for c in candidates if suite_of[c.instance_id].binary_key == key]:
                    exclusions.append(Exclusion(id=cand.instance_id, reason="build_failed",
                                                detail=f"./{package}{tag_note} does not compile: "
                                                       f"{compile_error(built.output)}"))
                    candidates.remove(cand)
                continue
            binaries[key] = binary
        for suite in sorted({s for s in suite_of.values() if s.binary_key in binaries}, key=lambda s: s.key):
            binary = binaries[suite.binary_key]
            if suite.flag_driven:
                try:
                    definitions[suite.key] = list_definitions(binary, work, suite.package)
                except (RuntimeError, OSError) as exc:
                    raise BuildError(f"the godog suite fails to initialize: {exc}") from exc
                if not layout.side(suite.package).sites():
                    raise BuildError(f"./{suite.package} registers no step with a literal pattern "
                                     f"(X.Step(`...`, handler))")
            # what loading the suite runs (package initialisation, TestMain, the suite
            # initializer): a process that selects no scenario; a view that hid it would break loading
            first = next(c for c in candidates if suite_of[c.instance_id] == suite).requirement
            loading = run_loading(binary, work, suite, first.feature_file, first.scenario_line,
                                  tmp / "out" / f"load-{len(load_lines)}", timeout=options.timeout)
            if loading.coverage is None:
                raise BuildError(f"the godog suite {suite.key} fails to load ({loading.coverage_problem}): "
                                 f"{first_line(loading.output[-600:])}")
            lines_, _ = loading.coverage.lines(module, source.production)
            load_lines[suite.key] = lines_
            load_time |= {d.key for d in declarations.ran(lines_)}
    if not candidates:
        raise BuildError(f"no test package of {source.root} compiles (see the exclusions)")

    numbers = itertools.count()

    def run(test_binary: Path, cand: Candidate, line: int, coverage: bool = False) -> GodogRun:
        out = tmp / "out" / f"run-{next(numbers)}"
        suite = suite_of[cand.instance_id]
        try:
            return run_scenario(test_binary, work, suite.package, cand.requirement.feature_file, line, out,
                                tags=list(settings.tags), coverage=coverage, timeout=options.timeout,
                                plan=layout.plan(suite), memory_limit=None)
        finally:
            shutil.rmtree(out, ignore_errors=True)
            progress.advance()

    traced: dict[str, list[GodogRun]] = {}
    memo = memo_for(out_dir, source.sha256, options.timeout)  # a resumed build replays these runs
    with timer("isolation_runs"):
        jobs = [(cand, k, line) for cand in candidates for k in range(options.runs)
                for line in cand.requirement.run_lines]
        progress.stage("scenarios in isolation (one process per scenario or Examples row)", len(jobs))

        def isolated(job: tuple[Candidate, int, int]) -> GodogRun:
            cand, k, line = job
            binary = binaries[suite_of[cand.instance_id].binary_key]
            return memo.run(lambda: run(binary, cand, line, coverage=k == 0), "isolation", cand.instance_id, line, k,
                            on_reuse=progress.advance)

        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(isolated, jobs))
        by_run: dict[tuple[str, int], list[GodogRun]] = {}
        for (cand, k, _line), result in zip(jobs, results):
            by_run.setdefault((cand.instance_id, k), []).append(result)
            cand.runtime += result.elapsed
        for cand in candidates:
            for k in range(options.runs):
                rows = by_run[(cand.instance_id, k)]
                cand.isolation.append(all(r.passed for r in rows))
                if k == 0:
                    traced[cand.instance_id] = rows
                if not cand.isolation[-1] and cand.failure is None:
                    cand.failure = _failure(next(r for r in rows if not r.passed))

    bound: dict[str, list[Bound]] = {}
    shadowed = 0

    def bind_candidate(cand: Candidate) -> str:
        nonlocal shadowed
        suite = suite_of[cand.instance_id]
        side = layout.side(suite.package)
        resolve = _flag_resolver(definitions[suite.key], side) if suite.flag_driven else _static_resolver(suite, side)
        found, problem, shadows = _bindings(cand, traced[cand.instance_id], resolve)
        shadowed += shadows
        if not problem:
            bound[cand.instance_id] = found
        return problem

    passing = bound_after_isolation(candidates, exclusions, bind_candidate)

    with timer("validation_runs"):
        _validation(passing, bound, layout, suite_of, work, toolchain, options, progress, workers, tmp, run, memo)
        if memo.reused:
            progress.log(f"resumed {memo.reused} isolation/validation runs from the checkpoint in {out_dir}")
    validated = validation_verdicts(passing, exclusions, "its step registrations alone", "its step registrations")

    with timer("analysis"):
        reader = CallReader(work, declarations)
        covered: dict[str, dict[str, set[int]]] = {}
        calls: dict[str, ScenarioCalls[GoDeclaration]] = {}
        # each traced row's covered production lines (None: no profile): the instance's lines,
        # and the rows a mutant can change (the mutant stage's row selection)
        row_coverage: dict[str, dict[int, dict[str, set[int]] | None]] = {}
        for cand in validated:
            side = layout.side(suite_of[cand.instance_id].package)
            row_coverage[cand.instance_id] = {
                result.line: result.coverage.lines(module, source.production)[0] if result.coverage is not None else None
                for result in traced[cand.instance_id]}
            lines: dict[str, set[int]] = {}
            for hits in row_coverage[cand.instance_id].values():
                for file, hit in (hits or {}).items():
                    lines.setdefault(file, set()).update(hit)
            spans: list[tuple[HandlerSpan, str]] = []
            for site, roles in site_roles(bound[cand.instance_id]).items():
                closure = side.closure([site])
                for decl in (*closure.functions, *closure.literals):
                    spans += [(HandlerSpan(decl.file, decl.line, decl.end_line), role) for role in sorted(roles)]
            calls[cand.instance_id] = scenario_calls(declarations.ran(lines), reader, spans)
            loaded = load_lines[suite_of[cand.instance_id].key]
            covered[cand.instance_id] = {f: hit - set(loaded.get(f, ())) for f, hit in lines.items()}
        instances, gold = _analyse(project, source, validated, bound, layout, suite_of, work, options, calls,
                                   covered, load_time)
        if any(r.coverage is None for rows in traced.values() for r in rows if r.passed):
            warnings.append("godog: a traced run wrote no coverage profile; its instance's covered lines and "
                            "API calls are incomplete")

    mutants: list[Mutant] = []
    mutation: dict[str, Any] = {}
    if options.mutants and instances:
        from bench.frameworks.godog.mutation import KILL_RULE, fresh_check, run_mutation_stage

        with timer("mutants"):
            try:
                mutants, gold, mutation = run_mutation_stage(
                    framework, work, list(source.production), layout, list(settings.tags),
                    {i.id: suite_of[i.id] for i in instances}, instances, gold, row_coverage, toolchain,
                    options.timeout, options.mutant_workers or workers, progress, tmp,
                    checkpoint_for(out_dir, source.sha256, KILL_RULE))
            except RuntimeError as exc:
                raise BuildError(str(exc)) from exc
        with timer("fresh_check"):
            mutation["fresh_check"] = fresh_check(framework, work, instances, gold, {m.id: m for m in mutants},
                                                  options.timeout, workers, progress)
    with timer("write"):
        return write_dataset(out_dir, project, source, instances, gold, exclusions, timer, options, features_total,
                             scenarios_total, shadowed, warnings, sorted(load_time), mutants, mutation, isolation)


def _no_suite(layout: GodogLayout, cand: Candidate) -> Exclusion:
    """Why no suite runs a scenario: a skipped suite's, or no suite's tags or paths."""
    feature = cand.requirement.feature_file
    skipped = layout.skipped_naming(feature)
    if skipped:
        suite, why = skipped[0]
        return Exclusion(id=cand.instance_id, reason="suite_not_built", detail=f"{suite.key}: {why}")
    naming = layout.suites_naming(feature)
    if naming:
        return Exclusion(id=cand.instance_id, reason="not_selected_by_tags",
                         detail="; ".join(f"{s.key} runs {s.godog_tags or 'every scenario'}" for s in naming)
                         + " of " + feature)
    return Exclusion(id=cand.instance_id, reason="no_suite", detail=f"no godog suite's Options.Paths names {feature}")


# --------------------------------------------------------------------------- runs
def _failure(run: GodogRun) -> tuple[str, str]:
    """Why a run did not pass, in the reasons behave's pipeline uses."""
    where = f"line {run.line}"
    if run.timed_out:
        return "timeout", f"{where}: the run exceeded its timeout"
    if not run.report.written:
        return "load_error", f"{where}: {run.report.problem} (exit {run.exit_code}): {first_line(run.output[-600:])}"
    if not run.report.scenarios:
        return "not_run", f"{where}: godog ran no scenario at this line"
    scenario = run.scenario
    if scenario is None or len(run.report.scenarios) != 1:
        return "not_run", f"{where}: godog ran {len(run.report.scenarios)} scenarios, not the selected one"
    for step in scenario.steps:
        if step.status in ("undefined", "pending"):
            return "step_unbound", f"{step.status}: {step.text}"
        if step.status == "failed":
            return "failed", f"{where}: {step.text}: {first_line(step.error)[:200]}"
    if not scenario.steps:
        return "failed", f"{where}: godog reported no step"
    return "failed", f"{where}: exit {run.exit_code}: {first_line(run.output[-300:])[:200]}"


Resolved = tuple[RegistrationSite | None, str, bool]  # the step's registration, or why not; shadowed


def _bindings(cand: Candidate, rows: list[GodogRun],
              resolve: Callable[[StepResult], Resolved]) -> tuple[list[Bound], str, int]:
    """Every reported step of every row bound to its registration statement by ``resolve``, or
    why not; and how many steps more than one pattern matches (godog takes the first, silently)."""
    effective = cand.requirement.effective_steps
    by_line = {s.line: s for s in effective}
    found: list[Bound] = []
    shadows = 0
    for run in rows:
        scenario = run.scenario
        if scenario is None:
            return [], f"line {run.line}: no result to bind", shadows
        for index, step in enumerate(scenario.steps):
            site, problem, shadowed = resolve(step)
            shadows += shadowed
            if site is None:
                return [], problem, shadows
            effective_step = by_line.get(step.line) or (effective[index] if index < len(effective) else None)
            role = effective_step.type if effective_step is not None else (site.kind or "given")
            found.append(Bound(run.line, effective_step, site, role))
    return found, "", shadows


def _flag_resolver(definitions: list[StepDefinition], side: TestSideGo) -> Callable[[StepResult], Resolved]:
    """The flag-driven suite: godog's definitions list, first match, checked against the
    handler location godog reported."""

    def resolve(step: StepResult) -> Resolved:
        definition = bind(step.text, definitions)
        if definition is None:
            return None, f"no registered pattern matches: {step.text}", False
        shadowed = any(_matches(d, step.text) for d in definitions[definition.index + 1:])
        site = side.site_for_pattern(definition.pattern, step.match)
        if site is None:
            return None, (f"no literal X.Step(pattern, handler) registers {definition.pattern!r} "
                          f"({definition.location})"), shadowed
        if step.match is not None:
            at = side.decl_at(step.match)
            if at is None or at not in side.handlers(site):
                return None, (f"godog ran {step.location} for {step.text!r}, not the handler of "
                              f"{site.key} (first match {definition.pattern!r})"), shadowed
        return site, "", shadowed

    return resolve


def _static_resolver(suite: GoSuite, side: TestSideGo) -> Callable[[StepResult], Resolved]:
    """testing.T suites, where no definitions list can be asked for: the first of the suite's
    registrations whose pattern matches, checked against the registration line the suite's own
    output shows for every step it printed."""
    sites = suite_sites(suite, side)

    def resolve(step: StepResult) -> Resolved:
        matching = [s for s in sites if pattern_matches(s.pattern, step.text)]
        if not matching:
            return None, f"no registered pattern of {suite.key} matches: {step.text}", False
        site = matching[0]
        if step.match is not None and (site.file.rsplit("/", 1)[-1], site.line) != (step.match.file,
                                                                                    step.match.line):
            return None, (f"godog ran the registration at {step.location} for {step.text!r}, not {site.key} "
                          f"(the first pattern that matches)"), len(matching) > 1
        return site, "", len(matching) > 1

    return resolve


def _matches(definition: StepDefinition, text: str) -> bool:
    try:
        return re.search(definition.pattern, text) is not None
    except re.error:
        return False


def _validation(passing: list[Candidate], bound: dict[str, list[Bound]], layout: GodogLayout,
                suite_of: dict[str, GoSuite], work: Path, toolchain: GoToolchain, options: BuildOptions,
                progress: Progress, workers: int, tmp: Path, run: Any, memo: RunMemo) -> None:
    """Positive and negative workspaces, one test binary per distinct (kind, registrations): the
    next binary compiles while the previous one's runs go on (one go build at a time), and a
    binary is deleted once its runs are read. A workspace whose every run ``memo`` holds (a
    resumed build) is not compiled again."""
    groups: dict[tuple[str, tuple[str, tuple[str, ...]], frozenset[RegistrationSite]], list[Candidate]] = {}
    for cand in passing:
        sites = frozenset(b.site for b in bound[cand.instance_id])
        for kind in ("positive", "negative"):
            groups.setdefault((kind, suite_of[cand.instance_id].binary_key, sites), []).append(cand)
    total = sum(len(c.requirement.run_lines) * options.runs for cands in groups.values() for c in cands)
    progress.stage(f"positive/negative validation ({len(groups)} test binaries)", total)
    started = time.perf_counter()
    build_seconds = 0.0

    def record(kind: str, cand: Candidate, rows: list[GodogRun]) -> None:
        broken = [r for r in rows if r.timed_out or r.exit_code not in (0, 1)] if kind == "negative" else []
        failed = broken or [r for r in rows if not r.passed]
        cand.record_validation(kind, not failed, _failure(failed[0]) if failed else None, broken=bool(broken))

    pending: list[tuple[Path, list[tuple[str, Candidate, list[Future[GodogRun]]]]]] = []

    def memoized(make: Callable[[], GodogRun], key: tuple[Any, ...]) -> GodogRun:
        return memo.run(make, *key, on_reuse=progress.advance)

    def drain(keep: int) -> None:
        while len(pending) > keep:
            test_binary, batches = pending.pop(0)
            for kind, cand, futures in batches:
                record(kind, cand, [f.result() for f in futures])
            test_binary.unlink(missing_ok=True)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for n, ((kind, (package, tags), sites), cands) in enumerate(groups.items()):
            keys = memo.workspace_keys((kind, package, ",".join(tags), sites_digest(sites)), cands, options.runs)
            if memo.replay_workspace(keys, cands, options.runs, partial(record, kind), progress.advance):
                continue
            side = layout.side(package)
            files = side.files_keeping(sites) if kind == "positive" else side.files_without(sites)
            tree = link_tree(work, tmp / "trees" / f"{kind}-{n}", files)
            test_binary = tmp / "bin" / f"{kind}-{n}.test"
            begun = time.perf_counter()
            built = build_test_binary(tree, package, test_binary, toolchain, tags=tags)
            build_seconds += time.perf_counter() - begun
            shutil.rmtree(tree, ignore_errors=True)
            if not built.ok:
                failure = ("build_failed", f"the {kind} workspace does not compile: {compile_error(built.output)}")
                for cand in cands:
                    for _ in range(options.runs):
                        cand.record_validation(kind, False, failure, broken=True)
                    progress.advance(len(cand.requirement.run_lines) * options.runs)
                continue
            batches = []
            for cand in cands:
                for r in range(options.runs):
                    batches.append((kind, cand, [
                        pool.submit(memoized, partial(run, test_binary, cand, line), keys[(cand.instance_id, r, line)])
                        for line in cand.requirement.run_lines]))
            pending.append((test_binary, batches))
            drain(keep=1)
        drain(keep=0)
    progress.log(f"validation: {len(groups)} test binaries, {build_seconds:.0f} s compiling, "
                 f"{time.perf_counter() - started:.0f} s in all")


# --------------------------------------------------------------------------- analysis
RULE = ("target interfaces (public production functions and methods the When/Then step handlers call and the "
        "coverage profile shows ran) + production code the scenario's run executed, minus code more than "
        "{share:.0%} of instances execute, minus code that runs while the suite loads; the test implementation "
        "is the scenario's Step registrations and the handlers and helpers they reach")


def _analyse(project: str, source: ProjectSource, validated: list[Candidate], bound: dict[str, list[Bound]],
             layout: GodogLayout, suite_of: dict[str, GoSuite], work: Path, options: BuildOptions,
             calls: dict[str, ScenarioCalls[GoDeclaration]],
             covered: dict[str, dict[str, set[int]]],
             load_time: set[str]) -> tuple[list[Instance], dict[str, GoldTest]]:
    return analyse(project, source, validated, bound,
                   lambda cand, sites: layout.side(suite_of[cand.instance_id].package).closure(sites), work, options,
                   calls, covered, load_time, interface_groups, RULE.format(share=options.shared_threshold),
                   "godog: the test level is not classified yet")


__all__ = ["build_project"]
