"""Verdicts that must not depend on machine load (issue 26 item 5): an honest test is never
`unstable` because the machine was busy. Two ways of making it busy: a stall simulated where
it bites (the first batch's equivalent-variant run comes back as a timeout, as a clean run
does when the machine stalls for longer than its budget), and real CPU hogs, twice as many as
cores, for a whole evaluation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.calibrate import calibration_predictions
from bench.dataset import load_dataset
from bench.evaluate import EvaluateOptions, evaluate
from bench.frameworks.behave.verdict import _Session
from bench.judging import EQUIVALENT_PREFIX

pytestmark = pytest.mark.integration


def _oracle(dataset: Path, tmp_path: Path, count: int) -> tuple[Path, list[str]]:
    gold = load_dataset(dataset).load_gold()
    oracle = [p for p in calibration_predictions(dataset)["oracle"] if gold[p.instance_id].kills]
    chosen = sorted(oracle, key=lambda p: p.instance_id)[:count]
    path = tmp_path / "oracle.jsonl"
    path.write_text("".join(p.model_dump_json() + "\n" for p in chosen))
    return path, [p.instance_id for p in chosen]


def _rows(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


def test_a_clean_run_that_timed_out_in_a_stall_is_rechecked_not_unstable(
        example_dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the recheck, this was `unstable` ("warm batch 1: clean run failed", no reason)."""
    stalled: list[str] = []
    warm_runs = _Session._warm_runs

    def stalling(self: _Session, variants, limit):  # type: ignore[no-untyped-def]
        runs, resets = warm_runs(self, variants, limit)
        if not stalled:  # the session's first batch: one equivalent run "times out"
            for token, mutant in variants:
                if mutant is not None and mutant.id.startswith(EQUIVALENT_PREFIX):
                    runs[token] = {**runs[token], "exit": "timeout", "elapsed": limit}
                    stalled.append(mutant.id)
                    break
        return runs, resets

    monkeypatch.setattr(_Session, "_warm_runs", stalling)
    path, ids = _oracle(example_dataset, tmp_path, 1)
    evaluate(example_dataset, path, tmp_path / "run", EvaluateOptions(instances=ids, resamples=20, workers=1))
    assert stalled, "no equivalent variant ran in a pristine batch"
    [row] = _rows(tmp_path / "run")
    assert (row["outcome"], row["kill_complete"]) == ("pass", True), row
    assert row["confirmation"]["clean_reruns"] == 1, row["confirmation"]


@pytest.fixture
def cpu_hogs() -> Iterator[int]:
    """Twice as many busy processes as cores, at normal priority, for the test's duration."""
    count = 2 * (os.cpu_count() or 1)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield count
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def test_oracle_verdicts_hold_beside_cpu_hogs(example_dataset: Path, tmp_path: Path, cpu_hogs: int) -> None:
    path, ids = _oracle(example_dataset, tmp_path, 6)
    evaluate(example_dataset, path, tmp_path / "run", EvaluateOptions(instances=ids, resamples=20))
    rows = _rows(tmp_path / "run")
    assert len(rows) == len(ids)
    for row in rows:
        assert (row["outcome"], row["kill_complete"]) == ("pass", True), (cpu_hogs, row["outcome"], row["detail"])
