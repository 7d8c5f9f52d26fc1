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
   (``infrastructure_kills``), not the test's.
3. **then-stripped test** against the remaining kills: those it no longer makes are
   ``assertion_dependent``.

Tests 2 and 3 are compiled by the warm javac against the project's classes. The warm runner can
differ from a fresh JVM only through state a dependency keeps across class loaders, and the
schemata from the source mutant only where ``schemata`` says; ``fresh_check`` replays a sample
of the verdicts as plain recompiles with the mutant on disk, each row in a fresh JVM.
"""

from __future__ import annotations

import random
import secrets
import shutil
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.builder.stats import mutation_statistics
from bench.frameworks.cucumber_jvm.framework import run_verdict
from bench.frameworks.cucumber_jvm.javac_server import JavacPool
from bench.frameworks.cucumber_jvm.schemata import PACKAGE, SchemataError, compile_schemata
from bench.frameworks.cucumber_jvm.warm_runner import WarmRunnerPool, warm_suite
from bench.frameworks.cucumber_jvm.workspace import JavaProject, compile_variant
from bench.frameworks.trees import link_tree
from bench.judging import RunVerdict
from bench.model import GoldTest, Instance, Mutant, StepDefRef
from bench.mutation.executor import INFRASTRUCTURE, pool_for
from bench.progress import Laps, Progress

FRESH_SAMPLE = 64  # (instance, mutant) pairs replayed in fresh JVMs, half of them kills
MIN_TIMEOUT = 5.0  # seconds a mutant row run gets at least ...
TIMEOUT_FACTOR = 20.0  # ... or this many times the row's clean run
SWITCH_FIELD = f"{PACKAGE}.Main selected"  # where the warm runner writes each run's number

RowCoverage = dict[int, dict[str, set[int]] | None]  # row line -> its run's covered lines (None: none read)


def rows_covering(coverage: RowCoverage, mutant: Mutant) -> list[int]:
    """The rows whose clean run executed a line of ``mutant`` (a row without coverage always runs)."""
    wanted = set(mutant.lines)
    return [line for line, lines in coverage.items() if lines is None or wanted & lines.get(mutant.file, set())]


def _row_timeout(record: GoldTest, cap: float) -> float:
    return min(cap, max(MIN_TIMEOUT, TIMEOUT_FACTOR * record.runtime_seconds))


@dataclass
class _Result:
    clean_passed: bool = False
    verdicts: dict[str, str] = field(default_factory=dict)
    infrastructure: set[str] = field(default_factory=set)
    empty_not_passing: bool = False
    stripped: set[str] | None = None
    stripped_not_passing: bool = False
    stripped_targets: list[StepDefRef] = field(default_factory=list)
    runs: int = 0
    build_failures: list[str] = field(default_factory=list)


def run_mutation_stage(framework: Any, project: JavaProject, side: Any, instances: list[Instance],
                       gold: dict[str, GoldTest], row_coverage: dict[str, RowCoverage], javac: JavacPool,
                       archive: Path | None, timeout: float, workers: int, progress: Progress,
                       tmp: Path) -> tuple[list[Mutant], dict[str, GoldTest], dict[str, Any]]:
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

    def pool_over(test_dirs: list[str]) -> WarmRunnerPool:
        return WarmRunnerPool(warm_suite(project.dependencies, [*test_dirs, *production_dirs], work, settings.glue,
                                         settings.tags, switch_field=SWITCH_FIELD, java=project.java,
                                         archive=archive))

    ground_truth = pool_over([str(project.test_classes)])
    pools = {inst.id: pool_for(mutants, gold[inst.id].covered_lines) for inst in instances}
    scratch = tmp / "mutation-out"

    def run_rows(runner: WarmRunnerPool, inst: Instance, number: int, row_timeout: float,
                 rows: list[int] | None = None) -> RunVerdict:
        for line in inst.requirement.run_lines if rows is None else rows:
            run = runner.run(inst.requirement.feature_file, line, scratch / secrets.token_hex(8), number, row_timeout)
            verdict = run_verdict(run)
            if verdict is not RunVerdict.survived:
                return verdict
        return RunVerdict.survived

    def variant(files: dict[str, str]) -> WarmRunnerPool | str:
        """The warm runners of a calibration test (its glue compiled), or javac's complaint."""
        compiled = compile_variant(project, files, tmp / "mutation-variants" / secrets.token_hex(6), javac)
        if not compiled.compile.ok:
            return compiled.compile.output.strip()[:300]
        return pool_over([str(compiled.classes), str(project.resources)])

    def judge_instance(inst: Instance) -> _Result:
        record = gold[inst.id]
        row_timeout = _row_timeout(record, timeout)
        result = _Result()
        result.clean_passed = run_rows(ground_truth, inst, 0, row_timeout) is RunVerdict.survived
        result.runs += 1
        if not result.clean_passed:
            progress.advance()
            return result
        coverage = row_coverage.get(inst.id) or {line: None for line in inst.requirement.run_lines}
        for mutant in pools[inst.id]:
            verdict = run_rows(ground_truth, inst, schemata.numbers[mutant.id], row_timeout,
                               rows_covering(coverage, mutant))
            result.runs += 1
            result.verdicts[mutant.id] = str(verdict)
        kills = {m for m, v in result.verdicts.items() if v == RunVerdict.killed}
        if kills:
            sites = [s for s in side.sites() if (s.file, s.line) in {(d.file, d.line) for d in record.step_definitions}]
            kinds: dict[str, set[str]] = {}
            for binding in record.bindings:
                kinds.setdefault(f"{binding.binding.file}:{binding.binding.line}", set()).add(binding.role)
            files = calibration_files(side, sites, kinds)
            empty = variant(files["empty"])
            if isinstance(empty, str):
                result.build_failures.append(f"empty test of {inst.id}: {empty}")
                result.empty_not_passing = True
            else:
                result.empty_not_passing = run_rows(empty, inst, 0, row_timeout) is not RunVerdict.survived
                result.runs += 1
                if not result.empty_not_passing:
                    for mutant_id in sorted(kills):
                        verdict = run_rows(empty, inst, schemata.numbers[mutant_id], row_timeout,
                                           rows_covering(coverage, by_id[mutant_id]))
                        result.runs += 1
                        if verdict is RunVerdict.killed:
                            result.infrastructure.add(mutant_id)
                empty.close()
            remaining = kills - result.infrastructure
            if remaining and files["then-stripped"] != files["oracle"]:
                changed = {rel for rel, text in files["then-stripped"].items() if text != files["oracle"].get(rel)}
                refs = {b.binding.key: b.binding for b in record.bindings
                        if b.role == "then" and b.binding.file in changed}
                result.stripped_targets = [refs[k] for k in sorted(refs)]
                stripped = variant(files["then-stripped"])
                if isinstance(stripped, str):
                    result.build_failures.append(f"then-stripped test of {inst.id}: {stripped}")
                    result.stripped, result.stripped_not_passing = set(), True
                else:
                    result.runs += 1
                    if run_rows(stripped, inst, 0, row_timeout) is not RunVerdict.survived:
                        result.stripped, result.stripped_not_passing = set(), True
                    else:
                        result.stripped = set()
                        for mutant_id in sorted(remaining):
                            verdict = run_rows(stripped, inst, schemata.numbers[mutant_id], row_timeout,
                                               rows_covering(coverage, by_id[mutant_id]))
                            result.runs += 1
                            if verdict is RunVerdict.killed:
                                result.stripped.add(mutant_id)
                    stripped.close()
        progress.advance()
        return result

    progress.stage(f"mutant runs ({len(mutants)} mutants in one schemata build, warm JVMs, a class loader per run)",
                   len(instances))
    order = sorted(instances, key=lambda i: -len(pools[i.id]))
    try:
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            results = dict(zip((i.id for i in order), pool.map(judge_instance, order)))
    finally:
        ground_truth.close()
        shutil.rmtree(scratch, ignore_errors=True)
    timed("runs")

    updated: dict[str, GoldTest] = {}
    for inst in instances:
        result = results[inst.id]
        kills = {m for m, v in result.verdicts.items() if v == RunVerdict.killed} if result.clean_passed else set()
        kills -= result.infrastructure
        dependent = sorted(kills - result.stripped) if result.stripped is not None else []
        hidden = [(h.file, h.def_line, h.body_end) for h in inst.view.target_hidden]
        updated[inst.id] = gold[inst.id].model_copy(update={
            "pool": sorted(m.id for m in pools[inst.id]),
            "kills": sorted(kills),
            "excluded_mutants": {m: v for m, v in sorted(result.verdicts.items()) if v in INFRASTRUCTURE},
            "assertion_dependent": dependent,
            "hidden_kills": sorted(k for k in kills if any(by_id[k].file == f and a <= by_id[k].line <= b
                                                           for f, a, b in hidden)),
            "then_stripped_targets": result.stripped_targets if result.stripped is not None else [],
            "infrastructure_kills": sorted(result.infrastructure),
        })
    verdicts = Counter(v for r in results.values() for v in r.verdicts.values())
    summary: dict[str, Any] = {
        "generator": "req2test Java mutants (tree-sitter-java, behave's operator families, PIT's names) compiled "
                     "as mutant schemata; runs in a warm JVM, a class loader per run",
        "mutants_generated": len(generated),
        "mutated_files": len(covered_files),
        **mutation_statistics(mutants, instances, updated),
        "mutants_dropped_by_compiler": len(schemata.dropped),
        "schemata_builds": schemata.builds,
        "schemata_seconds": round(schemata.seconds, 1),
        "infrastructure_kills": sum(len(r.infrastructure) for r in results.values()),
        "instances_with_infrastructure_kills": sum(1 for r in results.values() if r.infrastructure),
        "empty_test_not_passing": sum(1 for r in results.values() if r.empty_not_passing),
        "then_stripped_not_passing": sum(1 for r in results.values() if r.stripped_not_passing),
        "schemata_clean_not_passing": sorted(i for i, r in results.items() if not r.clean_passed),
        "ground_truth_verdicts": dict(sorted(verdicts.items())),
        "runs": sum(r.runs for r in results.values()),
        "warm_runner_restarts": ground_truth.restarts,
        "build_failures": [f for r in results.values() for f in r.build_failures][:20],
        "phase_seconds": timed.seconds,
        "covered_lines": "JaCoCo's covered lines of the traced run less what loading the suite covers",
    }
    return mutants, updated, summary


def fresh_check(framework: Any, project: JavaProject, instances: list[Instance], gold: dict[str, GoldTest],
                mutants: dict[str, Mutant], timeout: float, workers: int, progress: Progress) -> dict[str, Any]:
    """Replay a sample of the warm schemata verdicts as plain recompiles with the mutant on disk,
    every row in a fresh JVM (``CucumberJvmFramework.fresh_run``)."""
    rng = random.Random(0)
    kills = [(i, m) for i in instances for m in gold[i.id].kills]
    survivors = [(i, m) for i in instances for m in gold[i.id].pool
                 if m not in gold[i.id].kills and m not in gold[i.id].excluded_mutants
                 and m not in gold[i.id].infrastructure_kills]
    sample = rng.sample(kills, min(len(kills), FRESH_SAMPLE // 2))
    sample += rng.sample(survivors, min(len(survivors), FRESH_SAMPLE - len(sample)))
    progress.stage(f"fresh-process check ({len(sample)} pairs, a plain recompile and fresh JVMs each)", len(sample))

    def replay(pair: tuple[Instance, str]) -> tuple[str, str, str]:
        inst, mutant_id = pair
        req = inst.requirement
        fresh = framework.fresh_run(project.root, [], req.feature_file, req.run_lines, mutants[mutant_id],
                                    _row_timeout(gold[inst.id], timeout), "")
        expected = "killed" if mutant_id in gold[inst.id].kills else "survived"
        progress.advance()
        return inst.id, mutant_id, f"{expected}/{fresh.verdict}"

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        outcomes = list(pool.map(replay, sample))
    disagreements = [f"{i} {m}: schemata/fresh = {v}" for i, m, v in outcomes if v.split("/")[0] != v.split("/")[1]]
    return {"sampled": len(outcomes), "kills_sampled": sum(1 for *_, v in outcomes if v.startswith("killed")),
            "agree": len(outcomes) - len(disagreements), "disagreements": disagreements,
            "seconds": round(time.perf_counter() - started, 1)}


__all__ = ["FRESH_SAMPLE", "RowCoverage", "fresh_check", "rows_covering", "run_mutation_stage"]
