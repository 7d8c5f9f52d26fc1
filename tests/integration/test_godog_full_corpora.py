"""The two Godog corpora in full (``-m heavy``: each is a 30-60 min build on two cores plus its
calibration; CI runs the go-algorand-sdk slice of test_go_algorand_sdk.py): every selected
scenario an instance or excluded with a reason, the fresh-process check agreeing on at least
60 sampled pairs, and the calibration exact on every instance (oracle pass + KillComplete,
empty 0 kills). docs/measured.md has the figures of these runs.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bench.builder.pipeline import BuildOptions, build_dataset
from bench.calibrate import calibration_predictions
from bench.dataset import load_dataset
from bench.evaluate import EvaluateOptions, evaluate
from tests.integration.recipes import recipe

pytestmark = [pytest.mark.heavy, pytest.mark.slow]

coddy_agent = recipe("coddy_agent")
go_algorand_sdk = recipe("go_algorand_sdk")


def _assemble(name: str, base: Path) -> Path:
    try:
        if name == "go-algorand-sdk":
            return go_algorand_sdk.assemble(base / name, go_algorand_sdk.default_source("go-algorand-sdk"),
                                            go_algorand_sdk.default_source("algorand-sdk-testing"))
        return coddy_agent.assemble(base / name, coddy_agent.default_source())
    except (subprocess.CalledProcessError, SystemExit) as exc:
        pytest.skip(f"the {name} corpus cannot be fetched here: {exc}")


@pytest.mark.parametrize("name", ["go-algorand-sdk", "coddy-agent"])
def test_full_build_and_exact_calibration(name: str, tmp_path: Path) -> None:
    project = _assemble(name, tmp_path)
    out = tmp_path / "dataset"
    build_dataset(str(project), out, BuildOptions(name=name, workers=2, runs=3))
    dataset = load_dataset(out)
    assert dataset.verify() == []
    card = dataset.card
    assert all(e.reason and e.detail for e in card.exclusions)
    fresh = card.mutation["fresh_check"]
    assert fresh["sampled"] >= 60 and fresh["agree"] == fresh["sampled"], fresh["disagreements"]
    gold = dataset.load_gold()
    sets = calibration_predictions(out, ("oracle", "empty"))
    for arm in ("oracle", "empty"):
        path = tmp_path / f"{arm}.jsonl"
        path.write_text("".join(p.model_dump_json() + "\n" for p in sets[arm]))
        evaluate(out, path, tmp_path / arm, EvaluateOptions(workers=2, resamples=200))
    oracle = [json.loads(line) for line in (tmp_path / "oracle" / "results.jsonl").read_text().splitlines()]
    empty = [json.loads(line) for line in (tmp_path / "empty" / "results.jsonl").read_text().splitlines()]
    assert all(r["outcome"] == "pass" for r in oracle), [r for r in oracle if r["outcome"] != "pass"][:3]
    assert all(r["kill_complete"] for r in oracle if gold[r["instance_id"]].kills)
    assert all(r["mutant_recall"] in (0.0, None) for r in empty)
