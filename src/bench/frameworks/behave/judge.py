"""behave's ``Judge``: every prediction runs in sandboxed warm workers of its own
(``eval_sandbox`` + ``eval_worker``), decided by the verdict process (``verdict``).

One judge per project of a dataset: its submission check (the test area), the production
index that names the API the traced run called, the mutant manifest, and the sandbox base
(production copied without any ground-truth code, in this session's behaviour-preserving
rewrite), made once on first need and shared by the judging threads.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import replace

from bench.frameworks.behave.evalspace import ProjectBase, build_base
from bench.frameworks.behave.verdict import VerdictOptions, judge
from bench.frameworks.protocol import Framework
from bench.judging import Judge, JudgeContext, Judgement
from bench.model import GoldTest, Instance, Prediction
from bench.mutation.executor import load_manifest
from bench.production_index import ProductionIndex


class EnvironmentUnavailable(Exception):
    """The project's own environment cannot be made (one line)."""


class BehaveJudge(Judge):
    traces = True
    # behave's results have always scored a generation failure as 0 on every metric
    failures_scored_by_gold = False

    def __init__(self, framework: Framework, context: JudgeContext) -> None:
        self.context = context
        project, options = context.project, context.options
        self.snapshot = context.project_snapshot
        area = framework.test_area(self.snapshot, project.features_dir)
        self.area = replace(area, authored_dirs=(context.authored_dir,)) if context.authored_dir else area
        self.index = ProductionIndex(self.snapshot, project.production)
        self.manifest = load_manifest(context.dataset_root, project.name) if options.mutants else {}
        self.verdict_options = VerdictOptions(timeout=options.timeout, mutants=options.mutants,
                                              replays=options.replays, isolation=options.isolation,
                                              seed=options.seed, untrusted_production=context.snapshot is not None)
        self._python: str | None = None
        self._base: ProjectBase | None = None
        self._base_lock = threading.Lock()

    def prepare(self) -> None:
        """The project's own environment (made here from the requirements its card records),
        before any judging thread needs it: a failure is the run's, not one instance's."""
        self._interpreter()

    def rejections(self, files: dict[str, str]) -> list[str]:
        return self.area.rejections(files)

    def unusable(self, files: dict[str, str]) -> str | None:
        if any(path.endswith(".py") and content.strip() for path, content in files.items()):
            return None
        return "no usable test code (no non-empty .py file)"

    def judge(self, inst: Instance, prediction: Prediction, gold: GoldTest) -> Judgement:
        return judge(inst, prediction, gold, self.manifest, self.base(), self.context.tmp, self.verdict_options,
                     self.index)

    def base(self) -> ProjectBase:
        with self._base_lock:  # judged from several threads; built once
            if self._base is None:
                project = self.context.project
                self._base = build_base(self.snapshot, self.context.tmp / f"base-{_safe(project.name)}",
                                        project.features_dir, project.python_path, project.production,
                                        self.area.fixed_paths, set(self.context.gold_files), project.framework,
                                        diversify_seed=self._diversify_seed(), python=self._interpreter())
            return self._base

    def _diversify_seed(self) -> int | None:
        """A fresh seed per evaluation session (a fixed one derived from ``seed`` when given)."""
        if not self.context.options.diversify:
            return None
        from bench.mutation.diversify import session_seed

        return session_seed(self.context.options.seed)

    def _interpreter(self) -> str:
        """The interpreter of the project's own environment, else this one."""
        if self._python is None:
            project = self.context.project
            if not project.environment:
                self._python = sys.executable
            else:
                from bench.environments import EnvironmentSetupError, ensure_environment

                try:
                    self._python = str(ensure_environment(project.environment))
                except EnvironmentSetupError as exc:
                    raise EnvironmentUnavailable(f"{project.name}: {exc}") from exc
        return self._python


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
