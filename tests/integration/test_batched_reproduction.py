"""Reproductions share a child (several kills swapped in and out in turn); the verdict must
not change with a test that carries state from one run to the next in that child."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from bench.calibrate import calibration_predictions
from bench.dataset import load_dataset
from bench.frameworks.behave.evalspace import build_base
from bench.frameworks.behave.verdict import VerdictOptions, _Session, judge
from bench.frameworks.registry import get_framework
from bench.isolation import resolve_mode
from bench.model import Outcome, Prediction
from bench.mutation.executor import load_manifest
from bench.production_index import ProductionIndex
from tests.adversarial.attacks import ADD, GIVEN_WHEN, STEPS

pytestmark = pytest.mark.integration

# Correct on its first run in a process; a later run in the same process checks nothing,
# so a kill can only show again in a pristine child.
CHECKS_ONCE_PER_PROCESS = GIVEN_WHEN + '''

_RUNS = []


@then("the total is {n:d}")
def then_total(context, n):
    _RUNS.append(n)
    if len(_RUNS) == 1:
        assert context.calc.total == n
'''

# Correct, and fails every run after its first in a process, clean runs included.
FAILS_AFTER_FIRST_RUN = GIVEN_WHEN + '''

_RUNS = []


@then("the total is {n:d}")
def then_total(context, n):
    _RUNS.append(n)
    assert len(_RUNS) == 1, "a second run in this process"
    assert context.calc.total == n
'''


def _judge(dataset: Path, files: dict[str, str], tmp: Path):
    data = load_dataset(dataset)
    project = data.card.projects[0]
    gold = data.load_gold()
    snapshot = dataset / project.snapshot
    area = get_framework("behave").test_area(snapshot, project.features_dir)
    gold_files = {f.path for g in gold.values() for f in g.closure if f.role != "data"}
    base = build_base(snapshot, tmp / "base", project.features_dir, project.python_path, project.production,
                      area.fixed_paths, gold_files)
    inst = next(i for i in data.instances if i.id == ADD)
    manifest = load_manifest(dataset, project.name)
    options = VerdictOptions(isolation=resolve_mode("auto"), seed=5, timeout=30.0)
    index = ProductionIndex(snapshot, project.production)
    return (judge(inst, Prediction(instance_id=ADD, files=files), gold[ADD], manifest, base, tmp, options, index),
            gold[ADD])


def test_the_oracle_reproduces_in_shared_children(mini_dataset: Path, tmp_path: Path) -> None:
    oracle = {p.instance_id: p for p in calibration_predictions(mini_dataset)["oracle"]}[ADD]
    judgement, gold = _judge(mini_dataset, oracle.files, tmp_path)
    assert judgement.outcome is Outcome.passed
    assert set(gold.kills) and set(gold.kills) <= judgement.kills
    assert "reproduced_pristine" not in judgement.confirmation  # every kill showed again in a shared child


@pytest.mark.parametrize("source", [CHECKS_ONCE_PER_PROCESS, FAILS_AFTER_FIRST_RUN],
                         ids=["checks-once-per-process", "fails-after-first-run"])
def test_state_carried_between_runs_changes_nothing(mini_dataset: Path, tmp_path: Path, source: str) -> None:
    judgement, gold = _judge(mini_dataset, {STEPS: source}, tmp_path)
    assert judgement.outcome is Outcome.passed, judgement.detail
    assert set(gold.kills) <= judgement.kills
    # what the shared children hid or broke was decided in pristine ones
    assert judgement.confirmation.get("reproduced_pristine", 0) >= 1


def test_batched_runs_agree_with_pristine_runs_on_the_example(example_dataset: Path, tmp_path: Path) -> None:
    """The real worker: every pool mutant of a tinyshop instance, batched vs one child each."""
    data = load_dataset(example_dataset)
    project = data.card.projects[0]
    gold = data.load_gold()
    manifest = load_manifest(example_dataset, project.name)
    oracle = {p.instance_id: p for p in calibration_predictions(example_dataset)["oracle"]}
    snapshot = example_dataset / project.snapshot
    area = get_framework("behave").test_area(snapshot, project.features_dir)
    gold_files = {f.path for g in gold.values() for f in g.closure if f.role != "data"}
    base = build_base(snapshot, tmp_path / "base", project.features_dir, project.python_path, project.production,
                      area.fixed_paths, gold_files)
    inst = max((i for i in data.instances if gold[i.id].kills), key=lambda i: len(gold[i.id].pool))
    session = _Session(inst, oracle[inst.id], gold[inst.id], manifest, base, tmp_path,
                       VerdictOptions(isolation=resolve_mode("auto"), seed=1), random.Random(1),
                       ProductionIndex(snapshot, project.production))
    try:
        session.start_warm()
        assert session.traced()["exit"] == "ok"
        pool = [manifest[m] for m in gold[inst.id].pool if m in manifest]
        pristine, _ = session._batch(session._warm_runs, pool, 5.0, "pristine")
        shared, _ = session._batch(session._batched_warm_runs, pool, 5.0, "shared")
    finally:
        session.cleanup()
    assert pristine == shared
    assert {m for m, v in pristine.items() if v == "killed"} >= set(gold[inst.id].kills) - {
        m for m in gold[inst.id].pool if m not in pristine}
