"""Reading a run in code: ``read_run(path) -> Run``, the typed view of everything a run directory holds.

What inspect_ai's ``read_eval_log`` is to its logs, for the three layouts ``bench.runs`` reads
(a ``req2test run`` directory, a ``req2test evaluate`` one, a directory of evaluate runs)::

    from bench.runlog import read_run

    run = read_run("runs/demo/ab")
    print("baseline:", run.baseline, f"({run.baseline_reason})")
    for arm in run.arms:
        for config in run.arm(arm):
            kc = config.summary.kill_complete_at_1.value if config.summary else None
            print(config.name, kc)

A ``Run`` holds its configurations in the experiment's arm order (``bench.runs.ConfigData``: the
config.json record, per-instance ``InstanceResult``s, the predictions, summary.json's ``RunSummary``),
the arm the report's paired tests compare every other arm against, and where each instance's detail
lies (``Run.detail``: result, prediction, trajectory file). The arm order and the baseline come from
the run's root ``plan.json``, which ``req2test run`` writes (``arms``, ``baseline``); a directory
without one (evaluate outputs, runs of older versions) falls back to the configurations' names.
Nothing here writes a file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from bench.model import InstanceResult, Prediction
from bench.runs import (
    ConfigData,
    Layout,
    RunsError,
    config_dir_name,
    load_configs,
    prefixed,
    read_results_file,
    run_labels,
    run_layout,
)

PLAN_FILE = "plan.json"  # written by `req2test run` at the run's root (harness.experiment.plan.ExperimentPlan)


class ArmOrder(BaseModel):
    """What a run directory records about its arms: their order and the report's baseline."""

    arms: list[str] = Field(description="arm names in the experiment's order")
    baseline: str | None = Field(description="the arm every other arm is compared against")
    reason: str = Field(description="why that arm, as the report says it")


class InstanceDetail(BaseModel):
    """One instance of one configuration and the files that explain it."""

    config: str
    instance_id: str
    result: InstanceResult
    prediction: Prediction | None = Field(description="None when predictions.jsonl lacks the instance")
    candidate: int = Field(description="which of the arm's candidates the configuration reported (1-based)")
    trajectory: str | None = Field(description="the agent's trajectory (JSONL) where one was found")


class Run(BaseModel):
    """A run directory, read."""

    path: str
    name: str = Field(description="the experiment's name (plan.json), else the directory's")
    layout: Layout
    dataset: str | None = Field(description="the dataset directory the run scored against, where recorded")
    arms: list[str] = Field(description="arm names in the experiment's order (else in the configurations' order)")
    baseline: str | None = Field(description="the arm the report's paired tests compare every other arm against")
    baseline_reason: str
    configs: list[ConfigData] = Field(description="in arm order; each arm's own config before its selectors")

    def config(self, name: str) -> ConfigData:
        """The configuration ``name`` (as reported, or as its run named it, or as its directory spells it)."""
        for config in self.configs:
            if name in (config.name, config.record.name, config_dir_name(config.record.name)):
                return config
        raise RunsError(f"{self.path}: no configuration {name!r}; available: "
                        f"{', '.join(c.name for c in self.configs)}")

    def arm(self, name: str) -> list[ConfigData]:
        """Every configuration of arm ``name``: each view and epoch, its selectors' picks and ``/single``."""
        if name not in self.arms:
            raise RunsError(f"{self.path}: no arm {name!r}; arms: {', '.join(self.arms)}")
        return [c for c in self.configs if c.record.arm == name]

    def results(self, config: str) -> dict[str, InstanceResult]:
        """A configuration's results by instance id."""
        return {r.instance_id: r for r in self.config(config).results}

    def detail(self, config: str, instance_id: str) -> InstanceDetail:
        """One instance of one configuration: its result, prediction and trajectory file."""
        data = self.config(config)
        result = next((r for r in data.results if r.instance_id == instance_id), None)
        if result is None:
            raise RunsError(f"{data.name}: no result for instance {instance_id!r}")
        prediction = data.predictions.get(instance_id)
        metadata = prediction.metadata if prediction is not None else result.metadata
        candidate = int(metadata.extra.get("candidate", 1) or 1)
        trajectory = trajectory_file(data, instance_id, candidate)
        return InstanceDetail(config=data.name, instance_id=instance_id, result=result, prediction=prediction,
                              candidate=candidate, trajectory=str(trajectory) if trajectory else None)


# ----------------------------------------------------------------------------- reading
def read_run(path: Path | str, label: str | None = None) -> Run:
    """Read a run directory; ``label``: prefix its configurations ``LABEL:CONFIG`` (what ``read_runs`` does
    when several runs are read together). A problem with the directory is a one-line ``RunsError``."""
    path = Path(path)
    configs = load_configs(path)
    if label is not None:
        configs = prefixed(configs, label)
    layout = run_layout(path)
    assert layout is not None  # load_configs refused the directory otherwise
    order = arm_order(path)
    if order is None:
        arms = list(dict.fromkeys(c.record.arm for c in configs))
        order = ArmOrder(arms=arms, baseline=arms[0] if arms else None,
                         reason=f"first by name: {path} records no arm order (no {PLAN_FILE})")
    else:  # arms the plan does not list (a hand-added configuration) come after its own, by name
        order = order.model_copy(update={"arms": order.arms + [a for a in dict.fromkeys(c.record.arm for c in configs)
                                                               if a not in order.arms]})
    rank = {arm: i for i, arm in enumerate(order.arms)}
    configs = sorted(configs, key=lambda c: rank[c.record.arm])  # stable: by name within an arm
    plan = _plan(path) or {}
    return Run(path=str(path), name=str(plan.get("name") or path.resolve().name), layout=layout,
               dataset=str(directory) if (directory := _recorded_dataset(path)) else None, arms=order.arms,
               baseline=order.baseline, baseline_reason=order.reason, configs=configs)


def read_runs(paths: list[Path]) -> list[Run]:
    """Several run directories in the order given; with more than one, each configuration is named
    ``RUN:CONFIG`` (RUN: its directory's name), as ``req2test report RUN RUN…`` names them."""
    if len(paths) == 1:
        return [read_run(paths[0])]
    return [read_run(path, label) for path, label in zip(paths, run_labels(paths))]


def read_results(path: Path | str) -> list[InstanceResult]:
    """The results of a results.jsonl, or of the directory holding one: each instance's last record
    (a torn last line, a killed evaluation's, is left out)."""
    path = Path(path)
    if path.is_dir():
        path = path / "results.jsonl"
    if not path.is_file():
        raise RunsError(f"{path}: no such results file")
    return read_results_file(path)


def arm_order(path: Path) -> ArmOrder | None:
    """The arm order and baseline ``path/plan.json`` records; None for a directory without one.

    plan.json of older versions lists the arms only inside the experiment; their order is that one."""
    plan = _plan(path)
    if plan is None:
        return None
    raw_experiment = plan.get("experiment")
    experiment = raw_experiment if isinstance(raw_experiment, dict) else {}
    arms = [str(a) for a in plan.get("arms") or []] or \
        [str(a["name"]) for a in experiment.get("arms") or [] if isinstance(a, dict) and "name" in a]
    if not arms:
        return None
    named = experiment.get("baseline")
    baseline = str(named or plan.get("baseline") or arms[0])
    return ArmOrder(arms=arms, baseline=baseline,
                    reason="the experiment's `baseline:`" if named else "the experiment's first arm")


def _plan(path: Path) -> dict[str, Any] | None:
    file = path / PLAN_FILE
    try:
        data = json.loads(file.read_text(encoding="utf-8")) if file.is_file() else None
    except (OSError, ValueError):
        return None  # not one of ours: read the directory as if it had none
    return data if isinstance(data, dict) else None


def _recorded_dataset(path: Path) -> Path | None:
    return _first_dataset([(path / PLAN_FILE, "dataset_dir"), (path / "run.json", "dataset")])


def _first_dataset(places: list[tuple[Path, str]]) -> Path | None:
    """The first existing dataset directory named by one of these (file, key) places."""
    for file, key in places:
        try:
            value = json.loads(file.read_text(encoding="utf-8")).get(key) if file.is_file() else None
        except (OSError, ValueError, AttributeError):
            continue
        if value and Path(value).is_dir():
            return Path(value)
    return None


# ----------------------------------------------------------------------------- per-instance files
def instance_file_name(instance_id: str) -> str:
    """A file-name-safe spelling of an instance id (trajectory directories, explorer pages)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", instance_id)


def dataset_dir(config: ConfigData) -> Path | None:
    """The dataset a configuration scored against: plan.json (req2test run) or run.json (req2test evaluate,
    beside the results or at the run's root)."""
    run = Path(config.run)
    return _first_dataset([(run / PLAN_FILE, "dataset_dir"), (Path(config.directory) / "run.json", "dataset"),
                           (run / "run.json", "dataset")])


def trajectory_file(config: ConfigData, instance_id: str, candidate: int = 1) -> Path | None:
    """The trajectory of one instance's generation, where ``req2test run``
    (``generations/<arm>@<view>/c<k>/trajectories``) or ``req2test generate`` (``trajectories/`` beside
    predictions.jsonl) wrote it; the last attempt's when there were several."""
    name = instance_file_name(instance_id)
    record = config.record
    places = [Path(config.run) / "generations" / record.generations / f"c{candidate}" / "trajectories" / name,
              Path(config.directory) / "trajectories" / name / f"c{candidate}",
              Path(config.directory) / "trajectories" / name,
              Path(config.directory).parent / "trajectories" / name]
    for place in places:
        files = sorted(place.glob("*.jsonl"), key=lambda p: p.stat().st_mtime) if place.is_dir() else []
        if files:
            return files[-1]  # the last attempt is the one that produced the prediction
    return None
