"""``req2test build``: a project → a dataset directory, built by its framework's ``Builder``;
and the warm-worker pipeline (stages II–V: isolation runs, closure, validation, analysis,
mutants) that behave's builder runs."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import __version__, stopping
from bench.builder.analysis import TracedScenario, analyse_calls, hidden_functions
from bench.builder.closure import TestSide, in_scope, norm
from bench.builder.diagnose import SPECIFIC, fresh_first_error
from bench.builder.mutation_stage import run_mutation_stage
from bench.builder.relations import RelationInput, compute_relations
from bench.builder.schemata_stage import CHECKPOINT_DIR
from bench.builder.stats import table2
from bench.builder.workspaces import WorkspaceLayout, WorkspacePool, materialize
from bench.cores import cores
from bench.errors import UserError
from bench.frameworks.messages import RunRequest, RunWorkspace
from bench.frameworks.outcomes import classify_run
from bench.frameworks.protocol import Framework
from bench.frameworks.registry import get_framework
from bench.frameworks.worker_pool import WorkerError, WorkerPool, WorkerSpec
from bench.gherkin_reader import FeatureFile, read_feature_file
from bench.isolation import IsolationError, resolve_mode
from bench.model import (
    DatasetCard,
    Exclusion,
    GoldTest,
    Instance,
    ProjectRecord,
    Requirement,
    ValidationRecord,
    ViewSpec,
)
from bench.mutation.executor import write_manifest
from bench.production_index import ProductionIndex
from bench.progress import NullProgress, Progress
from bench.project import (
    IGNORED_NAMES,
    ProjectSource,
    SourceError,
    missing_dependencies,
    resolve_source,
    with_own_environment,
)

# Scenarios tagged like this need a browser or a live service (docs/building.md#what-build-does).
LIVE_TAGS = frozenset({"browser", "selenium", "webdriver", "javascript", "js", "live", "network",
                       "online", "external", "manual", "requires_network", "slow_network"})


class BuildError(UserError):
    """A user-facing build failure; the message is one line."""


@dataclass
class BuildOptions:
    runs: int = 3
    workers: int = field(default_factory=cores)
    timeout: float = 120.0
    shared_threshold: float = 0.5
    live_tags: frozenset[str] = LIVE_TAGS
    install_deps: bool = False
    force: bool = False
    mutants: bool = True
    # processes at a time in the mutant stage of godog and cucumber-jvm (0: ``workers``): a suite
    # whose runs mostly wait (httptest servers, a TUI, timers: coddy-agent) keeps few cores busy
    mutant_workers: int = 0
    # the assertion-dependent subset: infer kills whose failure came before any Then step
    # definition ran (False: run the stripped test against every kill; a cross-check)
    infer_stripped: bool = True
    isolation: str = "auto"  # auto | bwrap | none (see bench.isolation)
    name: str | None = None
    cache_dir: Path | None = None
    # a stated slice of a project too costly to build whole (Kapua: 12-15 s of CPU per scenario
    # JVM): this many runnable scenarios drawn with ``sample_seed``, the others ``not_in_sample``
    sample: int | None = None
    sample_seed: int = 0


@dataclass
class Candidate:
    instance_id: str
    requirement: Requirement
    traced: TracedScenario | None = None
    isolation: list[bool] = field(default_factory=list)
    positive: list[bool] = field(default_factory=list)
    negative: list[bool] = field(default_factory=list)
    negative_initialized: bool = True
    closure_code: set[str] = field(default_factory=set)
    data_files: set[str] = field(default_factory=set)
    runtime: float = 0.0
    failure: tuple[str, str] | None = None  # (reason, detail) of the isolation runs
    # the first failing validation run of each kind: (reason, detail), and the positive workspace
    positive_failure: tuple[str, str] | None = None
    negative_failure: tuple[str, str] | None = None
    positive_workspace: RunWorkspace | None = None

    def record_validation(self, kind: str, passed: bool, failure: tuple[str, str] | None = None,
                          broken: bool = False) -> None:
        """One run of the ``kind`` ("positive" or "negative") workspace. ``failure``: why it did
        not pass (the first one is kept); ``broken``: a negative run whose suite did not even
        come up (did not build, load or end), which says nothing about the step definitions."""
        if kind == "positive":
            self.positive.append(passed)
            if not passed and self.positive_failure is None:
                self.positive_failure = failure
            return
        self.negative.append(passed)
        if broken:
            self.negative_initialized = False
            if self.negative_failure is None:
                self.negative_failure = failure


class StageTimer:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = round(self.seconds.get(name, 0.0) + time.perf_counter() - start, 3)


def build_dataset(source_arg: str, out_dir: Path, options: BuildOptions | None = None,
                  progress: Progress | None = None) -> DatasetCard:
    options = options or BuildOptions()
    progress = progress or NullProgress()
    stopping.begin_run()
    timer = StageTimer()
    out_dir = Path(out_dir)
    _check_output_dir(out_dir, options.force)
    with timer("resolve"):
        try:
            source = resolve_source(source_arg, options.cache_dir)
        except SourceError as exc:
            raise BuildError(str(exc)) from exc
        missing = missing_dependencies(source)
        if missing and options.install_deps:
            try:
                source = with_own_environment(source, missing, log=progress.log)
            except SourceError as exc:
                raise BuildError(str(exc)) from exc
        elif missing:
            raise BuildError(f"{source.name} needs {', '.join(missing)}: install them, or pass --install-deps to "
                             "give the project an environment of its own (req2test's is never changed)")
    tmp = Path(tempfile.mkdtemp(prefix="req2test-build-"))
    try:
        return _build(source, out_dir, options, progress, timer, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _check_output_dir(out_dir: Path, force: bool) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise BuildError(f"{out_dir} exists and is not a directory")
    # a killed build's checkpoint (bench.builder.schemata_stage) is what the same command resumes from
    if out_dir.is_dir() and any(p.name != CHECKPOINT_DIR for p in out_dir.iterdir()):
        card = out_dir / "dataset.json"
        if not force:
            what = "another dataset" if card.is_file() else "other files"
            raise BuildError(f"{out_dir} already holds {what}; choose a new directory or pass --force to replace it")
        if not card.is_file():
            raise BuildError(f"{out_dir} holds files that are not a dataset; refusing to replace them even with --force")


def _copy_tree(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, symlinks=True,
                    ignore=shutil.ignore_patterns(*IGNORED_NAMES, "*.pyc"))


def _build(source: ProjectSource, out_dir: Path, options: BuildOptions, progress: Progress,
           timer: StageTimer, tmp: Path) -> DatasetCard:
    return get_framework(source.framework).builder().build(source, out_dir, options, progress, timer, tmp)


def build_with_warm_workers(framework: Framework, worker_module: str, source: ProjectSource, out_dir: Path,
                            options: BuildOptions, progress: Progress, timer: StageTimer,
                            tmp: Path) -> DatasetCard:
    """The warm-worker pipeline: stages II–V run by ``worker_module`` (``python -m``), a worker
    that speaks the build requests of ``bench.frameworks.messages`` in the project's Python
    (behave's ``Builder`` is this; another Python framework with such a worker can reuse it)."""
    project = options.name or source.name
    with timer("prepare"):
        roots = [tmp / f"slot{i}" for i in range(max(1, options.workers))]
        for root in roots:
            _copy_tree(source.root, root)
        work = roots[0]
        test_side = TestSide.scan(work, source.features_dir, python_path=source.python_path,
                                  production=source.production)
        layout = WorkspaceLayout.of(test_side)
        index = ProductionIndex(work, source.production)

    with timer("parse"):
        candidates, exclusions, warnings, features_total, scenarios_total = collect_candidates(
            work, source, project, framework, options)
        candidates = sampled(candidates, exclusions, options)
    if not candidates:
        raise BuildError(f"{source.root / source.features_dir} has no runnable scenarios")

    packages = sorted({Path(p).stem if p.endswith(".py") else Path(p).name for p in source.production})
    try:
        isolation = resolve_mode(options.isolation)
    except IsolationError as exc:
        raise BuildError(str(exc)) from exc
    spec = WorkerSpec(root=work, features_dir=source.features_dir, python_path=source.python_path, python=source.python,
                      production=source.production, import_packages=packages, preload=True,
                      isolation=isolation, framework=framework.name, worker_module=worker_module)
    try:
        with WorkerPool(spec, roots) as pool:
            init = pool.init_reply
            if init.get("load_error"):
                raise BuildError(f"the project's {framework.name} suite fails to initialize: "
                                 + init["load_error"].strip().splitlines()[0])
            broken = [p for p in packages if p in init.get("import_errors", {})]
            if broken:
                raise BuildError(f"the production package {broken[0]} does not import: "
                                 f"{init['import_errors'][broken[0]]}")
            import_time = {index.lookup(f, ln, q).key for f, ln, q in init.get("import_time", [])  # type: ignore[union-attr]
                           if index.lookup(f, ln, q) is not None}
            static = pool.call_one({"op": "static_bindings"}).get("scenarios", {})
            shadowed = sum(1 for steps in static.values() for s in steps if len(s["matches"]) > 1)
            with timer("isolation_runs"):
                _isolation_runs(pool, candidates, options, progress)
    except WorkerError as exc:
        raise BuildError(f"the {framework.name} worker failed: {exc}") from exc
    _explain_isolation_failures(candidates, source, work, options, spec.isolation)

    passing: list[Candidate] = []
    for cand in candidates:
        if cand.failure is not None:
            exclusions.append(Exclusion(id=cand.instance_id, reason=cand.failure[0], detail=cand.failure[1]))
        else:
            passing.append(cand)

    with timer("closure"):
        for cand in passing:
            assert cand.traced is not None
            cand.closure_code = test_side.closure_code(cand.traced.step_files, cand.traced.test_files)
            cand.data_files = {p for p in cand.traced.opened
                               if not p.endswith((".py", ".pyc", ".feature")) and (work / p).is_file()
                               and not in_scope(p, test_side.production)}

    with timer("validation_runs"):
        try:
            with WorkspacePool(replace(spec, preload=False), roots, layout) as pool:
                _validation_runs(pool, passing, test_side, options, progress)
        except WorkerError as exc:
            raise BuildError(f"the {framework.name} worker failed during validation: {exc}") from exc
        _explain_validation_failures(passing, source, work, layout, options, spec.isolation)

    validated = validation_verdicts(passing, exclusions, "closure alone", "its test implementation")
    hint = _base_dir_hint(test_side)
    if hint:
        exclusions[:] = [e.model_copy(update={"detail": f"{e.detail}; {hint}"})
                         if e.reason == "validation_negative_passed" else e for e in exclusions]

    with timer("analysis"):
        instances, gold = _analyse(project, source, validated, index, test_side, import_time, options)

    mutants: list = []
    mutation: dict[str, Any] = {}
    if options.mutants and instances:
        with timer("mutants"):
            try:
                mutants, gold, mutation = run_mutation_stage(
                    spec, roots, source.production, source.python_path, instances, gold,
                    set(test_side.infrastructure_py), options.timeout, progress,
                    infer_stripped=options.infer_stripped, layout=layout)
            except WorkerError as exc:
                raise BuildError(f"the {framework.name} worker failed during mutant execution: {exc}") from exc

    with timer("write"):
        card = write_dataset(out_dir, project, source, instances, gold, exclusions, timer, options,
                      features_total, scenarios_total, shadowed, warnings, sorted(import_time),
                      mutants, mutation, spec.isolation)
    return card


def collect_candidates(work: Path, source: ProjectSource, project: str, framework: Any,
                       options: BuildOptions) -> tuple[list[Candidate], list[Exclusion], list[str], int, int]:
    """Stage II: every scenario of the features tree, selected by the project's tags, with
    the ones that cannot be instances excluded (and why). Any framework."""
    exclusions: list[Exclusion] = []
    candidates: list[Candidate] = []
    warnings: list[str] = []
    selected_tags = {t.lower() for t in source.tags}
    feature_paths = sorted((work / source.features_dir).rglob("*.feature"))
    features_total = len(feature_paths)
    scenarios_total = 0
    for path in feature_paths:
        parsed: FeatureFile = read_feature_file(work, path)
        if parsed.problem:
            exclusions.append(Exclusion(id=f"{project}/{parsed.path}", reason=f"feature_{parsed.problem}",
                                        detail=parsed.detail))
            continue
        warnings += framework.parser_differences(work, parsed)
        for req in parsed.requirements:
            scenarios_total += 1
            instance_id = f"{project}/{req.feature_file}:{req.scenario_line}"
            tags = {t.lstrip("@").lower() for t in [*req.feature_tags, *req.scenario_tags]}
            if selected_tags and not tags & selected_tags and req.examples:
                req, tags = _rows_selected_by_examples_tags(req, tags, selected_tags)
            if selected_tags and not tags & selected_tags:
                # the project's own tag selection (as `behave --tags=@a,@b`): not its suite
                exclusions.append(Exclusion(id=instance_id, reason="not_selected_by_tags",
                                            detail="tags: " + (", ".join(sorted(tags)) or "none")))
            elif not req.steps:
                exclusions.append(Exclusion(id=instance_id, reason="scenario_no_steps"))
            elif tags & options.live_tags:
                exclusions.append(Exclusion(id=instance_id, reason="needs_browser_or_live_service",
                                            detail="tagged " + ", ".join(sorted(tags & options.live_tags))))
            else:
                candidates.append(Candidate(instance_id, req))
    return candidates, exclusions, warnings, features_total, scenarios_total


def sampled(candidates: list[Candidate], exclusions: list[Exclusion], options: BuildOptions) -> list[Candidate]:
    """``options.sample`` of the runnable candidates, drawn with ``options.sample_seed`` (the same
    draw for the same scenarios on any machine); the others are excluded as ``not_in_sample``, so
    the card says what the slice is a slice of. Every candidate when no sample is asked for."""
    if options.sample is None or options.sample >= len(candidates):
        return candidates
    ids = sorted(c.instance_id for c in candidates)
    chosen = set(random.Random(options.sample_seed).sample(ids, options.sample))
    detail = f"a random sample of {options.sample} of the {len(ids)} runnable scenarios (seed {options.sample_seed})"
    exclusions.extend(Exclusion(id=c.instance_id, reason="not_in_sample", detail=detail)
                      for c in candidates if c.instance_id not in chosen)
    return [c for c in candidates if c.instance_id in chosen]


def _rows_selected_by_examples_tags(req: Requirement, tags: set[str],
                                    selected: set[str]) -> tuple[Requirement, set[str]]:
    """An outline that the project's tags select only through some of its Examples tables
    (py-algorand-sdk's responses.feature: the feature says ``@unit``, each of its 22 tables a
    ``@unit.responses.*`` of its own): the runners run exactly the rows of those tables, so the
    instance keeps those tables alone (its Gherkin text stays as written). Unchanged when no
    table is selected."""
    chosen = [table for table in req.examples if {t.lstrip("@").lower() for t in table.tags} & selected]
    if not chosen:
        return req, tags
    return (req.model_copy(update={"examples": chosen}),
            tags | {t.lstrip("@").lower() for table in chosen for t in table.tags})


def mark_unstable(cand: Candidate) -> bool:
    """A candidate that failed some isolation runs and passed others is ``unstable`` (its first
    failure kept in the detail); True when it is."""
    if cand.failure is None or not any(cand.isolation):
        return False
    reason, detail = cand.failure
    summary = f"passed {sum(cand.isolation)}/{len(cand.isolation)} runs; first failure: {reason} {detail}"
    cand.failure = ("unstable", summary)
    return True


def bound_after_isolation(candidates: list[Candidate], exclusions: list[Exclusion],
                          bind: Callable[[Candidate], str]) -> list[Candidate]:
    """Stage II's verdict on the isolation runs, any framework whose runs are fresh processes:
    a candidate that passed some runs but not all is ``unstable``; one that passed them all is
    bound by ``bind`` (which records the bindings and returns why it cannot bind, or ""), an
    unbound one is ``step_unbound``; the rest are excluded with their first failure. Returns the
    candidates left for validation."""
    passing: list[Candidate] = []
    for cand in candidates:
        mark_unstable(cand)
        if cand.failure is None:
            problem = bind(cand)
            if problem:
                cand.failure = ("step_unbound", problem)
        if cand.failure is not None:
            exclusions.append(Exclusion(id=cand.instance_id, reason=cand.failure[0], detail=cand.failure[1]))
        else:
            passing.append(cand)
    return passing


def validation_verdicts(passing: list[Candidate], exclusions: list[Exclusion], alone: str,
                        implementation: str) -> list[Candidate]:
    """Stage III's rule, any framework: a candidate stays when its test implementation alone
    passes every positive run and the negative workspace initialises and never passes;
    otherwise it is excluded with the reason (``alone``/``implementation`` name the parts)."""
    validated: list[Candidate] = []
    for cand in passing:
        if not all(cand.positive):
            detail = f"{alone} passed {sum(cand.positive)}/{len(cand.positive)} runs"
            if cand.positive_failure is not None:
                detail += "; first failure: " + _failure_text(*cand.positive_failure)
            exclusions.append(Exclusion(id=cand.instance_id, reason="validation_positive_failed", detail=detail))
        elif not cand.negative_initialized:
            exclusions.append(Exclusion(id=cand.instance_id, reason="validation_negative_not_initialized",
                                        detail=_failure_text(*cand.negative_failure)
                                        if cand.negative_failure is not None else ""))
        elif any(cand.negative):
            exclusions.append(Exclusion(id=cand.instance_id, reason="validation_negative_passed",
                                        detail=f"the scenario passes without {implementation}"))
        else:
            validated.append(cand)
    return validated


def _isolation_runs(pool: WorkerPool, candidates: list[Candidate], options: BuildOptions,
                    progress: Progress) -> None:
    requests: list[RunRequest] = []
    owners: list[Candidate] = []
    for cand in candidates:
        for k in range(options.runs):
            requests.append({"op": "run", "feature": cand.requirement.feature_file,
                             "lines": cand.requirement.run_lines, "trace": k == 0,
                             "timeout": options.timeout})
            owners.append(cand)
    progress.stage("scenarios in isolation", len(requests))
    results = pool.map(requests, on_result=lambda i, r: progress.advance())
    for request, cand, result in zip(requests, owners, results):
        verdict = classify_run(result, len(cand.requirement.run_lines))
        cand.isolation.append(verdict.passed)
        cand.runtime += float(result.get("elapsed", 0.0))
        if request["trace"]:
            cand.traced = TracedScenario.from_result(result)
        if not verdict.passed and cand.failure is None:
            cand.failure = (verdict.reason or "failed", verdict.detail)
    for cand in candidates:
        if mark_unstable(cand):
            continue
        if cand.failure is None and cand.traced is not None and cand.traced.unbound_steps:
            cand.failure = ("step_unbound", cand.traced.unbound_steps[0])


def _workspace_key(keep: set[str]) -> str:
    return hashlib.sha256("\n".join(sorted(keep)).encode()).hexdigest()[:16]


def _validation_runs(pool: WorkerPool, passing: list[Candidate], test_side: TestSide,
                     options: BuildOptions, progress: Progress) -> None:
    infra = set(test_side.infrastructure_py)
    negative: RunWorkspace = {"key": "negative-" + _workspace_key(infra), "keep_py": sorted(infra)}
    requests: list[RunRequest] = []
    owners: list[tuple[str, Candidate]] = []  # which workspace a run used, for whom
    for cand in passing:
        keep = cand.closure_code | infra
        positive: RunWorkspace = {"key": "positive-" + _workspace_key(keep), "keep_py": sorted(keep)}
        cand.positive_workspace = positive
        for kind, workspace in (("positive", positive), ("negative", negative)):
            for _ in range(options.runs):
                requests.append({"op": "run", "feature": cand.requirement.feature_file,
                                 "lines": cand.requirement.run_lines, "trace": False,
                                 "timeout": options.timeout, "workspace": workspace})
                owners.append((kind, cand))
    progress.stage("positive/negative validation", len(requests))
    results = pool.map(requests, on_result=lambda i, r: progress.advance())
    for (kind, cand), result in zip(owners, results):
        verdict = classify_run(result, len(cand.requirement.run_lines))
        cand.record_validation(kind, verdict.passed, (verdict.reason or "failed", verdict.detail),
                               broken=result.get("exit") != "ok" or bool(result.get("load_error")))


# fresh behave processes that put a failing hook's message into an exclusion's detail (each
# costs a process start; a build where every scenario fails the same way needs only a few)
MAX_DIAGNOSES = 16


def _base_dir_hint(side: TestSide) -> str:
    """When behave's base directory lies above the features dir, its step modules and hooks
    are outside the test area: no scenario can be told from its test implementation."""
    features = norm(side.features_dir)
    if side.base_dir in ("", features):
        return ""
    base = side.base_dir
    return (f"behave loads this suite's steps and hooks from {base if base != '.' else 'the project root'}, "
            f"outside {features}/: set [tool.req2test] features = \"{base}\"")


def _failure_text(reason: str, detail: str) -> str:
    return f"{reason}: {detail}" if detail else reason


def _diagnose(jobs: list[tuple[Path, Candidate]], source: ProjectSource, work: Path, options: BuildOptions,
              isolation: str) -> list[str | None]:
    """The first error of a fresh behave run of each (tree, candidate), in order."""
    from concurrent.futures import ThreadPoolExecutor

    def one(job: tuple[Path, Candidate]) -> str | None:
        tree, cand = job
        return fresh_first_error(tree, cand.requirement.feature_file, cand.requirement.run_lines, source.python_path,
                                 python=source.python, isolation=isolation, writable=[work.parent],
                                 readonly=[work / p for p in source.production], timeout=min(options.timeout, 120.0))

    if not jobs:
        return []
    with ThreadPoolExecutor(max_workers=max(1, options.workers)) as executor:
        return list(executor.map(one, jobs))


def _explain_isolation_failures(candidates: list[Candidate], source: ProjectSource, work: Path,
                                options: BuildOptions, isolation: str) -> None:
    """A scenario that failed alone for a reason the worker cannot put in words (a hook):
    behave's own message, from a fresh run in the worker's tree."""
    vague = [c for c in candidates if c.failure is not None and c.failure[0] not in SPECIFIC
             and c.failure[0] not in ("unstable", "step_unbound")][:MAX_DIAGNOSES]
    for cand, error in zip(vague, _diagnose([(work, c) for c in vague], source, work, options, isolation)):
        if error and cand.failure is not None:
            cand.failure = (cand.failure[0], error)


def _explain_validation_failures(passing: list[Candidate], source: ProjectSource, work: Path,
                                 layout: WorkspaceLayout, options: BuildOptions, isolation: str) -> None:
    """The same for a failing positive run: a fresh run in its workspace (made in the first
    slot's place if another slot ran it)."""
    jobs: list[tuple[Path, Candidate]] = []
    for cand in passing:
        if cand.positive_failure is None or cand.positive_failure[0] in SPECIFIC or cand.positive_workspace is None:
            continue
        try:
            jobs.append((materialize(work, cand.positive_workspace, layout), cand))
        except OSError:
            continue
        if len(jobs) == MAX_DIAGNOSES:
            break
    for (_, cand), error in zip(jobs, _diagnose(jobs, source, work, options, isolation)):
        if error and cand.positive_failure is not None:
            cand.positive_failure = (cand.positive_failure[0], error)


def _analyse(project: str, source: ProjectSource, validated: list[Candidate], index: ProductionIndex,
             test_side: TestSide, import_time: set[str],
             options: BuildOptions) -> tuple[list[Instance], dict[str, GoldTest]]:
    calls = {}
    executed_keys: dict[str, set[str]] = {}
    for cand in validated:
        assert cand.traced is not None
        calls[cand.instance_id] = analyse_calls(cand.traced, index, source.python_path)
        executed_keys[cand.instance_id] = {info.key for key in cand.traced.executed_when_then
                                           if (info := index.lookup(*key)) is not None}
    # Shared infrastructure: code that the When/Then steps of most instances execute.
    frequency = Counter(k for keys in executed_keys.values() for k in keys)
    limit = options.shared_threshold * max(1, len(validated))
    shared = {k for k, n in frequency.items() if n > limit}

    relations = compute_relations([
        RelationInput(id=c.instance_id, given_when=frozenset(c.traced.given_when_definitions()),  # type: ignore[union-attr]
                      when=frozenset(c.traced.when_definitions()),  # type: ignore[union-attr]
                      all_definitions=c.traced.definition_keys())  # type: ignore[union-attr]
        for c in validated])

    rule = (f"target interfaces + production code their When/Then steps execute, minus code executed by "
            f"more than {options.shared_threshold:.0%} of instances' When/Then steps, minus bodies run at "
            f"import time; when that is empty, the same over the Given steps")
    instances: list[Instance] = []
    gold: dict[str, GoldTest] = {}
    for cand in validated:
        traced = cand.traced
        assert traced is not None
        analysis = calls[cand.instance_id]
        hidden = hidden_functions(analysis.target_functions, traced.executed_when_then, index, shared, import_time)
        if not hidden:
            hidden = hidden_functions([], traced.executed_other, index, shared, import_time)
        instances.append(Instance(
            id=cand.instance_id, project=project, requirement=cand.requirement,
            target_interfaces=analysis.target_interfaces, test_level=analysis.test_level,
            depends_on=relations.depends_on.get(cand.instance_id, []),
            variant_of=relations.variant_of.get(cand.instance_id, []),
            group=relations.group_of[cand.instance_id],
            view=ViewSpec(target_hidden=[h.body_span() for h in hidden], hidden_rule=rule,
                          all_hidden_scope=list(source.production))))
        gold[cand.instance_id] = GoldTest(
            instance_id=cand.instance_id,
            closure=test_side.describe(cand.closure_code, traced.step_files, cand.data_files),
            step_definitions=traced.step_definitions,
            bindings=traced.bindings,
            api_calls=analysis.api_calls,
            target_calls=analysis.target_calls,
            executed_when_then=sorted(executed_keys[cand.instance_id]),
            covered_lines=traced.coverage,
            data_files=sorted(cand.data_files),
            validation=ValidationRecord(isolation_runs=cand.isolation, positive_runs=cand.positive,
                                        negative_runs=cand.negative,
                                        negative_initialized=cand.negative_initialized),
            test_level_evidence=analysis.level_evidence,
            runtime_seconds=round(cand.runtime, 4))
    instances.sort(key=lambda i: id_order(i.id))
    return instances, gold


def _runner_label(name: str) -> str:
    """"<framework> <version>" for the card (what ``ProjectRecord.framework`` reads back)."""
    framework = get_framework(name)
    return f"{framework.name} {framework.version()}"


def id_order(instance_id: str) -> tuple[str, int]:
    path, _, line = instance_id.rpartition(":")
    return path, int(line)


def write_dataset(out_dir: Path, project: str, source: ProjectSource, instances: list[Instance],
           gold: dict[str, GoldTest], exclusions: list[Exclusion], timer: StageTimer,
           options: BuildOptions, features_total: int, scenarios_total: int, shadowed: int,
           warnings: list[str], import_time: list[str], mutants: list, mutation: dict[str, Any],
           isolation: str) -> DatasetCard:
    staging = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    snapshot_rel = f"projects/{project}"
    _copy_tree(source.root, staging / snapshot_rel)
    with open(staging / "instances.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(inst.model_dump_json() + "\n" for inst in instances)
    (staging / "gold").mkdir()
    with open(staging / "gold" / f"{project}.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(gold[inst.id].model_dump_json() + "\n" for inst in instances)
    if mutants:
        write_manifest(staging, project, mutants)
    if warnings:
        (staging / "warnings.txt").write_text("\n".join(warnings) + "\n", encoding="utf-8")
    reasons = Counter(e.reason for e in exclusions)
    levels = Counter(i.test_level.value for i in instances)
    depends = sum(len(i.depends_on) for i in instances)
    variants = sum(len(i.variant_of) for i in instances) // 2
    record = ProjectRecord(
        name=project, version=source.version, source=source.spec, source_sha256=source.sha256,
        snapshot=snapshot_rel, features_dir=source.features_dir, python_path=source.python_path,
        production=source.production, runner=_runner_label(source.framework),
        instances=len(instances), features_total=features_total, scenarios_total=scenarios_total,
        exclusions=dict(sorted(reasons.items())), test_levels=dict(sorted(levels.items())),
        depends_on_pairs=depends, variant_of_pairs=variants,
        groups=len({i.group for i in instances}),
        empty_interface_instances=sum(1 for i in instances if not i.target_interfaces),
        shadowed_step_matches=shadowed, statistics=table2(instances, gold),
        import_time_bodies=import_time, environment=source.environment)
    files = {}
    for path in sorted(staging.rglob("*")):
        if path.is_file() and not path.relative_to(staging).as_posix().startswith("projects/"):
            files[path.relative_to(staging).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    card = DatasetCard(
        name=options.name or project, builder_version=__version__,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        projects=[record],
        scored_instances=sorted({i.group for i in instances}, key=id_order),
        exclusions=exclusions,
        hidden_rule={"shared_threshold": options.shared_threshold,
                     "rule": instances[0].view.hidden_rule if instances else ""},
        stage_seconds=dict(timer.seconds),
        mutation=mutation,
        isolation=isolation,
        files=files)
    (staging / "dataset.json").write_text(json.dumps(card.model_dump(mode="json"), indent=2) + "\n",
                                          encoding="utf-8")
    if out_dir.exists():
        shutil.rmtree(out_dir)
    staging.rename(out_dir)
    return card

