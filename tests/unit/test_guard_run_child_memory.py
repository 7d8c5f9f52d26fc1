"""The run child holds no description of its variant (issue 25): it is forked by the zygote, which
never saw a request, and gets only the variant's compiled code.

A real evaluation worker (``python -m bench.frameworks.behave.eval_worker`` under a wrapper) runs real
verdict runs on the mini dataset; the wrapper keeps the screen's hook when the worker installs it and
switches it off for the probe (which must read what a test could not) in every run child right
after the test's step modules loaded; the probe searches everything reachable — every object the collector tracks
(the frozen warm heap included), every frame of every thread and its locals, ``sys.argv``,
``os.environ``, the targets of the open descriptors — for the text of each variant's
replacement, its ``file:line`` and its token, of this run and of the others of the request.
"""

from __future__ import annotations

import json
import secrets
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

WRAPPER = r'''
import json, os, sys
sys.path[:0] = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
cfg = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "probe.json")))
_add_hook = sys.addaudithook
_hooks = []


def _capture(hook):
    """The screen's hook, kept here (the worker binds ``sys.addaudithook`` when it prepares the
    screen, before any test exists): the probe switches it off for its own thread while it looks."""
    _hooks.append(hook)
    _add_hook(hook)


sys.addaudithook = _capture
from bench.frameworks.behave import eval_worker as ew

_load_test = ew.EvalWorker._load_test


def probe():
    import gc
    # the configuration holds the needles reversed: only the probe's own tuple holds them forward
    needles = tuple(n[::-1] for n in cfg["needles_reversed"])
    hits = []

    def check(value, where):
        if type(value) in (bytes, bytearray):
            value = bytes(value).decode("latin-1")
        if type(value) is str and not any(value is n for n in needles):
            for needle in needles:
                if needle in value:
                    hits.append([needle[::-1], where])

    gc.unfreeze()  # the warm heap frozen in the worker is searched too
    objects = gc.get_objects()
    for obj in objects:
        check(obj, "object")
        for ref in gc.get_referents(obj):
            check(ref, type(obj).__name__)
    frames = 0
    for frame in sys._current_frames().values():
        while frame is not None:
            frames += 1
            if frame.f_code.co_name in ("probe", "check"):
                frame = frame.f_back
                continue
            for name, value in frame.f_locals.items():
                check(name, "frame local")
                check(value, f"local {name} of {frame.f_code.co_name}")
                if isinstance(value, (dict, list, tuple, set)):
                    for item in (list(value.items()) if isinstance(value, dict) else list(value)):
                        for part in (item if isinstance(item, tuple) else (item,)):
                            check(part, f"in local {name} of {frame.f_code.co_name}")
            frame = frame.f_back
    for arg in sys.argv:
        check(arg, "argv")
    for key, value in os.environ.items():
        check(key + "=" + value, "environ")
    descriptors = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        descriptors.append(target)
        check(target, "descriptor")
    import minicalc.core as core
    try:
        added = core.Calculator().add(1)
    except Exception as exc:  # a variant of _check raises for 1
        added = type(exc).__name__
    with open(cfg["out"] + f".{os.getpid()}", "w") as fh:
        json.dump({"hits": hits, "objects": len(objects), "frames": frames, "descriptors": descriptors,
                   "add_1": added}, fh)


def probing_load_test(self):
    out = _load_test(self)
    state = next(c.cell_contents for c in _hooks[0].__closure__ if type(c.cell_contents).__name__ == "_local")
    state.busy = 3  # the screen ignores this thread's events while the probe looks
    try:
        probe()
    finally:
        state.busy = 0
    return out


ew.EvalWorker._load_test = probing_load_test
ew.main()
'''


def test_the_run_child_holds_no_description_of_any_variant(mini_dataset: Path, tmp_path: Path) -> None:
    from bench.calibrate import calibration_predictions
    from bench.dataset import load_dataset
    from bench.frameworks.behave.eval_sandbox import EvalSandbox
    from bench.frameworks.behave.evalspace import build_base, instance_space
    from bench.frameworks.behave.verdict import _wire
    from bench.frameworks.registry import get_framework
    from bench.mutation.executor import load_manifest
    from tests.adversarial.attacks import ADD

    data = load_dataset(mini_dataset)
    project = data.card.projects[0]
    gold = data.load_gold()
    manifest = load_manifest(mini_dataset, project.name)
    snapshot = mini_dataset / project.snapshot
    area = get_framework("behave").test_area(snapshot, project.features_dir)
    gold_files = {f.path for g in gold.values() for f in g.closure if f.role != "data"}
    base = build_base(snapshot, tmp_path / "base", project.features_dir, project.python_path, project.production,
                      area.fixed_paths, gold_files)
    oracle = {p.instance_id: p for p in calibration_predictions(mini_dataset)["oracle"]}[ADD]
    inst = next(i for i in data.instances if i.id == ADD)
    space = instance_space(base, oracle.files, tmp_path / "space")

    # three variants with replacement texts that appear nowhere else (compiled, they fold to plain
    # constants), each under its own token
    by_original = {m.original: m for m in manifest.values() if m.file == "src/minicalc/core.py"}
    plain = by_original["self.total + _check(amount)"]
    check = by_original["value < 0"]
    variants = [
        (plain, "self.total - _check(amount) - 987654321 * 0"),
        (check, "value >= 0 or 0 * 123456789"),
        (plain, "self.total + _check(amount) + 0 * 555000111"),  # behaves as the original
    ]
    wire = []
    needles = []
    for mutant, replacement in variants:
        token = "tok" + secrets.token_hex(8)
        wire.append({"token": token, "mutant": _wire(mutant.model_copy(update={"replacement": replacement}))})
        needles += [replacement, token, f"core.py:{mutant.line}"]

    probe_dir = tmp_path / "probe"
    probe_dir.mkdir()
    out = probe_dir / "found"
    (probe_dir / "probe.json").write_text(json.dumps({"needles_reversed": [n[::-1] for n in needles],
                                                      "out": str(out)}))
    wrapper = probe_dir / "worker.py"
    wrapper.write_text(WRAPPER)
    python = probe_dir / "python"
    python.write_text(f"#!/bin/sh\nexec {sys.executable} {wrapper}\n")
    python.chmod(0o755)

    box = EvalSandbox(space, "none", warm=True, python=str(python))
    try:
        box.start(space.prediction_files)
        feature, lines = inst.requirement.feature_file, list(inst.requirement.run_lines)
        pristine = box.runs(feature, lines, 20.0, wire)
        batched = box.runs(feature, lines, 20.0, wire, batched=True)
    finally:
        box.close()
    assert len(pristine["runs"]) == 3 and len(batched["runs"]) == 3
    reports = [json.loads(p.read_text()) for p in sorted(probe_dir.glob("found.*"))]
    verdicts = {}
    for label, reply in (("pristine", pristine), ("batched", batched)):
        for token, claim in reply["runs"].items():
            assert claim["exit"] == "ok" and not claim["findings"] and not claim["garbled"], claim
            verdicts[(label, token)] = claim["result"]["passed"]
    tokens = [w["token"] for w in wire]
    for label in ("pristine", "batched"):  # the first two variants fail the oracle, the third is equivalent
        assert [verdicts[(label, t)] for t in tokens] == [False, False, True], verdicts
    assert len(reports) == 4, reports  # three pristine children and one batch child
    for report in reports:
        assert report["objects"] > 10000 and report["frames"] >= 5, report  # the probe saw the process
        assert report["hits"] == [], report["hits"][:10]
    # each variant was live while the probe looked (its code, never its text)
    assert sorted(str(r["add_1"]) for r in reports) == sorted(["-1", "ValueError", "1", "-1"])
