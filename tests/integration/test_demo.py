"""``req2test demo`` end to end: the paragraph A/B is significant, the control is not, best-of-3 with the oracle
never scores below its single candidate, the report is one self-contained page, and submission refuses
what the evaluator steered or a scripted provider answered."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.compare import compare
from bench.runs import select_config
from harness.submit import SubmissionError, build_bundle

pytestmark = pytest.mark.integration


def _results(run: Path, config: str) -> dict[str, dict]:
    path = run / "configs" / config.replace("/", "~") / "results.jsonl"
    return {r["instance_id"]: r for r in map(json.loads, path.read_text().splitlines())}


def _binary(comparison):
    return {test.metric: test for test in comparison.binary}


def test_demo(example_dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "demo"
    env = {**os.environ, "REQ2TEST_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "harness.cli", "demo", "-o", str(out), "--dataset",
                           str(example_dataset)], env=env, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "demo summary:" in done.stdout + done.stderr

    ab = _binary(compare(select_config(f"{out / 'ab'}:plain@th"), select_config(f"{out / 'ab'}:grounded@th")))
    assert ab["kill_complete"].b_over_a >= 6 and ab["kill_complete"].a_over_b == 0
    assert ab["kill_complete"].p_value < 0.05 and ab["kill_complete"].significant
    control = _binary(compare(select_config(f"{out / 'control'}:plain@th"),
                              select_config(f"{out / 'control'}:grounded@th")))
    assert control["kill_complete"].b_over_a == control["kill_complete"].a_over_b == 0
    assert not control["kill_complete"].significant and not control["pass"].significant

    single = _results(out / "ab", "grounded-best-of-3@th/single")
    oracle = _results(out / "ab", "grounded-best-of-3@th/oracle")
    rank = {True: 1, False: 0}
    for instance_id, chosen in oracle.items():  # per instance, never below the single candidate
        alone = single[instance_id]
        assert (rank[chosen["kill_complete"]], rank[chosen["outcome"] == "pass"]) >= \
               (rank[alone["kill_complete"]], rank[alone["outcome"] == "pass"])
    assert sum(r["kill_complete"] for r in oracle.values()) > sum(r["kill_complete"] for r in single.values())
    # a best-of-3 pick costs its three generations
    best = [json.loads(line) for line in (out / "ab/configs/grounded-best-of-3@th/predictions.jsonl").read_text()
            .splitlines()]
    singles = {p["instance_id"]: p for p in map(json.loads, (out / "ab/configs/grounded-best-of-3@th~single/"
                                                             "predictions.jsonl").read_text().splitlines())}
    for prediction in best:
        assert prediction["metadata"]["cost_usd"] == pytest.approx(3 * singles[prediction["instance_id"]]
                                                                   ["metadata"]["cost_usd"])

    html = (out / "ab/report.html").read_text()
    assert "<svg" in html and not re.search(r"""(src|href)=["']https?:""", html)
    assert "Pareto" in (out / "ab/report.md").read_text()

    # the demo's "model" is a scripted provider: nothing of it may be submitted, whatever the arm
    with pytest.raises(SubmissionError, match="grounded@th: the model's answers came from a scripted provider"):
        build_bundle(out / "ab", tmp_path / "bundle", ["plain@th", "grounded@th"])
    refusals = json.loads((out / "ab/configs/grounded-best-of-3@th~oracle/config.json").read_text())
    assert "selector oracle — the evaluator chose among candidates" in refusals["submission_refusals"]

    # a rerun resumes: nothing is generated again
    # (without -q: the counts are notes, which -q leaves out)
    again = subprocess.run([sys.executable, "-m", "harness.cli", "run", str(out / "ab.yaml"), "-o", str(out / "ab")],
                           env=env, capture_output=True, text=True, timeout=600, check=False)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "0 generation(s) run" in again.stdout + again.stderr
