"""A toy BDD framework that lives entirely in this package: the proof that a framework is
added through the protocol alone (``bench.frameworks.protocol``) plus an entry point, with no
edit anywhere in ``src/`` (``tests/integration/test_toy_framework.py`` builds, evaluates,
calibrates and views a project of it).

The runner is ``toyrun.py``: step functions ``@step("regex")`` in ``features/toysteps/*.py``,
one fresh process per run. Production is Python (``PythonLanguage``: its mutants, its hider).
Everything is measured the slow, obviously right way: every clean run and every mutant run is a
new process on a copy of the project with the mutant written to disk.
"""

from __future__ import annotations

import ast
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from bench.builder.pipeline import (
    BuildError,
    BuildOptions,
    StageTimer,
    collect_candidates,
    id_order,
    write_dataset,
)
from bench.frameworks.protocol import (
    Builder,
    Framework,
    FreshVerdict,
    Language,
    PromptTerms,
    TestAreaSpec,
    TestSideView,
)
from bench.gherkin_reader import FeatureFile
from bench.judging import DETECTED, Judge, JudgeContext, Judgement, RunVerdict, UnsupportedByFramework
from bench.languages.python import PythonLanguage
from bench.model import (
    ClosureFile,
    DatasetCard,
    Exclusion,
    GoldTest,
    Instance,
    Mutant,
    Outcome,
    Prediction,
    TestLevel,
    ValidationRecord,
    ViewSpec,
)
from bench.mutation.executor import load_manifest
from bench.progress import Progress
from bench.project import ProjectSource

TOYRUN = str(Path(__file__).with_name("toyrun.py"))
STEPS_DIR = "features/toysteps"


class ToyFramework(Framework):
    name: ClassVar[str] = "toy"
    language: ClassVar[Language] = PythonLanguage()
    runner_config_files: ClassVar[frozenset[str]] = frozenset({"toy.ini"})

    def prompt_terms(self) -> PromptTerms:
        return PromptTerms(runner="toyrunner", language="Toyscript", step_definitions="toy step glue",
                           hooks_file="hooks.toy", code_fence="toy", run_example="toyrunner run ...")

    def version(self) -> str:
        return "0.1"

    def runtime_packages(self) -> list[str]:
        return []

    def run_command(self, feature: str, lines: list[int], *, stop: bool = False,
                    report: str | None = None) -> list[str]:
        return [TOYRUN, *[f"{feature}:{line}" for line in lines]]

    def dry_run_command(self, features_dir: str) -> list[str]:
        return [TOYRUN]

    def parser_differences(self, root: Path, feature: FeatureFile) -> list[str]:
        return []  # toyrun parses with the reference reader itself

    def fresh_run(self, root: Path, python_path: list[str], feature: str, lines: list[int],
                  mutant: Mutant | None, timeout: float, python: str) -> FreshVerdict:
        with tempfile.TemporaryDirectory(prefix="toy-run-") as tmp:
            work = Path(tmp) / "root"
            shutil.copytree(root, work, ignore=shutil.ignore_patterns("__pycache__"))
            if mutant is not None:
                target = work / mutant.file
                target.write_text(self.language.apply_mutant(target.read_text(encoding="utf-8"), mutant),
                                  encoding="utf-8")
            env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1",
                       PYTHONPATH=os.pathsep.join([*(str(work / p) for p in python_path),
                                                   os.environ.get("PYTHONPATH", "")]))
            start = time.perf_counter()
            try:
                proc = subprocess.run([python, *self.run_command(feature, lines)], cwd=work, env=env,
                                      capture_output=True, text=True, timeout=timeout, check=False)
            except subprocess.TimeoutExpired:
                return FreshVerdict(RunVerdict.timeout, time.perf_counter() - start)
            elapsed = time.perf_counter() - start
            verdict = {0: RunVerdict.survived, 1: RunVerdict.killed}.get(proc.returncode, RunVerdict.infra_no_step)
            return FreshVerdict(verdict, elapsed, proc.stderr[-300:])

    # ------------------------------------------------------------------ the test side
    def test_area(self, root: Path, features_dir: str) -> TestAreaSpec:
        return TestAreaSpec(dirs=(STEPS_DIR,), suffixes=(".py",), runner_config_files=self.runner_config_files,
                            language="Python")

    def view_test_side(self, snapshot: Path, features_dir: str, gold_test_files: set[str]) -> TestSideView:
        steps = frozenset(p.relative_to(snapshot).as_posix() for p in (snapshot / STEPS_DIR).glob("*.py"))
        return TestSideView(removed_files=steps, rewritten={}, removed=[], infrastructure=frozenset())

    def calibration_files(self, snapshot: Path, records: list[GoldTest], *,
                          suite: bool = False) -> dict[str, dict[str, str]]:
        if suite or len(records) != 1:
            raise UnsupportedByFramework("toy: no suite calibration")
        files = sorted(f.path for f in records[0].closure)
        oracle = {path: (snapshot / path).read_text(encoding="utf-8") for path in files}
        return {"oracle": oracle,
                "empty": {path: _emptied(text, lambda name: True) for path, text in oracle.items()},
                "then-stripped": {path: _emptied(text, lambda name: name.startswith("then"))
                                  for path, text in oracle.items()}}

    def workspace_links(self, snapshot: Path) -> dict[str, Path]:
        return {}

    # ------------------------------------------------------------------ build and judge
    def builder(self) -> Builder:
        return ToyBuilder(self)

    def judge(self, context: JudgeContext) -> Judge:
        if context.snapshot is not None:
            raise UnsupportedByFramework("toy: no reverse task")
        return ToyJudge(self, context)


def _emptied(source: str, selected) -> str:  # selected: name -> bool
    """Every selected step function's body replaced by ``pass`` (lines kept)."""
    lines = source.splitlines(keepends=True)
    for node in sorted(ast.parse(source).body, key=lambda n: -n.lineno):
        if isinstance(node, ast.FunctionDef) and node.decorator_list and selected(node.name):
            first, last = node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno
            indent = " " * node.body[0].col_offset
            lines[first - 1:last] = [f"{indent}pass\n"] + ["\n"] * (last - first)
    return "".join(lines)


def _copy(root: Path, dest: Path, without: set[str], files: dict[str, str]) -> Path:
    shutil.copytree(root, dest, ignore=shutil.ignore_patterns("__pycache__"))
    for rel in without:
        (dest / rel).unlink(missing_ok=True)
    for rel, text in files.items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_text(text, encoding="utf-8")
    return dest


class ToyBuilder(Builder):
    """Stage by stage, every run a fresh process: clean runs, the negative run without the step
    files, then every mutant against every passing scenario."""

    def __init__(self, framework: ToyFramework) -> None:
        self.framework = framework

    def build(self, source: ProjectSource, out_dir: Path, options: BuildOptions, progress: Progress,
              timer: StageTimer, tmp: Path) -> DatasetCard:
        fw = self.framework
        project = options.name or source.name
        work = tmp / "work"
        shutil.copytree(source.root, work, ignore=shutil.ignore_patterns("__pycache__"))
        steps = sorted(p.relative_to(work).as_posix() for p in (work / STEPS_DIR).glob("*.py"))
        with timer("parse"):
            candidates, exclusions, warnings, features, scenarios = collect_candidates(
                work, source, project, fw, options)
        if not candidates:
            raise BuildError(f"{source.root / source.features_dir} has no runnable scenarios")

        def run(root: Path, req, mutant: Mutant | None = None) -> FreshVerdict:
            return fw.fresh_run(root, source.python_path, req.feature_file, [req.scenario_line], mutant,
                                options.timeout, source.python)

        passing = []
        bare = _copy(work, tmp / "bare", set(steps), {})
        progress.stage("toy runs", len(candidates))
        with timer("validation_runs"):
            for cand in candidates:
                clean = run(work, cand.requirement)
                negative = run(bare, cand.requirement)
                progress.advance()
                if clean.verdict is not RunVerdict.survived:
                    exclusions.append(Exclusion(id=cand.instance_id, reason="isolation_failed", detail=clean.detail))
                elif negative.verdict is RunVerdict.survived:
                    exclusions.append(Exclusion(id=cand.instance_id, reason="validation_negative_passed"))
                else:
                    cand.runtime = clean.elapsed
                    passing.append(cand)
        with timer("mutants"):
            mutants = fw.language.generate_mutants(work, list(source.production))
            progress.stage("toy mutants", len(passing) * len(mutants))
            kills: dict[str, list[str]] = {}
            for cand in passing:
                kills[cand.instance_id] = []
                for mutant in mutants:
                    if run(work, cand.requirement, mutant).verdict in DETECTED:
                        kills[cand.instance_id].append(mutant.id)
                    progress.advance()
        instances, gold = [], {}
        closure = [ClosureFile(path=rel, role="step_definitions",
                               sha256=hashlib.sha256((work / rel).read_bytes()).hexdigest(),
                               lines=len((work / rel).read_text(encoding="utf-8").splitlines())) for rel in steps]
        for cand in passing:
            instances.append(Instance(
                id=cand.instance_id, project=project, requirement=cand.requirement, target_interfaces=[],
                test_level=TestLevel.component, group=cand.instance_id,
                view=ViewSpec(target_hidden=[], hidden_rule="toy: no target bodies",
                              all_hidden_scope=list(source.production))))
            gold[cand.instance_id] = GoldTest(
                instance_id=cand.instance_id, closure=closure, step_definitions=[], bindings=[], api_calls=[],
                target_calls=[], executed_when_then=[], covered_lines={}, data_files=[],
                validation=ValidationRecord(isolation_runs=[True], positive_runs=[True], negative_runs=[False],
                                            negative_initialized=True),
                test_level_evidence=["toy"], runtime_seconds=round(cand.runtime, 4),
                pool=[m.id for m in mutants], kills=kills[cand.instance_id])
        instances.sort(key=lambda i: id_order(i.id))
        return write_dataset(out_dir, project, source, instances, gold, exclusions, timer, options, features,
                             scenarios, 0, warnings, [], mutants, {"mutants": len(mutants)}, "none")


class ToyJudge(Judge):
    """The prediction's step files in place of the ground truth's; a clean run decides the stage,
    then every ground-truth kill is run again (fresh process, mutant on disk)."""

    traces = False  # toyrun measures no coverage and no calls
    failures_scored_by_gold = True

    def __init__(self, framework: ToyFramework, context: JudgeContext) -> None:
        self.framework, self.context = framework, context
        self.snapshot = context.project_snapshot
        area = framework.test_area(self.snapshot, context.project.features_dir)
        self.area = replace(area, authored_dirs=(context.authored_dir,)) if context.authored_dir else area
        self.mutants = load_manifest(context.dataset_root, context.project.name) if context.options.mutants else {}

    def rejections(self, files: dict[str, str]) -> list[str]:
        return self.area.rejections(files)

    def unusable(self, files: dict[str, str]) -> str | None:
        return None if any(text.strip() for text in files.values()) else "no usable test code (no non-empty file)"

    def judge(self, inst: Instance, prediction: Prediction, gold: GoldTest) -> Judgement:
        project, req = self.context.project, inst.requirement
        with tempfile.TemporaryDirectory(prefix="toy-judge-", dir=self.context.tmp) as tmp:
            gold_steps = {f.path for f in gold.closure}
            root = _copy(self.snapshot, Path(tmp) / "root", gold_steps, prediction.files)

            def run(mutant: Mutant | None) -> FreshVerdict:
                return self.framework.fresh_run(root, project.python_path, req.feature_file, [req.scenario_line],
                                                mutant, self.context.options.timeout, sys.executable)

            clean = run(None)
            if clean.verdict is RunVerdict.killed:
                return Judgement(Outcome.assertion_failure, clean.detail)
            if clean.verdict is not RunVerdict.survived:
                return Judgement(Outcome.binding_failure if "undefined" in clean.detail else Outcome.execution_failure,
                                 clean.detail)
            verdicts = {m: run(self.mutants[m]).verdict for m in gold.kills if m in self.mutants}
            return Judgement(Outcome.passed, kills={m for m, v in verdicts.items() if v in DETECTED},
                             verdicts=verdicts, fresh_runs=1 + len(verdicts))
