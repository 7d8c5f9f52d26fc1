"""Judge a godog prediction: one compile of the prediction over the mutant schemata, then every
verdict run a fresh process of that binary in bubblewrap without ``/proc``.

**Nothing that decides a verdict is in the test's reach** (issue 25's rule, by construction):

- every variant — the original, each mutant, each null variant — runs **the same binary**; the
  variant is a number read from fd 3 (an unlinked file) into an unexported variable of the
  schemata package before any test-side code runs, and fd 3 is closed (``schemata``). No
  argument, environment variable, file or exported symbol differs between a clean run and a
  mutant run. The binary has no symbol table (``-ldflags=-s -w``) and the sandbox no ``/proc``.
- the run's tree holds **no ``.go`` file**: the binary needs no source, so a test that reads
  production as data (to compare it with a copy of the shipped code) fails its own clean run;
  the ground truth's step files are not there either.
- the schemata numbering is drawn anew for each judge session, so nothing learnt from one
  session's binary (which number is which mutant) holds in the next.
- **null variants** go where cucumber-js has equivalent variants: numbers no site uses, run
  exactly like a mutant's. A test that fails one while unchanged production passes cannot be
  telling behaviour apart (there is none); it is flaky or reading the switch → the same
  retry-then-decide rule as the other judges (``tampering`` when it fails one again beside
  passing controls, ``unstable`` otherwise).
- a static screen (``screen``) refuses ``unsafe``, cgo, ``go:linkname``, ``syscall``,
  ``os/exec``, runtime and debug internals, the switch's import path, ``/proc`` and Go source
  as data → ``tampering``, before anything compiles.
- a sample of the claimed kills (5) is reproduced in a second process; a kill that does not
  reproduce → ``unstable``.

What in-process code can still do: anything a Go test can do to its own process — write a
report of its own, exit early, sleep. None of it depends on the variant, so it moves the clean
run, the null variants and the mutants alike: it can fail the clean run or survive every mutant,
never kill one mutant and spare the original.

The traced run is a separate build of the same files with coverage of the production packages
(a plain build, not the schemata), also sandboxed: its covered lines and the production calls
of the prediction's bound handlers give ``coverage_jaccard`` and the API-call F1, measured as
the builder measured the ground truth. Its per-row coverage decides which rows a kill runs in
(``rows_to_run``), and which kills wait: when more than 8 kills lie on lines no row reached, 8 of
them run first and the rest only if one of those fails (``kill_plan``: a weak test costs a few
processes, not one per kill; hiding reach from the traced run only loses kills).
"""

from __future__ import annotations

import random
import secrets
import shutil
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.builder.schemata_stage import kill_plan, rows_to_run
from bench.frameworks.call_reader import HandlerSpan
from bench.frameworks.godog.declarations import CallReader, GoProductionDeclarations
from bench.frameworks.godog.definitions import StepDefinition, bind
from bench.frameworks.godog.failure import clean_run_failure
from bench.frameworks.godog.interfaces import scenario_calls
from bench.frameworks.godog.layout import pattern_matches, suite_sites
from bench.frameworks.godog.mutation import RowCoverage, TestProgram
from bench.frameworks.godog.runner import GodogRun, list_definitions, run_loading, run_scenario
from bench.frameworks.godog.sandbox import run_tree, sandboxed
from bench.frameworks.godog.schemata import SCHEMA_DIR, SchemataError, compile_schemata
from bench.frameworks.godog.screen import screen
from bench.frameworks.godog.suites import GoSuite
from bench.frameworks.godog.testside import TestSideGo
from bench.frameworks.godog.toolchain import (
    GoToolchain,
    build_test_binary,
    compile_error,
    download_modules,
    module_path,
)
from bench.frameworks.trees import link_tree
from bench.isolation import bwrap_path
from bench.judging import (
    RETRY_BUDGET,
    Judge,
    JudgeContext,
    Judgement,
    RetryDecision,
    RunTrace,
    RunVerdict,
    UnsupportedByFramework,
    decide_retries,
    equivalent_count,
    retry_plan,
    spread_among,
)
from bench.model import GoldTest, Instance, Mutant, Outcome, Prediction
from bench.mutation.executor import load_manifest

if TYPE_CHECKING:
    from bench.frameworks.godog.framework import GodogFramework

REPRODUCED_KILLS = 5
NULL = "null"  # the plan's name of a null variant (a number no site uses)


def classify(runs: list[GodogRun], expected: int) -> tuple[Outcome, str]:
    """The stage ladder from the clean run's rows (docs/evaluation.md#outcomes-the-first-failing-stage)."""
    for run in runs:
        where = f"line {run.line}"
        if run.timed_out:
            return Outcome.execution_failure, f"{where}: timeout"
        if not run.report.written:
            return Outcome.build_failure, f"{where}: the suite did not start (exit {run.exit_code}): " + \
                _last_lines(run.output)
        scenario = run.scenario
        if scenario is None:
            ran = len(run.report.scenarios)
            return Outcome.execution_failure, f"{where}: godog ran {ran} scenarios, not the selected one"
        for step in scenario.steps:
            if step.status in ("undefined", "pending", "ambiguous"):
                return Outcome.binding_failure, f"{step.status} step: {step.text}"
        for step in scenario.steps:
            if step.status == "failed":
                return Outcome.assertion_failure, f"{where}: {step.text}: {step.error.strip()[:240]}"
        if not run.passed:
            return Outcome.execution_failure, f"{where}: exit {run.exit_code}: {_last_lines(run.output)}"
    if len(runs) != expected:
        return Outcome.execution_failure, f"ran {len(runs)} of {expected} rows"
    return Outcome.passed, ""


def _last_lines(output: str) -> str:
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    return " | ".join(lines[-3:])[:300]


class GodogJudge(Judge):
    """Judges one project's instances of a godog dataset."""

    traces = True
    failures_scored_by_gold = True

    def __init__(self, framework: GodogFramework, context: JudgeContext) -> None:
        if context.snapshot is not None:
            raise UnsupportedByFramework("judging on a predicted production (the reverse task) is not implemented "
                                         "for godog projects")
        self.framework = framework
        self.project = context.project
        self.options = context.options
        self.snapshot = context.project_snapshot
        self.tmp = context.tmp / "godog"
        area = framework.test_area(self.snapshot, context.project.features_dir)
        self.area = area
        self.layout = framework.layout(self.snapshot, context.project.features_dir)
        self.tags = list(self.layout.settings.tags)
        self.production = list(context.project.production)
        self.mutants: dict[str, Mutant] = load_manifest(context.dataset_root, context.project.name) \
            if context.options.mutants else {}
        self.rng = random.Random(context.options.seed)
        self.shipped = {rel: (self.snapshot / rel).read_text(encoding="utf-8")
                        for package in self.layout.packages for rel in self.layout.side(package).files}
        self._load_lines: dict[str, dict[str, set[int]]] = {}  # suite key -> what loading it covers
        self.declarations = GoProductionDeclarations(self.snapshot, self.production)
        self._prepared = False
        self._lock = threading.Lock()
        self._builds = threading.Lock()  # one go build at a time (each takes every core)
        self._count = 0

    # ------------------------------------------------------------------ session set-up
    def prepare(self) -> None:
        with self._lock:
            if self._prepared:
                return
            self._prepare()
            self._prepared = True

    def _prepare(self) -> None:
        self.wrap_factory: Any = None  # isolation "none", or "auto" without bubblewrap: plain processes
        if self.options.isolation != "none":
            if bwrap_path() is not None:
                self.wrap_factory = sandboxed
            elif self.options.isolation == "bwrap":
                raise RuntimeError("bubblewrap is not installed (Debian: apt-get install bubblewrap)")
        try:
            self.toolchain = GoToolchain.find()
        except RuntimeError as exc:
            raise RuntimeError(f"godog: {exc}") from exc
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.tmp.mkdir(parents=True)
        # production as this session judges it: the schemata of every mutant, numbered afresh
        self.base = link_tree(self.snapshot, self.tmp / "schemata")
        downloaded = download_modules(self.base, self.toolchain)
        if not downloaded.ok:
            raise RuntimeError(f"godog: go mod download failed: {_last_lines(downloaded.output)}")
        mutants = sorted(self.mutants.values(), key=lambda m: (m.file, m.line, m.col, m.id))
        self.numbers: dict[str, int] = {}
        if mutants:  # (a dataset built without mutants, or evaluated with --no-mutants: plain production)
            try:
                tags = sorted({t for suite in self.layout.suites for t in suite.build_tags})
                built = compile_schemata(self.base, mutants, self.snapshot, go=self.toolchain.go,
                                         env=self.toolchain.env(), order_seed=self.rng.randrange(1 << 30),
                                         flags=("-trimpath", "-buildvcs=false",
                                                *([f"-tags={','.join(tags)}"] if tags else [])))
            except SchemataError as exc:
                raise RuntimeError(f"godog: the dataset's mutants do not compile as schemata: {exc}") from exc
            self.numbers = built.numbers
        self.missing = sorted(set(self.mutants) - set(self.numbers))  # a compiler that changed since the build
        used = set(self.numbers.values())
        top = max(used, default=0)
        self.null_numbers = [n for n in range(1, top + 1000) if n not in used]
        # the run tree: everything of the snapshot but Go source (fixtures, features)
        self.data = run_tree(self.snapshot, self.tmp / "data")

    def load_lines(self, suite: GoSuite, feature: str, line: int) -> dict[str, set[int]]:
        """What loading ``suite`` covers, from the snapshot as built (a trusted run: no
        prediction code), once per suite."""
        with self._lock:
            if suite.key in self._load_lines:
                return self._load_lines[suite.key]
        loader = self.tmp / "bin" / f"load-{secrets.token_hex(4)}.test"
        with self._builds:
            built = build_test_binary(self.snapshot_copy(), suite.package, loader, self.toolchain,
                                      cover=self.production, tags=suite.build_tags)
        lines: dict[str, set[int]] = {}
        if built.ok:
            run = run_loading(loader, self.data, suite, feature, line, self.tmp / f"load-{secrets.token_hex(4)}",
                              timeout=self.options.timeout, wrap=self._wrap(loader))
            if run.coverage is not None:
                lines = run.coverage.lines(module_path(self.base), self.production)[0]
        loader.unlink(missing_ok=True)
        with self._lock:
            self._load_lines[suite.key] = lines
        return lines

    def snapshot_copy(self) -> Path:
        """A linked copy of the snapshot as shipped (go may write go.sum; the snapshot stays as it is)."""
        target = self.tmp / "plain"
        if not target.is_dir():
            link_tree(self.snapshot, target)
        return target

    def _wrap(self, binary: Path) -> Any:
        return self.wrap_factory(self.data, binary) if self.wrap_factory is not None else None

    # ------------------------------------------------------------------ submission check
    def rejections(self, files: dict[str, str]) -> list[str]:
        return self.area.rejections(files)

    def unusable(self, files: dict[str, str]) -> str | None:
        return None if any(content.strip() for content in files.values()) else "no usable test code (no non-empty file)"

    # ------------------------------------------------------------------ verdict
    def judge(self, inst: Instance, prediction: Prediction, gold: GoldTest) -> Judgement:
        self.prepare()
        findings = screen(prediction.files, SCHEMA_DIR, self.shipped)
        if findings:
            return Judgement(Outcome.tampering, findings[0], evidence=findings)
        with self._lock:
            self._count += 1
            number = self._count
        with tempfile.TemporaryDirectory(prefix=f"req2test-godog-{number}-", dir=self.tmp) as tmp:
            return self._judge(inst, prediction, gold, Path(tmp))

    def _files(self, suite: GoSuite, prediction: Prediction, gold: GoldTest) -> dict[str, bytes]:
        """The test package as judged: the ground truth's registrations removed, the prediction's files laid over."""
        wanted = {(d.file, d.line) for d in gold.step_definitions}
        side = self.layout.side(suite.package)
        removed = [s for s in side.sites() if (s.file, s.line) in wanted]
        files = side.files_without(removed)
        files.update({path: text.encode("utf-8") for path, text in prediction.files.items()})
        return files

    def _judge(self, inst: Instance, prediction: Prediction, gold: GoldTest, tmp: Path) -> Judgement:
        req = inst.requirement
        suite = self.layout.suite_of(req.feature_file, req.run_lines)
        if suite is None:
            return Judgement(Outcome.infrastructure_failure, f"no godog suite of the snapshot runs {req.feature_file}:"
                                                             f"{req.scenario_line}")
        files = self._files(suite, prediction, gold)
        verdict_tree = link_tree(self.base, tmp / "verdict", files)
        binary = tmp / "bin" / "verdict.test"
        with self._builds:
            built = build_test_binary(verdict_tree, suite.package, binary, self.toolchain, stripped=True,
                                      tags=suite.build_tags)
        if not built.ok:
            return Judgement(Outcome.build_failure, f"the test does not compile: {compile_error(built.output)}")
        program = TestProgram(binary, self.data, suite.package, self.tags, tmp / "out", self.layout.plan(suite))
        wrap = self._wrap(binary)
        timeout = self.options.timeout
        runs = 0

        def run(number: int, budget: float = 1.0, rows: list[int] | None = None) -> tuple[RunVerdict, list[GodogRun]]:
            nonlocal runs
            runs += 1
            return program.run(inst, number, timeout * budget, wrap, rows=rows)

        _, clean_rows = run(0)
        outcome, detail = classify(clean_rows, len(req.run_lines))
        if outcome is not Outcome.passed:  # the clean run's own failure (mutant 0: the original)
            return Judgement(outcome, detail, fresh_runs=runs,
                             failure=clean_run_failure(clean_rows, [str(verdict_tree), str(verdict_tree.resolve()),
                                                                       str(tmp), str(tmp.resolve())]))
        traced = self._trace(inst, suite, files, tmp)
        if isinstance(traced, Judgement):
            traced.fresh_runs = runs
            return traced
        trace, coverage = traced

        def rows(mutant_id: str) -> list[int] | None:
            return rows_to_run(coverage, self.mutants[mutant_id])

        confirmation: dict[str, Any] = {"clean_runs": 1, "traced_runs": 1, "sandbox": "bwrap-no-proc"
                                        if wrap is not None else "none", "schemata": len(self.numbers)}
        if not self.options.mutants or not gold.kills:
            return Judgement(Outcome.passed, fresh_runs=runs, trace=trace, confirmation=confirmation)
        kills = [m for m in gold.kills if m in self.numbers]
        schedule = kill_plan(kills, coverage, self.mutants, self.rng)
        plan: list[str] = list(schedule.now)
        self.rng.shuffle(plan)
        nulls = self.rng.sample(self.null_numbers, equivalent_count(len(schedule.now)))
        spread_among(plan, [f"{NULL}:{n}" for n in nulls], self.rng)
        # a null variant runs the rows of some kill (a run looks like any mutant's)
        null_rows = {f"{NULL}:{n}": rows(self.rng.choice(schedule.now)) if kills else None for n in nulls}
        claimed: set[str] = set()
        timeouts = 0
        failed_nulls: list[tuple[str, list[GodogRun]]] = []
        stepless: list[str] = []
        verdicts: dict[str, RunVerdict] = {}

        def judge_kill(item: str) -> None:
            nonlocal timeouts
            verdict, _ = run(self.numbers[item], rows=rows(item))
            verdicts[item] = verdict
            if verdict is RunVerdict.infra_no_step:
                stepless.append(item)
            elif verdict is not RunVerdict.survived:
                claimed.add(item)
                timeouts += int(verdict is RunVerdict.timeout)

        def null_variant(item: str) -> bool:
            if not item.startswith(NULL):
                return False
            verdict, ran = run(int(item.split(":")[1]), rows=null_rows[item] or None)
            if verdict is not RunVerdict.survived:
                failed_nulls.append((item, ran))
            return True

        held = schedule.run(plan, claimed, judge_kill, null_variant)
        confirmation.update({"clean_runs": 1 + len(nulls), "null_variants": len(nulls),
                             **schedule.record(held)})
        if failed_nulls:
            decided = self._failed_nulls(failed_nulls, run)
            if decided is not None:
                decided.fresh_runs = runs
                return decided
            confirmation["clean_reruns"] = len(failed_nulls)
        if stepless:
            mutant = stepless[0]
            again, _ = run(self.numbers[mutant], rows=rows(mutant))
            control, _ = run(0)
            if again is RunVerdict.infra_no_step and control is RunVerdict.survived:
                return Judgement(Outcome.infrastructure_failure, f"no step ran under mutant {mutant}",
                                 fresh_runs=runs)
            return Judgement(Outcome.unstable, f"no step ran under mutant {mutant}, and the confirmation disagreed",
                             evidence=[f"mutant {mutant}: no step ran, then {again}; unchanged production {control}"],
                             fresh_runs=runs)
        order = sorted(claimed)
        self.rng.shuffle(order)
        order = order[:REPRODUCED_KILLS]
        for mutant_id in order:
            again, _ = run(self.numbers[mutant_id], rows=rows(mutant_id))
            if again is RunVerdict.survived:
                return Judgement(Outcome.unstable, f"the kill of {mutant_id} did not reproduce",
                                 evidence=[f"kill of {mutant_id} did not reproduce"], fresh_runs=runs)
        confirmation["reproduced_kills"] = len(order)
        if self.missing:
            confirmation["mutants_not_compiled"] = len(self.missing)
        return Judgement(Outcome.passed, kills=claimed, timeouts=timeouts, fresh_runs=runs, trace=trace,
                         confirmation=confirmation, verdicts=verdicts)

    def _failed_nulls(self, failed: list[tuple[str, list[GodogRun]]], run: Any) -> Judgement | None:
        """Failed null variants, decided as every judge decides failed equivalent variants
        (``bench.judging.retry_plan``): each (at most 3) twice more with four times the budget
        beside four runs of number 0, shuffled. All pass now → the machine's (a timeout under
        load): None; a null fails every retry, not by a timeout, while the controls pass →
        tampering; anything else → unstable."""
        plan = retry_plan(len(failed), self.rng)
        verdicts = [run(int(failed[index][0].split(":")[1]) if index is not None else 0, RETRY_BUDGET)[0]
                    for index in plan]
        first_real = any(any(not r.timed_out and not r.passed for r in rows) for _, rows in failed)
        decision, again = decide_retries(plan, verdicts, len(failed), first_real)
        if decision is RetryDecision.tampering:
            return Judgement(Outcome.tampering, "the test failed a run in which no mutant was active, on every "
                             "retry, while unchanged production passed: it reacts to the mutant switch, not to "
                             "behaviour", evidence=[f"null variant {failed[i][0]} failed every retry" for i in again])
        if decision is RetryDecision.transient:
            return None
        return Judgement(Outcome.unstable, "a run with no mutant active failed, and not reproducibly",
                         evidence=[f"{item}: failed" for item, _ in failed])

    def _trace(self, inst: Instance, suite: GoSuite, files: dict[str, bytes],
               tmp: Path) -> tuple[RunTrace, RowCoverage] | Judgement:
        """The traced run: a plain build of the same files with coverage; must pass too. Returns
        the trace and each row's covered production lines."""
        req = inst.requirement
        load_lines = self.load_lines(suite, req.feature_file, req.scenario_line)
        tree = link_tree(self.snapshot_copy(), tmp / "traced", files)
        binary = tmp / "bin" / "traced.test"
        with self._builds:
            built = build_test_binary(tree, suite.package, binary, self.toolchain, cover=self.production,
                                      tags=suite.build_tags)
        if not built.ok:
            return Judgement(Outcome.unstable, "the traced build failed where the verdict build compiled: "
                             + compile_error(built.output))
        rows: list[GodogRun] = []
        for n, line in enumerate(req.run_lines):
            rows.append(run_scenario(binary, self.data, suite.package, req.feature_file, line, tmp / f"traced-{n}",
                                     tags=self.tags, coverage=True, timeout=self.options.timeout,
                                     wrap=self._wrap(binary), plan=self.layout.plan(suite)))
        if not all(r.passed for r in rows):
            return Judgement(Outcome.unstable, "the traced run did not pass while the clean run did",
                             evidence=["traced run: " + classify(rows, len(req.run_lines))[1]])
        module = module_path(self.base)
        per_row: RowCoverage = {row.line: row.coverage.lines(module, self.production)[0]
                                if row.coverage is not None else None for row in rows}
        lines: dict[str, set[int]] = {}
        for hits in per_row.values():
            for file, hit in (hits or {}).items():
                lines.setdefault(file, set()).update(hit)
        covered = {f: sorted(hit - load_lines.get(f, set())) for f, hit in sorted(lines.items())}
        api = self._api(tree, binary, suite, rows, lines, inst)
        return RunTrace(coverage={f: v for f, v in covered.items() if v}, api=api), per_row

    def _api(self, tree: Path, binary: Path, suite: GoSuite, rows: list[GodogRun], lines: dict[str, set[int]],
             inst: Instance) -> list[str]:
        """The production declarations the prediction's bound handlers call and the run executed."""
        side = TestSideGo(tree, suite.package, tests_only=self.layout.tests_only(suite.package))
        definitions: list[StepDefinition] = []
        if suite.flag_driven:
            try:
                definitions = list_definitions(binary, tree, suite.package)
            except (RuntimeError, OSError):
                return []
        registered = suite_sites(suite, side) if not suite.flag_driven else []
        by_line = {s.line: s for s in inst.requirement.effective_steps}
        spans: list[tuple[HandlerSpan, str]] = []
        for row in rows:
            scenario = row.scenario
            if scenario is None:
                continue
            for step in scenario.steps:
                if suite.flag_driven:
                    definition = bind(step.text, definitions)
                    site = side.site_for_pattern(definition.pattern, step.match) if definition is not None else None
                else:
                    site = next((s for s in registered if pattern_matches(s.pattern, step.text)), None)
                if site is None:
                    continue
                effective = by_line.get(step.line)
                role = effective.type if effective is not None else (site.kind or "given")
                closure = side.closure([site])
                for decl in (*closure.functions, *closure.literals):
                    spans.append((HandlerSpan(decl.file, decl.line, decl.end_line), role))
        calls = scenario_calls(self.declarations.ran(lines), CallReader(tree, self.declarations), spans)
        return [str(k) for k in calls.api_keys]


__all__ = ["GodogJudge", "classify"]
