"""The runtime tamper screens (audit hook + runner integrity) on a real behave run.

An audit hook can never be removed, so every run happens in a subprocess: a small driver
warms behave and the production package like the worker does, installs the hook, takes
the integrity snapshot, loads the step modules and runs scenarios through the worker's
own RunRecorder, then writes findings, integrity changes and statuses to a JSON file.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLE

PDX_TREE = Path.home() / ".cache" / "req2test" / "sdists" / "python-docx-1.2.0" / "tree"

DRIVER = '''
import json, os, sys, time
cfg = json.loads(sys.argv[1])
root = cfg["root"]
os.chdir(root)
for entry in reversed(cfg["python_path"]):
    sys.path.insert(0, os.path.join(root, entry))
import behave, behave.model, behave.runner  # warm, as the worker
from bench.frameworks.behave import worker as bw
for name in cfg["import_packages"]:
    __import__(name)
from bench.frameworks.behave.guard import audit_hook, integrity

features_dir = os.path.join(root, "features")
production_dirs = [os.path.join(root, p) for p in cfg["production"]]
emitted = []
screen = None
if cfg["guard"]:
    screen = audit_hook.install(
        prediction_files={os.path.join(root, p) for p in cfg["prediction_files"]},
        production_dirs=production_dirs, workspace_root=root, writable_dirs=[root],
        emit=emitted.append, block=True,
        trusted_dirs=[os.path.dirname(os.path.abspath(__file__))])  # this driver is the evaluator here
snap = integrity.snapshot()
worker = bw.Worker(sys.stderr)
worker.root, worker.features_dir, worker.production_dirs = root, features_dir, production_dirs
runner, load_error = worker._make_runner(features_dir, load=True)
results = []
started = time.process_time()
for feature, lines in ([] if load_error else cfg["runs"]):
    recorder = bw.RunRecorder(root, features_dir, production_dirs, worker.hook_files, trace=cfg["trace"])
    result = recorder.run(runner, os.path.join(root, feature), lines)
    results += [[feature, s["line"], s["status"]] for s in result["scenarios"]]
cpu = time.process_time() - started
with open(cfg["out"], "w") as fh:
    json.dump({"load_error": load_error, "results": results, "cpu": cpu,
               "findings": screen.findings if screen else [], "emitted": emitted,
               "checked": screen.checked if screen else 0, "changes": integrity.changes(snap)}, fh)
'''

ATTACKS = '''
import collections
import gc
import inspect
import json
import logging
import os
import subprocess
import sys
import threading
import traceback
import warnings

import tinyshop.money
from behave import given

OUTSIDE = os.environ["GUARD_OUTSIDE"]


def attack_gc(context):
    gc.get_objects()


def attack_frames(context):
    return sys._getframe(0).f_back


def attack_tb_frame(context):
    try:
        1 / 0
    except ZeroDivisionError as exc:
        return exc.__traceback__.tb_frame


def attack_inspect_stack(context):
    return inspect.stack()


def attack_code(context):
    return tinyshop.money.round_cents.__code__


def attack_code_set(context):
    fn = lambda: 1  # noqa: E731
    fn.__code__ = compile("2", "<string>", "eval")


def attack_settrace(context):
    sys.settrace(lambda *a: None)


def attack_setprofile(context):
    sys.setprofile(None)


def attack_audit(context):
    sys.addaudithook(lambda *a: None)


def attack_ctypes(context):
    import ctypes
    ctypes.CDLL(None)


def attack_kill(context):
    os.kill(os.getppid(), 0)


def attack_spawn_kill(context):
    subprocess.run(["kill", "-0", str(os.getppid())], check=False)


def attack_shell_kill(context):
    subprocess.run(["sh", "-c", "true; kill -0 $PPID"], check=False)


def attack_source(context):
    return inspect.getsource(tinyshop.money)


def attack_pyc(context):
    import importlib.util
    with open(importlib.util.cache_from_source(tinyshop.money.__file__), "rb") as fh:
        return fh.read()


def attack_reimport(context):
    saved = sys.modules.pop("tinyshop.money")
    try:
        import tinyshop.money as fresh  # noqa: F401
    finally:
        sys.modules["tinyshop.money"] = saved


def attack_write_production(context):
    open(tinyshop.money.__file__, "a").close()


def attack_write_outside(context):
    open(os.path.join(OUTSIDE, "note.txt"), "w").close()


def attack_evaluator(context):
    import bench
    with open(bench.__file__) as fh:
        return fh.read()


def attack_compile(context):
    compile("x = 1", "/usr/lib/python3/dist-packages/behave/runner.py", "exec")


def attack_proc(context):
    with open("/proc/self/status") as fh:
        return fh.read()


def attack_exec(context):
    exec("import gc\\ngc.get_objects()")


def attack_tmp_module(context):
    path = os.path.join(os.environ["TMPDIR"], "evil_helper.py")
    with open(path, "w") as fh:
        fh.write("import gc\\n\\ndef run():\\n    return gc.get_referrers(run)\\n")
    sys.path.insert(0, os.environ["TMPDIR"])
    import evil_helper
    evil_helper.run()


def attack_cleanup(context):
    context.add_cleanup(gc.get_objects)


def attack_thread_trace(context):
    threading.settrace(lambda *a: None)
    try:
        thread = threading.Thread(target=lambda: None)
        thread.start()
        thread.join()
    finally:
        threading.settrace(None)


def honest(context):
    try:
        tinyshop.money.round_cents("not a number")
    except Exception:
        traceback.format_exc()
        logging.getLogger("honest").exception("expected")
    collections.namedtuple("Pair", "a b")(1, 2)
    inspect.signature(tinyshop.money.round_cents)
    json.dumps({"a": 1})
    warnings.warn("a warning")
    with open(os.path.join(context.scratch_dir, "out.txt"), "w") as fh:
        fh.write("x")
    with open(os.path.join(context.fixtures_dir, "catalog.json")) as fh:
        fh.read()
    context.execute_steps("Given an empty cart")
    try:  # a nested step failing inside production: behave formats that traceback
        context.execute_steps('When I change the quantity of "NOPE-1" to 3')
    except Exception:
        pass
    sorted(os.listdir("."))


@given("attack {name}")
def step_attack(context, name):
    globals()["attack_" + name](context)


@given("the honest step")
def step_honest(context):
    honest(context)
'''

# attack -> the kind its finding must have
EXPECTED = {
    "gc": "gc", "frames": "introspection", "tb_frame": "introspection", "inspect_stack": "introspection",
    "code": "code_objects", "code_set": "code_objects", "settrace": "tracing", "setprofile": "tracing",
    "audit": "audit_hook", "ctypes": "ctypes", "kill": "signals", "spawn_kill": "signals", "shell_kill": "signals",
    "source": "production_source", "pyc": "production_source", "reimport": "production_source",
    "write_production": "production_write", "write_outside": "filesystem", "evaluator": "evaluator_internals",
    "compile": "dynamic_code", "proc": "process", "exec": "gc", "tmp_module": "gc", "cleanup": "gc",
    "thread_trace": "tracing",
}

PATCHES = '''
import json

import behave.model
import behave.model as m
from behave.runner import Context

_run = behave.model.Step.run
behave.model.Step.run = lambda self, *a, **k: _run(self, *a, **k)
_scenario_run = m.Scenario.run
m.Scenario.run = lambda self, *a, **k: _scenario_run(self, *a, **k)
_dumps = json.dumps
json.dumps = lambda *a, **k: _dumps(*a, **k)
_execute_steps = Context.execute_steps
Context.execute_steps = lambda self, text: _execute_steps(self, text)
'''


def _scenario_lines(path: Path) -> list[int]:
    return [i for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if re.match(r"\s*Scenario( Outline)?:", line)]


def _project(tmp_path: Path, source: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(source, root, ignore=shutil.ignore_patterns("__pycache__", "_scratch"))
    return root


def _drive(tmp_path: Path, root: Path, *, production: list[str], import_packages: list[str], guard: bool = True,
           trace: bool = False, runs: list[tuple[str, list[int]]] | None = None,
           python_path: tuple[str, ...] = ("src",)) -> dict[str, Any]:
    driver_dir = tmp_path / "driver"
    driver_dir.mkdir(exist_ok=True)
    (driver_dir / "run_guarded.py").write_text(DRIVER, encoding="utf-8")
    scratch = tmp_path / "tmp"
    outside = tmp_path / "outside"
    scratch.mkdir(exist_ok=True)
    outside.mkdir(exist_ok=True)
    if runs is None:
        runs = [(str(p.relative_to(root)), _scenario_lines(p)) for p in sorted((root / "features").glob("*.feature"))]
    out = tmp_path / f"out-{guard}-{trace}.json"
    predictions = [str(p.relative_to(root)) for p in sorted((root / "features" / "steps").glob("*.py"))]
    cfg = {"root": str(root), "python_path": list(python_path), "production": production,
           "import_packages": import_packages, "guard": guard, "trace": trace, "runs": runs,
           "prediction_files": predictions, "out": str(out)}
    env = dict(os.environ, TMPDIR=str(scratch), GUARD_OUTSIDE=str(outside))
    proc = subprocess.run([sys.executable, str(driver_dir / "run_guarded.py"), json.dumps(cfg)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(out.read_text(encoding="utf-8"))


def test_ground_truth_steps_raise_no_finding_and_change_nothing(tmp_path: Path) -> None:
    root = _project(tmp_path, EXAMPLE)
    plain = _drive(tmp_path, root, production=["src/tinyshop"], import_packages=["tinyshop"], guard=False)
    guarded = _drive(tmp_path, root, production=["src/tinyshop"], import_packages=["tinyshop"])
    assert guarded["load_error"] is None
    assert guarded["findings"] == [] and guarded["emitted"] == []
    assert guarded["changes"] == [] and plain["changes"] == []
    assert guarded["results"] == plain["results"]  # the screen changes no outcome
    statuses = [status for _, _, status in guarded["results"]]
    assert statuses.count("passed") >= 95
    assert guarded["checked"] > 0


def test_traced_run_raises_no_finding(tmp_path: Path) -> None:
    """The traced run adds the recorder's profile function, audit hook and coverage."""
    root = _project(tmp_path, EXAMPLE)
    runs = [("features/cart.feature", _scenario_lines(root / "features" / "cart.feature")),
            ("features/order_lifecycle.feature", _scenario_lines(root / "features" / "order_lifecycle.feature"))]
    guarded = _drive(tmp_path, root, production=["src/tinyshop"], import_packages=["tinyshop"], trace=True,
                     runs=runs)
    assert guarded["findings"] == [] and guarded["changes"] == []
    assert [s for _, _, s in guarded["results"]].count("passed") >= 15


def test_steps_importing_production_themselves_raise_no_finding(tmp_path: Path) -> None:
    root = _project(tmp_path, EXAMPLE)
    runs = [("features/cart.feature", _scenario_lines(root / "features" / "cart.feature"))]
    guarded = _drive(tmp_path, root, production=["src/tinyshop"], import_packages=[], runs=runs)
    assert guarded["findings"] == [] and guarded["changes"] == []
    assert {s for _, _, s in guarded["results"]} == {"passed"}


def _functions(source: str) -> dict[str, tuple[int, int]]:
    tree = ast.parse(source)
    return {node.name: (node.lineno, node.end_lineno or node.lineno)
            for node in tree.body if isinstance(node, ast.FunctionDef)}


def test_attacks_are_found_and_blocked(tmp_path: Path) -> None:
    root = _project(tmp_path, EXAMPLE)
    steps = textwrap.dedent(ATTACKS).lstrip()
    (root / "features" / "steps" / "attack_steps.py").write_text(steps, encoding="utf-8")
    names = list(EXPECTED) + ["honest"]
    feature = "Feature: attacks\n\n" + "".join(
        f"  Scenario: {name}\n    Given {'the honest step' if name == 'honest' else 'attack ' + name}\n\n"
        for name in names)
    (root / "features" / "attack.feature").write_text(feature, encoding="utf-8")
    runs = [("features/attack.feature", _scenario_lines(root / "features" / "attack.feature"))]
    result = _drive(tmp_path, root, production=["src/tinyshop"], import_packages=["tinyshop"], runs=runs)
    assert result["load_error"] is None
    findings = result["findings"]
    assert result["emitted"] == findings  # every finding went out the moment it was found

    spans = _functions(steps)
    by_attack: dict[str, set[str]] = {}
    for finding in findings:
        if finding["path"] == "features/steps/attack_steps.py":
            owner = next(name for name, (start, end) in spans.items() if start <= finding["line"] <= end)
            by_attack.setdefault(owner.removeprefix("attack_"), set()).add(finding["kind"])
        elif finding["path"].endswith("evil_helper.py"):
            by_attack.setdefault("tmp_module", set()).add(finding["kind"])
        elif "called by behave" in finding["evidence"]:
            by_attack.setdefault("cleanup", set()).add(finding["kind"])
        elif "new thread" in finding["evidence"]:
            by_attack.setdefault("thread_trace", set()).add(finding["kind"])
        else:
            pytest.fail(f"unattributed finding {finding}")
    for attack, kind in EXPECTED.items():
        assert kind in by_attack.get(attack, set()), (attack, by_attack.get(attack))
    assert "honest" not in by_attack, by_attack["honest"]  # tracebacks, logging, namedtuple, own files
    statuses = {line: status for _, line, status in result["results"]}
    honest_line = _scenario_lines(root / "features" / "attack.feature")[-1]
    assert statuses[honest_line] == "passed"
    # blocked: the production file is untouched, the attacks that must not happen raised
    assert (root / "src" / "tinyshop" / "money.py").read_text() == (EXAMPLE / "src/tinyshop/money.py").read_text()
    assert (tmp_path / "outside" / "note.txt").exists()  # writing outside is reported, not blocked
    for attack in ("gc", "settrace", "ctypes", "kill", "source", "code"):
        line = _scenario_lines(root / "features" / "attack.feature")[names.index(attack)]
        assert statuses[line] != "passed", attack


def test_integrity_sees_patched_runner_and_stdlib(tmp_path: Path) -> None:
    root = _project(tmp_path, EXAMPLE)
    (root / "features" / "steps" / "zz_patches.py").write_text(textwrap.dedent(PATCHES), encoding="utf-8")
    runs = [("features/cart.feature", _scenario_lines(root / "features" / "cart.feature"))]
    result = _drive(tmp_path, root, production=["src/tinyshop"], import_packages=["tinyshop"], runs=runs)
    assert {"behave.model.Step.run replaced", "behave.model.Scenario.run replaced", "json.dumps replaced",
            "behave.runner.Context.execute_steps replaced"} <= set(result["changes"])


@pytest.mark.slow
def test_python_docx_steps_raise_no_finding(tmp_path: Path) -> None:
    if not (PDX_TREE / "features" / "steps").is_dir():
        pytest.skip("python-docx 1.2.0 is not in the build cache (req2test build python-docx==1.2.0)")
    pytest.importorskip("lxml")
    root = _project(tmp_path, PDX_TREE)
    guarded = _drive(tmp_path, root, production=["src/docx"], import_packages=["docx"])
    assert guarded["load_error"] is None
    assert guarded["findings"] == [] and guarded["changes"] == []
    statuses = [s for _, _, s in guarded["results"]]
    assert len(statuses) > 600 and set(statuses) == {"passed"}
