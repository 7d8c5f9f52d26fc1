"""`req2test evaluate` on the tiny project: every rung of the ladder, hostile tests, resume."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.calibrate import calibration_predictions
from bench.dataset import load_dataset
from bench.evaluate import EvaluateOptions, EvaluationError, evaluate
from bench.model import Prediction

pytestmark = pytest.mark.integration

ADD = "minicalc/features/calc.feature:9"       # Given a calculator / When I add 3 / Then the total is 3
STEPS = "features/steps/calc_steps.py"

GOOD = '''
from behave import given, when, then
from minicalc import Calculator

@given("a calculator")
def g(context):
    context.calc = Calculator()

@when("I add {n:d}")
def w(context, n):
    context.calc.add(n)

@then("the total is {n:d}")
def t(context, n):
    assert context.calc.total == n
'''


def _variant(then_body: str = "    assert context.calc.total == n", when_body: str = "    context.calc.add(n)",
             extra: str = "") -> str:
    text = GOOD.replace("    assert context.calc.total == n", then_body).replace("    context.calc.add(n)", when_body)
    return text + extra


CASES = {
    "pass": ({STEPS: GOOD}, "pass"),
    "weak": ({STEPS: _variant(then_body="    assert context.calc.total is not None")}, "pass"),
    "build": ({STEPS: GOOD + "\ndef broken(:\n"}, "build_failure"),
    "import": ({STEPS: "import no_such_module_anywhere\n" + GOOD}, "build_failure"),
    "binding": ({STEPS: GOOD.replace('@when("I add {n:d}")', '@when("I plus {n:d}")')}, "binding_failure"),
    "ambiguous": ({STEPS: GOOD + '\n@then("the total is {n:d}")\ndef t2(context, n):\n    pass\n'}, "binding_failure"),
    "pending": ({STEPS: _variant(then_body="    from behave.api.pending_step import StepNotImplementedError\n"
                                         "    raise StepNotImplementedError('todo')")}, "binding_failure"),
    "error": ({STEPS: _variant(when_body="    context.calc.subtract(n)")}, "execution_failure"),
    "assertion": ({STEPS: _variant(then_body="    assert context.calc.total == n + 1")}, "assertion_failure"),
    # leaving the process behind the runner's back is flagged too (bench.frameworks.behave.guard)
    "os_exit": ({STEPS: _variant(then_body="    import os; os._exit(0)")}, "tampering"),
    "sys_exit": ({STEPS: _variant(then_body="    import sys; sys.exit(0)")}, "execution_failure"),
    # signals are flagged by the tamper screens (bench.frameworks.behave.guard), even to the test's own process
    "kill_self": ({STEPS: _variant(then_body="    import os, signal; os.kill(os.getpid(), signal.SIGKILL)")},
                  "tampering"),
    "loop": ({STEPS: _variant(then_body="    while True:\n        pass")}, "execution_failure"),
    "empty": ({STEPS: "   \n"}, "generation_failure"),
    "production_edit": ({STEPS: GOOD, "src/minicalc/core.py": "X = 1\n"}, "generation_failure"),
    "hook_edit": ({STEPS: GOOD, "features/environment.py": "\n"}, "generation_failure"),
    "feature_edit": ({STEPS: GOOD, "features/calc.feature": "Feature: x\n"}, "generation_failure"),
    "escape": ({"features/../setup.py": GOOD}, "generation_failure"),
    # a write into production is flagged by the audit hook (and is read-only under bubblewrap anyway)
    "write_production": ({STEPS: _variant(then_body="    import pathlib, minicalc.core\n"
                                                    "    pathlib.Path(minicalc.core.__file__).write_text('X = 1')")},
                         "tampering"),
    "network": ({STEPS: _variant(then_body="    import socket\n"
                                           "    socket.create_connection(('1.1.1.1', 53), timeout=3)")},
                "execution_failure"),
}


def _write(path: Path, predictions: list[dict]) -> Path:
    path.write_text("".join(json.dumps(p) + "\n" for p in predictions), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def ladder(mini_dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Each case evaluated as its own run (one prediction per instance per run)."""
    base = tmp_path_factory.mktemp("ladder")
    found = {}
    for name, (files, _) in CASES.items():
        preds = _write(base / f"{name}.jsonl", [{"instance_id": ADD, "files": files}])
        evaluate(mini_dataset, preds, base / name, EvaluateOptions(workers=1, timeout=5, instances=[ADD],
                                                                    resamples=200))
        found[name] = json.loads((base / name / "results.jsonl").read_text().splitlines()[0])
    return found


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_rung_of_the_ladder(ladder: dict[str, dict], case: str) -> None:
    assert ladder[case]["outcome"] == CASES[case][1], ladder[case]["detail"]


def test_isolation_blocks_production_writes_and_network(ladder: dict[str, dict]) -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed: the evaluator runs without isolation")
    assert "write" in ladder["write_production"]["detail"], ladder["write_production"]["detail"]
    assert "Network is unreachable" in ladder["network"]["detail"] or "Errno" in ladder["network"]["detail"]


def test_rejections_say_why(ladder: dict[str, dict]) -> None:
    assert "outside the test area" in ladder["production_edit"]["detail"]
    assert "shared test infrastructure" in ladder["hook_edit"]["detail"]
    assert "feature files are the requirement" in ladder["feature_edit"]["detail"]
    assert "not a plain relative path" in ladder["escape"]["detail"]
    assert "timeout" in ladder["loop"]["detail"]


def test_adequacy_separates_strong_from_weak(ladder: dict[str, dict], mini_dataset: Path) -> None:
    gold = load_dataset(mini_dataset).load_gold()[ADD]
    strong, weak = ladder["pass"], ladder["weak"]
    assert gold.kills, "the ground truth must kill something"
    assert strong["kill_complete"] and strong["mutant_recall"] == 1.0
    assert not weak["kill_complete"] and weak["mutant_recall"] < 1.0
    # ground truth calls Calculator.__init__, add and Receipt.__init__; this test the first two: 2*2/(2+3)
    assert strong["api_f1"] == pytest.approx(0.8)
    for failing in ("assertion", "binding", "sys_exit"):
        assert ladder[failing]["mutant_recall"] == 0.0 and ladder[failing]["coverage_jaccard"] == 0.0


def test_calibration_on_the_tiny_project(mini_dataset: Path, tmp_path: Path) -> None:
    sets = calibration_predictions(mini_dataset)
    results = {}
    for name, preds in sets.items():
        path = _write(tmp_path / f"{name}.jsonl", [p.model_dump() for p in preds])
        results[name] = evaluate(mini_dataset, path, tmp_path / name, EvaluateOptions(workers=2, resamples=200))
    assert results["oracle"]["pass_at_1"]["value"] == 1.0
    assert results["oracle"]["kill_complete_at_1"]["value"] == 1.0
    assert results["empty"]["mutant_recall"]["value"] == 0.0
    assert results["empty"]["kill_complete_at_1"]["value"] == 0.0
    assert 0.0 < results["then-stripped"]["mutant_recall"]["value"] < 1.0


def test_calibrate_runs_only_the_arms_asked_for(mini_dataset: Path, tmp_path: Path) -> None:
    """``req2test calibrate --arm oracle --arm empty`` evaluates those two arms and no other; an
    unknown arm is a one-line error before anything runs."""
    out = tmp_path / "cal"
    done = subprocess.run([sys.executable, "-m", "harness.cli", "calibrate", str(mini_dataset), "-o", str(out),
                           "--arm", "oracle", "--arm", "empty", "-q"], capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["empty", "oracle"]
    oracle = [json.loads(line) for line in (out / "oracle" / "results.jsonl").read_text().splitlines()]
    empty = [json.loads(line) for line in (out / "empty" / "results.jsonl").read_text().splitlines()]
    assert oracle and all(r["outcome"] == "pass" and r["kill_complete"] for r in oracle)
    assert empty and all(r["generated_kills"] == 0 for r in empty)
    bad = subprocess.run([sys.executable, "-m", "harness.cli", "calibrate", str(mini_dataset), "-o",
                          str(tmp_path / "bad"), "--arm", "oracel"], capture_output=True, text=True, timeout=120,
                         check=False)
    assert bad.returncode == 2 and "no such calibration arm" in bad.stdout + bad.stderr
    assert "Traceback" not in bad.stdout + bad.stderr and not (tmp_path / "bad").exists()



@pytest.mark.parametrize("command", [["calibrate", "-o", "{out}"], ["suites"], ["families"],
                                     ["evaluate", "-p", "{predictions}", "-o", "{out}"]])
def test_a_dataset_without_its_ground_truth_gets_one_line(mini_dataset: Path, tmp_path: Path,
                                                           command: list[str]) -> None:
    """A dataset handed out without gold/ (a benchmark's test split): every command that needs the
    ground truth says so in one line, exit 2; none prints a traceback (calibrate and suites did)."""
    public = tmp_path / "public"
    shutil.copytree(mini_dataset, public)
    shutil.rmtree(public / "gold")
    predictions = tmp_path / "p.jsonl"
    predictions.write_text(json.dumps({"instance_id": ADD, "files": {"features/steps/x.py": "pass\n"}}) + "\n")
    args = [a.format(out=tmp_path / "out", predictions=predictions) for a in command]
    done = subprocess.run([sys.executable, "-m", "harness.cli", args[0], str(public), *args[1:]],
                          capture_output=True, text=True, timeout=120, check=False)
    text = done.stdout + done.stderr
    if command[0] == "families":  # needs no ground truth: it counts requirements from the instances
        assert done.returncode == 0, text
        return
    assert done.returncode == 2 and "no ground truth" in text and "Traceback" not in text, text

def test_bad_prediction_files(mini_dataset: Path, tmp_path: Path) -> None:
    bad_json = tmp_path / "bad.jsonl"
    bad_json.write_text('{"instance_id": "x"\n')
    with pytest.raises(EvaluationError, match="bad.jsonl:1: not JSON"):
        evaluate(mini_dataset, bad_json, tmp_path / "r1")
    unknown = _write(tmp_path / "unknown.jsonl", [{"instance_id": "nope/x.feature:1", "files": {}}])
    with pytest.raises(EvaluationError, match="does not have"):
        evaluate(mini_dataset, unknown, tmp_path / "r2")
    twice = _write(tmp_path / "twice.jsonl", [{"instance_id": ADD, "files": {}}] * 2)
    with pytest.raises(EvaluationError, match="second prediction"):
        evaluate(mini_dataset, twice, tmp_path / "r3")
    # a schema error is that instance's generation failure, not a crash of the run
    schema = _write(tmp_path / "schema.jsonl", [{"instance_id": ADD, "files": "not a dict"}])
    summary = evaluate(mini_dataset, schema, tmp_path / "r4", EvaluateOptions(workers=1, resamples=100))
    assert summary["outcomes"]["generation_failure"] == 3  # the bad one + two without predictions
    assert summary["n"] == 3 and summary["kill_complete_at_1"]["value"] == 0.0
    # a run dir of another predictions file is refused
    other = _write(tmp_path / "other.jsonl", [{"instance_id": ADD, "files": {STEPS: GOOD}}])
    with pytest.raises(EvaluationError, match="holds a run of other predictions"):
        evaluate(mini_dataset, other, tmp_path / "r4")


def test_resume_after_kill_loses_nothing(mini_dataset: Path, tmp_path: Path) -> None:
    oracle = {p.instance_id: p for p in calibration_predictions(mini_dataset)["oracle"]}
    # the last instance sleeps, so the run can be killed with work in flight
    last = "minicalc/features/calc.feature:18"
    files = dict(oracle[last].files)
    files[STEPS] = files[STEPS].replace("    assert context.calc.total == n, context.calc.total",
                                        "    import time; time.sleep(30)\n    assert context.calc.total == n")
    oracle[last] = Prediction(instance_id=last, files=files)
    path = _write(tmp_path / "p.jsonl", [p.model_dump() for p in oracle.values()])
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "harness.cli", "evaluate", str(mini_dataset), "-p", str(path), "-o", str(run_dir),
           "--workers", "1", "--timeout", "60", "-q"]
    with open(tmp_path / "evaluate.log", "w") as log:  # the run writes to its own copy of the descriptor
        proc = subprocess.Popen(cmd, stdout=log, stderr=log, start_new_session=True)
    journal = run_dir / "results.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline and not (journal.exists() and journal.read_text().count("\n") >= 2):
        time.sleep(0.1)
    time.sleep(0.5)  # the last instance is now in flight
    os.killpg(proc.pid, signal.SIGKILL)  # kill -9 the whole run, workers included
    proc.wait()
    assert journal.exists(), (tmp_path / "evaluate.log").read_text()[-2000:]
    before = journal.read_text().splitlines()
    assert len(before) == 2
    summary = evaluate(mini_dataset, path, run_dir, EvaluateOptions(workers=1, timeout=2, resamples=100))
    after = journal.read_text().splitlines()
    assert after[:2] == before  # finished instances were kept verbatim, not recomputed
    assert len(after) == 3 and summary["n"] == 3
    assert json.loads(after[2])["instance_id"] == last
    assert json.loads(after[2])["outcome"] == "execution_failure"  # the sleep now exceeds the timeout


def test_missing_and_invalid_predictions_are_reported_and_strict_exits_3(mini_dataset: Path, tmp_path: Path) -> None:
    """One valid line, one SWE-bench-style line, no line for the third instance: the summary
    says so, the CLI prints it, and --strict turns it into exit 3."""
    instances = [i.id for i in load_dataset(mini_dataset).instances]
    other, missing = [i for i in instances if i != ADD]
    path = _write(tmp_path / "p.jsonl", [{"instance_id": ADD, "files": {STEPS: GOOD}},
                                         {"instance_id": other, "model_patch": "diff --git a/x b/x\n",
                                          "model_name_or_path": "mine"}])
    cmd = [sys.executable, "-m", "harness.cli", "evaluate", str(mini_dataset), "-p", str(path), "--workers", "1",
           "--resamples", "100", "-q"]
    lenient = subprocess.run(cmd + ["-o", str(tmp_path / "a")], capture_output=True, text=True, timeout=300,
                             check=False)
    assert lenient.returncode == 0, lenient.stderr
    assert "3 instance(s): 2 submitted (1 valid, 1 invalid), 1 missing" in lenient.stderr
    assert f"invalid {other}: a SWE-bench-style line (model_patch)" in lenient.stderr
    assert f"missing: {missing}" in lenient.stderr
    submission = json.loads((tmp_path / "a" / "summary.json").read_text())["submission"]
    assert (submission["valid"], submission["invalid"], submission["missing"]) == (1, 1, 1)
    assert submission["missing_ids"] == [missing]
    strict = subprocess.run(cmd + ["-o", str(tmp_path / "b"), "--strict"], capture_output=True, text=True, timeout=300,
                            check=False)
    assert strict.returncode == 3, strict.stderr
    complete = _write(tmp_path / "all.jsonl", [p.model_dump() for p in calibration_predictions(mini_dataset)["oracle"]])
    ok = subprocess.run(cmd[:6] + [str(complete)] + cmd[7:] + ["-o", str(tmp_path / "c"), "--strict"],
                        capture_output=True, text=True, timeout=300, check=False)
    assert ok.returncode == 0 and "submission:" not in ok.stderr, ok.stderr
