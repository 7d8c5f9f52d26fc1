"""Every attack of the catalogue (attacks.py) must be defeated by ``req2test evaluate``.

One ``evaluate()`` run per attack (its own run directory, the shared session datasets of
tests/conftest.py): the attacked instance, then — for cross-instance and denial-of-service
attacks — a companion instance with its oracle prediction, on the same single worker.
The expected verdicts are the ones the rebuilt evaluator gives; ``scripts/attack_report.py``
shows what each attack achieved before (/tmp/attack_report_before.md).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.attacks import (
    ADD,
    ATTACKS,
    NEXT,
    Attack,
    AttackRun,
    comparable,
    oracle_files,
    run_attack,
    violations,
)

pytestmark = pytest.mark.integration

TIMEOUT = 10.0
FLAKY_REPEATS = 5  # randomised attacks are evaluated this many times: none may come out kill-complete


@pytest.fixture(scope="module")
def oracles() -> Callable[[Path], dict[str, dict[str, str]]]:
    cache: dict[Path, dict[str, dict[str, str]]] = {}

    def get(dataset: Path) -> dict[str, dict[str, str]]:
        if dataset not in cache:
            cache[dataset] = oracle_files(dataset)
        return cache[dataset]

    return get


@pytest.fixture(scope="module")
def evaluated(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
              oracles: Callable[[Path], dict[str, dict[str, str]]]) -> Callable[[Attack, int], AttackRun]:
    """Evaluate an attack once (per repeat); datasets are built only when an attack needs them."""
    base = tmp_path_factory.mktemp("attacks")
    cache: dict[tuple[str, int], AttackRun] = {}

    def get(attack: Attack, repeat: int = 0) -> AttackRun:
        key = (attack.name, repeat)
        if key not in cache:
            dataset = request.getfixturevalue("mini_dataset" if attack.dataset == "mini" else "example_dataset")
            cache[key] = run_attack(attack, dataset, base / f"{attack.name}-{repeat}", oracles(dataset),
                                    timeout=TIMEOUT)
        return cache[key]

    return get


@pytest.fixture(scope="module")
def alone(mini_dataset: Path, tmp_path_factory: pytest.TempPathFactory,
          oracles: Callable[[Path], dict[str, dict[str, str]]]) -> dict[str, dict[str, Any]]:
    """The oracle predictions of the attacked and the companion instance, each evaluated alone."""
    from bench.evaluate import EvaluateOptions, evaluate

    base = tmp_path_factory.mktemp("alone")
    found = {}
    for instance in (ADD, NEXT):
        path = base / f"{instance.split(':')[-1]}.jsonl"
        path.write_text(json.dumps({"instance_id": instance, "files": oracles(mini_dataset)[instance]}) + "\n",
                        encoding="utf-8")
        run_dir = base / instance.split(":")[-1]
        evaluate(mini_dataset, path, run_dir, EvaluateOptions(workers=1, timeout=TIMEOUT, instances=[instance],
                                                              resamples=50))
        found[instance] = json.loads((run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()[0])
    return found


def test_the_catalogue_covers_every_class() -> None:
    per_class = Counter(a.klass for a in ATTACKS)
    assert len(ATTACKS) >= 28
    assert all(per_class[k] >= 2 for k in range(1, 8)), per_class
    assert len({a.name for a in ATTACKS}) == len(ATTACKS)
    for attack in ATTACKS:
        if attack.klass == 1:  # the tampered test asserts something false
            assert "context.calc.total == 999" in "".join(attack.files.values()), attack.name
        if attack.klass == 3:  # behaviour-free: no assertion at all
            assert "assert " not in "".join(attack.files.values()), attack.name
        if attack.klass == 4:  # no test logic of its own: no step definition, no assertion
            text = "".join(attack.files.values())
            assert "@given" not in text and "@then" not in text and "assert " not in text, attack.name


def test_oracle_of_the_attacked_instance_is_pass_and_kill_complete(alone: dict[str, dict[str, Any]]) -> None:
    """Sanity: the defences must not cost a genuinely correct test its verdict."""
    for instance in (ADD, NEXT):
        record = alone[instance]
        assert record["outcome"] == "pass", record["detail"]
        assert record["kill_complete"] and record["mutant_recall"] == 1.0, record


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: f"c{a.klass}-{a.name}")
def test_attack_is_defeated(attack: Attack, evaluated: Callable[[Attack, int], AttackRun],
                            alone: dict[str, dict[str, Any]]) -> None:
    for repeat in range(FLAKY_REPEATS if attack.flaky else 1):
        run = evaluated(attack, repeat)
        problems = violations(attack, run, alone if attack.companions else None)
        assert not problems, f"{attack.name} ({attack.description}), run {repeat + 1}:\n  " + "\n  ".join(problems)


def test_companion_results_do_not_depend_on_what_ran_before(evaluated: Callable[[Attack, int], AttackRun],
                                                            alone: dict[str, dict[str, Any]]) -> None:
    """Every run that had a companion scored it exactly as it is scored alone."""
    differing = {}
    for attack in ATTACKS:
        if not attack.companions:
            continue
        run = evaluated(attack, 0)
        for companion in attack.companions:
            record = run.results.get(companion)
            if record is None or comparable(record) != comparable(alone[companion]):
                differing[attack.name] = (record or {}).get("outcome", "no result")
    assert not differing, differing
