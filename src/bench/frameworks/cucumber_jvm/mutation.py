"""The builder's mutant stage for Cucumber-JVM: every mutant compiled once as mutant schemata
(``schemata``), runs in the warm runner (``warm_runner``: one JVM, a class loader per run, the
selected number written into the schema's switch), one run per (scenario row, mutant).

Per instance, against the mutants on lines its traced run covered (the pool, ``pool_for``), and
only in the rows whose clean run reached the mutant's lines (``rows_covering``):

1. **ground truth**: the project's own compiled tests over the schemata production; the clean
   run (number 0) must pass. A mutant is killed when a row has a failing step; a timeout or a
   run in which no step ran excludes the pair (``INFRASTRUCTURE``).
2. **empty test** (``calibration_files``'s ``empty``: every step method of the instance does
   nothing) against the kills: what it detects too is the suite's infrastructure's
   (``infrastructure_kills``), not the test's. A kill runs only in the rows whose traced run of
   the empty test (one JVM with JaCoCo per row, ``trace``) reached the mutant's lines: a mutant
   on a line a run never executes cannot change that run, and an empty test reaches little
   beyond hooks (java-algorand-sdk: 484 warm runs of an instance's kills, no infrastructure kill
   among them, before this).
3. **then-stripped test** against the remaining kills: those it no longer makes are
   ``assertion_dependent``.

Tests 2 and 3 are compiled by the warm javac against the project's classes. The warm runner can
differ from a fresh JVM only through state a dependency keeps across class loaders, and the
schemata from the source mutant only where ``schemata`` says; ``fresh_check`` replays a sample
of the verdicts as plain recompiles with the mutant on disk, each row in a fresh JVM.
"""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import stopping
from bench.builder.schemata_stage import (
    MIN_TIMEOUT,
    TIMEOUT_FACTOR,
    InstanceRuns,
    RowCoverage,
    RunsCheckpoint,
    gold_updates,
    judge_instances,
    row_timeout,
    rows_covering,
    stage_summary,
    stripped_targets,
)
from bench.builder.schemata_stage import fresh_check as shared_fresh_check
from bench.frameworks.cucumber_jvm.framework import run_verdict
from bench.frameworks.cucumber_jvm.javac_server import JavacPool
from bench.frameworks.cucumber_jvm.schemata import PACKAGE, SchemataError, compile_schemata
from bench.frameworks.cucumber_jvm.warm_runner import WarmRunnerPool, warm_suite
from bench.frameworks.cucumber_jvm.workspace import JavaProject, compile_variant
from bench.frameworks.instance_sites import binding_roles, instance_sites
from bench.frameworks.trees import link_tree
from bench.judging import RunVerdict
from bench.model import GoldTest, Instance, Mutant
from bench.mutation.executor import pool_for
from bench.progress import Laps, Progress

SWITCH_FIELD = f"{PACKAGE}.Main selected"  # where the warm runner writes each run's number
# in the checkpoint's key: instances judged under another rule are judged again
KILL_RULE = "the empty test runs a kill only in the rows its own traced run reaches"
# a test side's compiled classes and an instance -> each row's production lines (a traced JVM per row)
Trace = Callable[[Path, Instance], RowCoverage]


def run_mutation_stage(framework: Any, project: JavaProject, side: Any, instances: list[Instance],
                       gold: dict[str, GoldTest], row_coverage: dict[str, RowCoverage], javac: JavacPool,
                       archive: Path | None, timeout: float, workers: int, progress: Progress,
                       tmp: Path, checkpoint: RunsCheckpoint | None = None, trace: Trace | None = None,
                       ) -> tuple[list[Mutant], dict[str, GoldTest], dict[str, Any]]:
    """``trace``: the empty test's traced runs (without it, the empty test runs every kill in
    every row its ground truth's run reached)."""
    from bench.frameworks.cucumber_jvm.testside import calibration_files

    timed = Laps()
    work = project.root
    settings = project.settings
    covered_files = sorted({f for record in gold.values() for f in record.covered_lines})
    generated = framework.language.generate_mutants(work, covered_files) if covered_files else []
    timed("generation")
    progress.log(f"mutant schemata: {len(generated)} mutants into one javac build")
    tree = link_tree(work, tmp / "schemata-tree")
    try:
        schemata = compile_schemata(tree, generated, work, list(project.dependencies),
                                    out=tmp / "schemata-classes", production=list(settings.production))
    except SchemataError as exc:
        raise RuntimeError(f"the mutant schemata do not compile: {exc}") from exc
    mutants = [m for m in generated if m.id in schemata.numbers]
    by_id = {m.id: m for m in mutants}
    timed("schemata_compile")

    production_dirs = [str(schemata.classes), str(project.classes)]  # the schemata classes shadow the plain ones

    # the project's own other modules' jars (settings.reload_groups) are loaded per run with its classes
    own = [jar for jar in project.dependencies if settings.reloaded_jar(jar)]
    shared = [jar for jar in project.dependencies if not settings.reloaded_jar(jar)]

    def pool_over(test_dirs: list[str]) -> WarmRunnerPool:
        return WarmRunnerPool(warm_suite(shared, [*test_dirs, *production_dirs, *own], work, settings.glue,
                                         settings.tags, switch_field=SWITCH_FIELD, java=project.java,
                                         archive=None if own else archive,  # the archive's class path is all jars
                                         jvm_args=settings.jvm_args, setup_tags=settings.setup_tags,
                                         teardown_tags=settings.teardown_tags))

    ground_truth = pool_over([str(project.test_classes)])
    pools = {inst.id: pool_for(mutants, gold[inst.id].covered_lines) for inst in instances}
    scratch = tmp / "mutation-out"

    def run_rows(runner: WarmRunnerPool, inst: Instance, number: int, seconds: float,
                 rows: list[int] | None = None) -> RunVerdict:
        for line in inst.requirement.run_lines if rows is None else rows:
            run = runner.run(inst.requirement.feature_file, line, scratch / secrets.token_hex(8), number, seconds)
            verdict = run_verdict(run)
            if verdict is not RunVerdict.survived:
                return verdict
        return RunVerdict.survived

    def variant(files: dict[str, str]) -> tuple[WarmRunnerPool, Path] | str:
        """The warm runners of a calibration test and its compiled glue, or javac's complaint."""
        compiled = compile_variant(project, files, tmp / "mutation-variants" / secrets.token_hex(6), javac)
        if not compiled.compile.ok:
            return compiled.compile.output.strip()[:300]
        return pool_over([str(compiled.classes), str(project.resources)]), compiled.classes

    not_reached = [0]  # kills the empty test was not run on: its traced runs never reach their lines

    def judge_instance(inst: Instance) -> InstanceRuns:
        record = gold[inst.id]
        timeout_of_row = row_timeout(record, timeout)
        result = InstanceRuns()
        result.clean_passed = run_rows(ground_truth, inst, 0, timeout_of_row) is RunVerdict.survived
        result.runs += 1
        if not result.clean_passed:
            progress.advance()
            return result
        coverage = row_coverage.get(inst.id) or {line: None for line in inst.requirement.run_lines}
        for mutant in pools[inst.id]:
            stopping.check()  # interrupted: no new process (the ones in flight are killed)
            verdict = run_rows(ground_truth, inst, schemata.numbers[mutant.id], timeout_of_row,
                               rows_covering(coverage, mutant))
            result.runs += 1
            result.verdicts[mutant.id] = str(verdict)
        kills = {m for m, v in result.verdicts.items() if v == RunVerdict.killed}
        if kills:
            sites = instance_sites(side.sites(), record)
            files = calibration_files(side, sites, binding_roles(record))
            compiled_empty = variant(files["empty"])
            if isinstance(compiled_empty, str):
                result.build_failures.append(f"empty test of {inst.id}: {compiled_empty}")
                result.empty_not_passing = True
            else:
                empty, empty_classes = compiled_empty
                result.empty_not_passing = run_rows(empty, inst, 0, timeout_of_row) is not RunVerdict.survived
                result.runs += 1
                if not result.empty_not_passing:
                    # the rows the empty test's own runs reach (a row whose trace failed: every mutant)
                    reached = trace(empty_classes, inst) if trace is not None else coverage
                    for mutant_id in sorted(kills):
                        reaching = set(rows_covering(reached, by_id[mutant_id]))
                        rows = [r for r in rows_covering(coverage, by_id[mutant_id]) if r in reaching]
                        if not rows:
                            not_reached[0] += 1
                            continue  # no run of the empty test executes the mutant's lines
                        verdict = run_rows(empty, inst, schemata.numbers[mutant_id], timeout_of_row, rows)
                        result.runs += 1
                        if verdict is RunVerdict.killed:
                            result.infrastructure.add(mutant_id)
                empty.close()
            remaining = kills - result.infrastructure
            if remaining and files["then-stripped"] != files["oracle"]:
                result.stripped_targets = stripped_targets(record, files)
                compiled_stripped = variant(files["then-stripped"])
                if isinstance(compiled_stripped, str):
                    result.build_failures.append(f"then-stripped test of {inst.id}: {compiled_stripped}")
                    result.stripped, result.stripped_not_passing = set(), True
                else:
                    stripped = compiled_stripped[0]
                    result.runs += 1
                    if run_rows(stripped, inst, 0, timeout_of_row) is not RunVerdict.survived:
                        result.stripped, result.stripped_not_passing = set(), True
                    else:
                        result.stripped = set()
                        for mutant_id in sorted(remaining):
                            verdict = run_rows(stripped, inst, schemata.numbers[mutant_id], timeout_of_row,
                                               rows_covering(coverage, by_id[mutant_id]))
                            result.runs += 1
                            if verdict is RunVerdict.killed:
                                result.stripped.add(mutant_id)
                    stripped.close()
        progress.advance()
        return result

    progress.stage(f"mutant runs ({len(mutants)} mutants in one schemata build, warm JVMs, a class loader per run)",
                   len(instances))
    try:
        results = judge_instances(judge_instance, instances, gold, pools, row_coverage, workers, progress, checkpoint)
    finally:
        ground_truth.close()
        shutil.rmtree(scratch, ignore_errors=True)
    timed("runs")

    updated = gold_updates(instances, gold, pools, results, by_id)
    summary = stage_summary(
        "req2test Java mutants (tree-sitter-java, behave's operator families, PIT's names) compiled as mutant "
        "schemata; runs in a warm JVM, a class loader per run", len(generated), len(covered_files), mutants,
        instances, updated, results, schemata,
        warm_runner_restarts=ground_truth.restarts, phase_seconds=timed.seconds,
        empty_runs_not_reached=not_reached[0],
        instances_resumed=checkpoint.reused if checkpoint else 0,
        covered_lines="JaCoCo's covered lines of the traced run less what loading the suite and, per feature, "
                      "its setup/teardown companions alone cover")
    return mutants, updated, summary


def fresh_check(framework: Any, project: JavaProject, instances: list[Instance], gold: dict[str, GoldTest],
                mutants: dict[str, Mutant], timeout: float, workers: int, progress: Progress) -> dict[str, Any]:
    """Replay a sample of the warm schemata verdicts as plain recompiles with the mutant on disk,
    every row in a fresh JVM (``CucumberJvmFramework.fresh_run``)."""
    return shared_fresh_check(framework, project.root, instances, gold, mutants, timeout, workers, progress)


__all__ = ["KILL_RULE", "MIN_TIMEOUT", "SWITCH_FIELD", "TIMEOUT_FACTOR", "RowCoverage", "Trace", "fresh_check",
           "rows_covering", "run_mutation_stage"]
