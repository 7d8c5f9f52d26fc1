"""Calibration agents: they write a test derived from the ground truth, or none at all.

For checking the pipeline only — what a run measures when the agent is perfect (oracle),
writes steps that do nothing (empty), checks nothing (then-stripped), or delivers nothing
(none). The oracle and its relatives read the ground truth, so they are refused in any
run marked for submission (``uses_ground_truth``).
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from bench.dataset import Dataset, load_dataset
from harness.agents.base import AgentEnv, AgentResult, AgentTask


class CalibrationAgent:
    """What it writes is read from the dataset once, on first use (an agent is loaded per generation
    unit, and most units need one instance's or one suite's files, not every one's)."""

    uses_ground_truth = True

    def __init__(self, kind: str, dataset_dir: Path) -> None:
        self.kind = kind
        self.name = f"calibration:{kind}"
        self.dataset_dir = Path(dataset_dir)

    def run(self, task: AgentTask, env: AgentEnv) -> AgentResult:
        if task.takeover is not None:
            return self._deliver_takeover(task, env)
        if task.suite is not None and task.suite.kind == "implementation":
            files = self._production(task)
        elif task.suite is not None:
            files = self._suite_files(task.suite.suite_id)
            if task.suite.specification == "documentation":
                files = {**files, **self._authored_feature(task.instance.project, task.suite.feature_file,
                                                           task.suite.authored_dir)}
        else:
            files = self.files_by_instance.get(task.instance.id, {})
        for path, text in sorted(files.items()):
            env.sandbox.write_file(path, text)
            env.trajectory.add("tool", name="write_file", arguments={"path": path}, output=f"{len(text)} characters")
        env.trajectory.add("end", reason="finished")
        return AgentResult(reason="finished", summary=f"{self.kind}: wrote {len(files)} files")

    @cached_property
    def dataset(self) -> Dataset:
        return load_dataset(self.dataset_dir)

    @cached_property
    def files_by_instance(self) -> dict[str, dict[str, str]]:
        from bench.calibrate import calibration_predictions

        return {p.instance_id: p.files for p in calibration_predictions(self.dataset_dir)[self.kind]}

    def _deliver_takeover(self, task: AgentTask, env: AgentEnv) -> AgentResult:
        """The takeover oracle: the production tree exactly as the commit left it (files the commit
        deleted are deleted too)."""
        if self.kind != "oracle":
            raise ValueError(f"the takeover task has the oracle and none calibrations, not {self.kind}")
        from bench.history.takeover import TakeoverSet
        from bench.suite.reverse import production_sources

        assert task.takeover is not None
        takeover = TakeoverSet(self.dataset_dir)
        target = takeover.target(task.takeover.target_id)
        dataset = load_dataset(takeover.dataset_dir(target))
        snapshot = dataset.root / dataset.project(target.project).snapshot
        wanted = {p: (snapshot / p).read_text(encoding="utf-8") for p in production_sources(snapshot, target.production)}
        workspace = env.opened.workspace.root
        stale = [p for p in production_sources(workspace, target.production) if p not in wanted]
        for path in stale:
            env.sandbox.exec(["rm", "-f", path])
            env.trajectory.add("tool", name="run", arguments={"command": f"rm -f {path}"}, output="")
        for path, text in sorted(wanted.items()):
            env.sandbox.write_file(path, text)
        env.trajectory.add("tool", name="write_file", arguments={"paths": len(wanted)}, output="production tree")
        env.trajectory.add("end", reason="finished")
        return AgentResult(reason="finished", summary=f"oracle: the commit's {len(wanted)} production files, "
                                                      f"{len(stale)} removed")

    def _production(self, task: AgentTask) -> dict[str, str]:
        """The reverse task's calibration: the oracle restores the real production sources; the
        others have no meaning there (an empty implementation is the view as it is: agent none)."""
        if self.kind != "oracle":
            raise ValueError(f"the reverse task has the oracle and none calibrations, not {self.kind}")
        from bench.suite.reverse import production_sources

        project = self.dataset.project(task.instance.project)
        snapshot = self.dataset.root / project.snapshot
        return {p: (snapshot / p).read_text(encoding="utf-8") for p in production_sources(snapshot, project.production)}

    def _authored_feature(self, project: str, feature_file: str, area: str) -> dict[str, str]:
        """The documentation ablation's calibrations write the developers' feature file as their own
        (under the authored directory) next to their step files: the oracle must then score 1."""
        snapshot = self.dataset.root / self.dataset.project(project).snapshot
        return {f"{area}/{Path(feature_file).name}": (snapshot / feature_file).read_text(encoding="utf-8")}

    def _suite_files(self, suite_id: str) -> dict[str, str]:
        """The reference suite of one feature (bench.suite.calibration), not a union of per-scenario
        files: then-stripped must strip every scenario's Then steps at once."""
        from bench.suite.calibration import suite_calibration_files
        from bench.suite.instances import suite_instances

        suite = next(s for s in suite_instances(self.dataset) if s.id == suite_id)
        return suite_calibration_files(self.dataset, suite, self.dataset.load_gold())[self.kind]


class NoneAgent:
    """Writes nothing: every instance is a generation failure (the floor of a run)."""

    name = "calibration:none"
    uses_ground_truth = False

    def run(self, task: AgentTask, env: AgentEnv) -> AgentResult:
        env.trajectory.add("end", reason="finished")
        return AgentResult(reason="finished", summary="wrote nothing")


def calibration_agent(kind: str, dataset_dir: Path) -> CalibrationAgent | NoneAgent:
    if kind == "none":
        return NoneAgent()
    from bench.calibrate import CALIBRATIONS

    if kind not in CALIBRATIONS:
        raise ValueError(f"unknown calibration agent {kind!r}: oracle, empty, then-stripped or none")
    return CalibrationAgent(kind, dataset_dir)
