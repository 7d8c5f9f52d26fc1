"""The scripted provider scripts of the offline demo (examples/demo/), end to end on one instance.

provider-ab.yaml answers a prompt that carries the grounding paragraph with the developers' own test
(kill-complete) and a prompt without it with a hand-built, partly checked test (passes, misses mutants);
provider-same.yaml answers both with the weak test. Both run through the real `req2test generate` (the
built-in agent over litellm) and the evaluator.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from bench.calibrate import calibration_predictions
from bench.evaluate import EvaluateOptions, evaluate
from harness.generate import GenerateOptions, generate
from harness.llm import ModelConfig
from harness.prompts import paragraph
from harness.provider import ScriptedProvider
from harness.provider.script import load_script

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo"
INSTANCE = "tinyshop/features/catalog.feature:6"  # fast to evaluate; the weak test kills 7 of 23


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_demo_script", REPO / "scripts" / "make_demo_script.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def test_scripts_load_and_are_up_to_date() -> None:
    ab = load_script(DEMO / "provider-ab.yaml")
    same = load_script(DEMO / "provider-same.yaml")
    assert not ab.loop and same.loop
    maker = _generator()
    instances = (DEMO / "instances.txt").read_text(encoding="utf-8").split()
    assert instances == maker.DEMO_INSTANCES and len(instances) >= 6
    # per instance: plain weak/hedged/weak, grounded grounded/hedged/grounded/weak, two turns each
    assert len(ab.turns) == 2 * 7 * len(instances) and len(same.turns) == 2 * len(instances)
    # the scripts select on the paragraph's opening words: they must still be in the paragraph
    assert maker.grounding_mark() in paragraph("grounding")
    assert maker.main(["--check"]) == 0, "run python scripts/make_demo_script.py"


def _cli_generate(dataset: Path, run_dir: Path, provider: ScriptedProvider, *extra: str) -> None:
    cmd = [sys.executable, "-m", "harness.cli", "generate", str(dataset), "-o", str(run_dir), "--agent", "builtin",
           "--model", "openai/scripted", "--api-base", provider.openai_base_url, "-i", INSTANCE, "-q", *extra]
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr


def _score(dataset: Path, run_dir: Path) -> dict:
    evaluate(dataset, run_dir / "predictions.jsonl", run_dir / "eval",
             EvaluateOptions(workers=1, resamples=100, instances=[INSTANCE]))
    result = json.loads((run_dir / "eval" / "results.jsonl").read_text().splitlines()[0])
    prediction = json.loads((run_dir / "predictions.jsonl").read_text().splitlines()[0])
    assert prediction["metadata"]["extra"]["end_reason"] == "submitted"
    return {**result, "files": prediction["files"]}


def test_grounding_paragraph_decides_kill_completeness(example_dataset: Path, tmp_path: Path) -> None:
    with ScriptedProvider(DEMO / "provider-ab.yaml") as provider:
        _cli_generate(example_dataset, tmp_path / "plain", provider)
        _cli_generate(example_dataset, tmp_path / "grounded", provider, "--paragraph", "grounding")
        turns = [r.turn for r in provider.requests]
    assert len(turns) == 4 and None not in turns  # two turns per generation, none exhausted
    plain, grounded = _score(example_dataset, tmp_path / "plain"), _score(example_dataset, tmp_path / "grounded")
    assert plain["outcome"] == "pass" and not plain["kill_complete"]
    assert 0 < plain["generated_kills"] < plain["ground_truth_kills"]
    assert grounded["outcome"] == "pass" and grounded["kill_complete"]
    oracle = next(p for p in calibration_predictions(example_dataset)["oracle"] if p.instance_id == INSTANCE)
    assert grounded["files"] == oracle.files  # the grounded answer is the developers' own test

    # the control script writes the same weak test whatever the prompt: no difference
    with ScriptedProvider(DEMO / "provider-same.yaml") as provider:
        model = ModelConfig(model="openai/scripted", api_base=provider.openai_base_url, api_key="sk-test")
        for name, paragraphs in (("same-plain", []), ("same-grounded", ["grounding"])):
            generate(example_dataset, tmp_path / name,
                     GenerateOptions(model=model, instances=[INSTANCE], paragraphs=paragraphs))
    same = [_score(example_dataset, tmp_path / name) for name in ("same-plain", "same-grounded")]
    assert same[0]["files"] == same[1]["files"] == plain["files"]
    assert [(r["outcome"], r["kill_complete"]) for r in same] == [("pass", False), ("pass", False)]
