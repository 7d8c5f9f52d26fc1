"""The builder's mutant stage for godog: every mutant compiled once as mutant schemata, one
process per (scenario row, mutant), the selected mutant given as fd 3 (``schemata``).

Per instance, against the mutants on lines its traced run covered (the pool, ``pool_for``):

1. **ground truth**: the suite's own test binary, built from the schemata tree; its clean run
   (number 0) must pass, or the instance scores nothing. A mutant is killed when a row's run
   has a failing step, and again each time that run is repeated as the judge runs it,
   ``CONFIRMATION_ROUNDS`` times: in its sandbox, in a tree without Go source
   (``confirmed_kills``, ``sandbox.sandboxed``, ``sandbox.run_tree``). coddy-agent's
   autocomplete lists the files of its directory, and a mutant that completes every word killed
   beside the source and not in the judge's tree. A test that fails now and then, such as
   coddy-agent's TUI scenarios on a loaded machine, would otherwise record false kills; and a
   kill that needs what a verdict run lacks (``/proc``: coddy-agent's background-task reaper)
   is one no prediction can make, so its oracle could never be kill-complete. A kill that is not
   repeated, a timeout or a run in which no step ran excludes the pair (``EXCLUDED_VERDICTS``).
2. **empty test** (every handler of the instance returns zero values, ``calibration_files``'s
   ``empty``) against the kills, run as the judge runs it (sandbox, run tree): what it
   detects too, the suite's infrastructure detects without the test (package init, hooks, a
   handler shared with infrastructure) — recorded as ``infrastructure_kills``, out of the kills.
3. **then-stripped test** (the handlers only Then steps use, emptied) against the remaining
   kills, as the judge runs it too: the kills it no longer makes are ``assertion_dependent``.
   A stripped test that does not pass its own clean run makes every kill assertion-dependent.
   The calibration arms are judged where these ran: an empty test that killed only in the
   judge's tree would score kills its ground truth had not excluded.

Steps 2 and 3 each compile a test binary (only the test package recompiles: the schemata
production packages are in the build cache) — one per distinct file set.

The schemata can differ from the source mutant only where ``schemata`` says (an untyped
constant expression computed in the inferred type); ``fresh_check`` replays a sample of the
verdicts as a plain rebuild with the mutant on disk (``GodogFramework.fresh_run``).
"""

from __future__ import annotations

import hashlib
import secrets
import shutil
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.builder.schemata_stage import (
    FRESH_SAMPLE,
    InstanceRuns,
    RankedRuns,
    RowCoverage,
    RunsCheckpoint,
    confirmed_kills,
    gold_updates,
    judge_instances,
    row_timeout,
    rows_covering,
    stage_summary,
    stripped_targets,
)
from bench.builder.schemata_stage import fresh_check as shared_fresh_check
from bench.frameworks.godog.framework import run_verdict
from bench.frameworks.godog.layout import GodogLayout
from bench.frameworks.godog.runner import GodogRun, run_scenario
from bench.frameworks.godog.sandbox import Wrap, run_tree, sandboxed
from bench.frameworks.godog.schemata import SchemataError, compile_schemata
from bench.frameworks.godog.suites import GoSuite, SuitePlan
from bench.frameworks.godog.testside import calibration_files
from bench.frameworks.godog.toolchain import GoToolchain, build_test_binary
from bench.frameworks.instance_sites import binding_roles, instance_sites
from bench.frameworks.trees import link_tree
from bench.isolation import bwrap_path
from bench.judging import RunVerdict
from bench.model import GoldTest, Instance, Mutant
from bench.mutation.executor import pool_for
from bench.progress import Laps, Progress

CONFIRMATION_ROUNDS = 3  # a kill counts once it repeats in 3 more runs as the judge runs it (4 in a row)
# in the checkpoint's key: instances judged under another rule are judged again
KILL_RULE = (f"kills confirmed by {CONFIRMATION_ROUNDS} more runs in the judge's sandbox and run tree; "
             "the empty and then-stripped tests run there too")


@dataclass
class TestProgram:
    """One compiled test program (a set of test files over the schemata tree) and its runs."""

    binary: Path
    tree: Path
    package: str
    tags: list[str]
    scratch: Path
    plan: SuitePlan | None = None  # a testing.T suite's (``suites``)

    def run(self, inst: Instance, number: int, timeout: float,
            wrap: Wrap | None = None,
            rows: list[int] | None = None) -> tuple[RunVerdict, list[GodogRun]]:
        """Every row of ``inst`` (or just ``rows``) with mutant ``number`` (0: none), stopping at
        the first row that does not pass; the verdict of that row (or survived)."""
        req = inst.requirement
        runs: list[GodogRun] = []
        for line in req.run_lines if rows is None else rows:
            # a name of its own (the run's HOME and report path): nothing in it counts the runs
            out = self.scratch / f"run-{secrets.token_hex(8)}"
            try:
                run = run_scenario(self.binary, self.tree, self.package, req.feature_file, line, out,
                                   tags=self.tags, timeout=timeout, mutant=number, wrap=wrap, plan=self.plan)
            finally:
                shutil.rmtree(out, ignore_errors=True)
            runs.append(run)
            verdict = run_verdict(run)
            if verdict is not RunVerdict.survived:
                return verdict, runs
        return RunVerdict.survived, runs


@dataclass
class SchemataTree:
    tree: Path
    numbers: dict[str, int]
    dropped: dict[str, str]
    builds: int
    seconds: float


def schemata_tree(work: Path, mutants: list[Mutant], toolchain: GoToolchain, tmp: Path,
                  build_tags: tuple[str, ...] = ()) -> SchemataTree:
    """A linked copy of ``work`` with every mutant that compiles written in as schemata
    (``build_tags``: the suites' own, so their files build)."""
    tree = link_tree(work, tmp / "schemata")
    flags = ("-trimpath", "-buildvcs=false", *([f"-tags={','.join(build_tags)}"] if build_tags else []))
    result = compile_schemata(tree, mutants, work, go=toolchain.go, env=toolchain.env(), flags=flags)
    return SchemataTree(tree, result.numbers, result.dropped, result.builds, result.seconds)


def _digest(files: dict[str, str]) -> str:
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.encode() + b"\0" + files[path].encode() + b"\0")
    return digest.hexdigest()[:16]


def run_mutation_stage(framework: Any, work: Path, production: list[str], layout: GodogLayout, tags: list[str],
                       suite_of: dict[str, GoSuite], instances: list[Instance], gold: dict[str, GoldTest],
                       row_coverage: dict[str, RowCoverage], toolchain: GoToolchain, timeout: float, workers: int,
                       progress: Progress, tmp: Path,
                       checkpoint: RunsCheckpoint | None = None) -> tuple[list[Mutant], dict[str, GoldTest], dict[str, Any]]:
    """``row_coverage``: per instance, each row's covered production lines (its traced run): a
    mutant runs only in the rows that reach it (``rows_covering``). ``checkpoint``: instances a
    killed build already judged, reused."""
    timed = Laps()
    seconds = timed.seconds

    # mutants of the files some instance covers: a mutant elsewhere is in no pool (and a file no
    # test binary compiles, behind a build tag no suite sets, could not be built as schemata)
    covered_files = sorted({f for record in gold.values() for f in record.covered_lines})
    generated = framework.language.generate_mutants(work, covered_files) if covered_files else []
    timed("generation")
    progress.log(f"mutant schemata: {len(generated)} mutants into one build")
    try:
        schemata = schemata_tree(work, generated, toolchain, tmp,
                                 tuple(sorted({t for s in suite_of.values() for t in s.build_tags})))
    except SchemataError as exc:
        raise RuntimeError(f"the mutant schemata do not compile: {exc}") from exc
    mutants = [m for m in generated if m.id in schemata.numbers]
    by_id = {m.id: m for m in mutants}
    timed("schemata_compile")
    binaries = tmp / "mutation-bin"
    programs: dict[str, TestProgram | str] = {}
    compile_seconds = [0.0]
    compiling = threading.Lock()  # one go build at a time (it takes every core); runs go on beside it

    def program(key: str, suite: GoSuite, files: dict[str, str]) -> TestProgram | str:
        """The test program of ``files`` over the schemata tree for ``suite``'s package
        (compiled once per package, build tags and file set), or the compiler's complaint."""
        package, build_tags = suite.binary_key
        name = f"{key}-{_digest({'': package + ' ' + ','.join(build_tags), **files})}"
        with compiling:
            return _compile(name, files, suite)

    def _compile(name: str, files: dict[str, str], suite: GoSuite) -> TestProgram | str:
        if name in programs:
            found = programs[name]
            return found if isinstance(found, str) else replace(found, plan=layout.plan(suite))
        tree = link_tree(schemata.tree, tmp / "mutation-trees" / name, files) if files else schemata.tree
        begun = time.perf_counter()
        built = build_test_binary(tree, suite.package, binaries / f"{name}.test", toolchain, stripped=True,
                                  tags=suite.build_tags)
        compile_seconds[0] += time.perf_counter() - begun
        if not built.ok:
            programs[name] = built.output.strip()[-300:]
            return programs[name]
        programs[name] = TestProgram(binaries / f"{name}.test", tree, suite.package, tags, tmp / "mutation-out",
                                     layout.plan(suite))
        return programs[name]

    for suite in sorted({suite_of[i.id] for i in instances}, key=lambda s: s.key):
        compiled = program("ground-truth", suite, {})
        if isinstance(compiled, str):  # the compiler's message
            raise RuntimeError(f"{suite.key} does not compile over the mutant schemata: {compiled}")  # noqa: TRY004
    timed("ground_truth_compile")
    pools = {inst.id: pool_for(mutants, gold[inst.id].covered_lines) for inst in instances}

    def judge_instance(inst: Instance) -> InstanceRuns:
        record = gold[inst.id]
        suite = suite_of[inst.id]
        side = layout.side(suite.package)
        timeout_of_row = row_timeout(record, timeout)
        result = InstanceRuns()
        ground_truth = program("ground-truth", suite, {})
        assert isinstance(ground_truth, TestProgram)
        verdict, _ = ground_truth.run(inst, 0, timeout_of_row)
        result.runs += 1
        result.clean_passed = verdict is RunVerdict.survived
        if not result.clean_passed:
            progress.advance()
            return result
        coverage = row_coverage.get(inst.id) or {line: None for line in inst.requirement.run_lines}

        def judged(prog: TestProgram) -> tuple[TestProgram, Wrap | None]:
            """``prog`` as the judge runs it: in its tree without source, in its bubblewrap sandbox
            when the machine has one (without it the judge runs plain processes too)."""
            return (replace(prog, tree=verdict_tree),
                    sandboxed(verdict_tree, prog.binary) if judge_sandbox else None)

        def passes(prog: TestProgram) -> bool:
            """Whether ``prog``'s clean run (no mutant) passes as the judge runs it."""
            as_judge, wrap = judged(prog)
            verdict, _ = as_judge.run(inst, 0, timeout_of_row, wrap=wrap)
            result.runs += 1
            return verdict is RunVerdict.survived

        def rows(mutant_id: str) -> list[int]:
            return rows_covering(coverage, by_id[mutant_id])

        def verdicts(prog: TestProgram, mutant_ids: list[str], as_judge: bool = False) -> dict[str, RunVerdict]:
            """Each mutant's verdict under ``prog``, the runs spread over the free slots; with
            ``as_judge``, as the judge runs it (``judged``)."""
            wrap = None
            if as_judge:
                prog, wrap = judged(prog)
            found = ranked.map(lambda m: prog.run(inst, schemata.numbers[m], timeout_of_row, wrap=wrap,
                                                  rows=rows(m))[0], mutant_ids)
            result.runs += len(mutant_ids)
            return dict(zip(mutant_ids, found, strict=True))

        result.verdicts = {m: str(v) for m, v in verdicts(ground_truth, [m.id for m in pools[inst.id]]).items()}
        # the confirming runs are the judge's: in its sandbox (no /proc, uid nobody, no network), so a kill
        # that needs what a verdict run does not have is no kill a prediction could make
        result.verdicts.update(confirmed_kills(result.verdicts,
                                               lambda ids: verdicts(ground_truth, ids, as_judge=True),
                                               CONFIRMATION_ROUNDS))
        kills = {m for m, v in result.verdicts.items() if v == RunVerdict.killed}
        if kills:
            sites = instance_sites(side.sites(), record)
            files = calibration_files(side, sites, binding_roles(record))
            empty = program("empty", suite, files["empty"])
            if isinstance(empty, str):
                result.build_failures.append(f"empty test of {inst.id}: {empty}")
                result.empty_not_passing = True
            else:
                result.empty_not_passing = not passes(empty)
                if not result.empty_not_passing:
                    result.infrastructure = {m for m, v in verdicts(empty, sorted(kills), as_judge=True).items()
                                             if v is RunVerdict.killed}
            remaining = kills - result.infrastructure
            if remaining and files["then-stripped"] != files["oracle"]:
                result.stripped_targets = stripped_targets(record, files)
                stripped = program("then-stripped", suite, files["then-stripped"])
                if isinstance(stripped, str):
                    result.build_failures.append(f"then-stripped test of {inst.id}: {stripped}")
                    result.stripped, result.stripped_not_passing = set(), True
                elif not passes(stripped):
                    result.stripped, result.stripped_not_passing = set(), True
                else:
                    result.stripped = {m for m, v in verdicts(stripped, sorted(remaining), as_judge=True).items()
                                       if v is RunVerdict.killed}
        progress.advance()
        return result

    progress.stage(f"mutant runs ({len(mutants)} mutants in one schemata build, one process per row and mutant)",
                   len(instances))
    judge_sandbox = bwrap_path() is not None
    verdict_tree = run_tree(work, tmp / "verdict-tree")  # what a judge's run sees: the project, no source
    with RankedRuns(workers) as ranked:  # the processes: ``workers`` at a time, the first-ranked instance's first
        results = judge_instances(judge_instance, instances, gold, pools, row_coverage, workers, progress,
                                  checkpoint, ranked)
    timed("runs")

    updated = gold_updates(instances, gold, pools, results, by_id)
    summary = stage_summary(
        "req2test Go mutants (tree-sitter-go, behave's operator families) compiled as mutant schemata; the "
        "mutant selected per process through fd 3", len(generated), len(covered_files), mutants, instances, updated,
        results, schemata,
        test_programs_compiled=len(programs), test_program_compile_seconds=round(compile_seconds[0], 1),
        fresh_process_fallbacks=0, phase_seconds=seconds,
        instances_resumed=checkpoint.reused if checkpoint else 0,
        covered_lines="the traced isolation run's coverage profile (-test.coverprofile, set mode) less what "
                      "loading the suite covers")
    for prog in programs.values():
        if isinstance(prog, TestProgram):
            prog.binary.unlink(missing_ok=True)
    return mutants, updated, summary


def fresh_check(framework: Any, work: Path, instances: list[Instance], gold: dict[str, GoldTest],
                mutants: dict[str, Mutant], timeout: float, workers: int, progress: Progress) -> dict[str, Any]:
    """Replay a sample of the schemata verdicts as plain rebuilds with the mutant on disk."""
    return shared_fresh_check(framework, work, instances, gold, mutants, timeout, workers, progress)


__all__ = ["FRESH_SAMPLE", "RowCoverage", "TestProgram", "fresh_check", "rows_covering", "run_mutation_stage", "schemata_tree"]
