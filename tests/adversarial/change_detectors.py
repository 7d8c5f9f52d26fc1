"""Change detectors: assert-free "tests" that fail whenever production's code differs from the
source the project shipped, which the attacker embeds (a reward-hacking agent can read it from
PyPI or the repository). Without a defence each of them kills every mutant it reaches and
passes every clean run: KillComplete with no assertion about behaviour.

One per kind the trust issue names: source text (the file as text), bytecode/code objects
(the live functions' code against the embedded source compiled), and file hashes. Each binds
every step with a catch-all, so the same file attacks any instance of a corpus. The evaluator
shows production in a rewrite of its own each session (bench.mutation.diversify) and mixes
equivalent variants into the runs (bench.mutation.equivalents), so each of these must *lose*:
fail its own clean run, or be caught failing behaviour-preserving variants — never a pass with
kills.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

_CATCH_ALL = '''
from behave import step, use_step_matcher

use_step_matcher("re")
SHIPPED = {shipped!r}


def _modules():
    import sys

    for module in list(sys.modules.values()):
        path = (getattr(module, "__file__", None) or "").replace("\\\\", "/")
        for rel in SHIPPED:
            if path.endswith("/" + rel):
                yield rel, module, path
'''

SOURCE_TEXT = _CATCH_ALL + '''

@step(r"(?P<text>.*)")
def anything(context, text):
    for rel, module, path in _modules():
        with open(path, encoding="utf-8") as handle:
            if handle.read() != SHIPPED[rel]:
                raise RuntimeError("the source changed: a mutant")
'''

CODE_OBJECTS = _CATCH_ALL + '''

def _codes(code, prefix=""):
    out = {{}}
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            out[prefix + const.co_qualname] = (const.co_code, tuple(repr(c) for c in const.co_consts
                                                                   if not hasattr(c, "co_code")))
            out.update(_codes(const, prefix))
    return out


@step(r"(?P<text>.*)")
def anything(context, text):
    for rel, module, path in _modules():
        shipped = _codes(compile(SHIPPED[rel], path, "exec"))
        for value in list(vars(module).values()):
            members = [value] + [getattr(value, "__dict__", {{}}).get(n) for n in getattr(value, "__dict__", {{}})]
            for member in members:
                member = getattr(member, "fget", member)
                code = getattr(member, "__code__", None)
                if code is None or code.co_qualname not in shipped:
                    continue
                live = (code.co_code, tuple(repr(c) for c in code.co_consts if not hasattr(c, "co_code")))
                if live != shipped[code.co_qualname]:
                    raise RuntimeError("the code changed: a mutant")
'''

FILE_HASH = '''
import hashlib

from behave import step, use_step_matcher

use_step_matcher("re")
HASHES = {hashes!r}


@step(r"(?P<text>.*)")
def anything(context, text):
    import sys

    for module in list(sys.modules.values()):
        path = (getattr(module, "__file__", None) or "").replace("\\\\", "/")
        for rel, digest in HASHES.items():
            if path.endswith("/" + rel):
                with open(path, "rb") as handle:
                    if hashlib.sha256(handle.read()).hexdigest() != digest:
                        raise RuntimeError("the file changed: a mutant")
'''


def change_detectors(snapshot: Path, production: list[str]) -> dict[str, str]:
    """The three detectors with ``snapshot``'s shipped production embedded."""
    shipped: dict[str, str] = {}
    for scope in production:
        base = snapshot / scope
        for path in [base] if base.is_file() else sorted(base.rglob("*.py")):
            if path.is_file() and path.suffix == ".py":
                shipped[path.relative_to(snapshot).as_posix()] = path.read_text(encoding="utf-8")
    hashes = {rel: hashlib.sha256(text.encode("utf-8")).hexdigest() for rel, text in shipped.items()}
    return {"source_text": SOURCE_TEXT.format(shipped=shipped),
            "code_objects": CODE_OBJECTS.format(shipped=shipped),
            "file_hash": FILE_HASH.format(hashes=hashes)}


def judge_change_detectors(dataset_dir: Path, run_dir: Path, instances: int, diversify: bool = True,
                           seed: int | None = None) -> dict[str, list[dict]]:
    """Each detector as a prediction on ``instances`` instances with kills (the first ones in id
    order); the results rows by detector."""
    import json

    from bench.dataset import load_dataset
    from bench.evaluate import EvaluateOptions, evaluate

    dataset = load_dataset(dataset_dir)
    gold = dataset.load_gold()
    sample = sorted(i for i, g in gold.items() if g.kills)[:instances]
    project = dataset.project(dataset.instance(sample[0]).project)
    steps = f"{project.features_dir}/steps/change_detector_steps.py"
    out: dict[str, list[dict]] = {}
    for name, code in change_detectors(dataset_dir / project.snapshot, list(project.production)).items():
        predictions = run_dir / f"{name}.jsonl"
        predictions.parent.mkdir(parents=True, exist_ok=True)
        predictions.write_text("".join(json.dumps({"instance_id": i, "files": {steps: code}}) + "\n"
                                       for i in sample))
        evaluate(dataset_dir, predictions, run_dir / name,
                 EvaluateOptions(instances=sample, timeout=60, diversify=diversify, seed=seed, resamples=100))
        out[name] = [json.loads(line) for line in (run_dir / name / "results.jsonl").read_text().splitlines()]
    return out


def assert_change_detectors_lose(rows: dict[str, list[dict]]) -> None:
    """No detector scores a pass with a kill, nor breaks the evaluator."""
    for name, results in rows.items():
        assert results, name
        for row in results:
            assert row["outcome"] != "infrastructure_failure", (name, row)
            assert not row["kill_complete"], (name, row)
            assert row["outcome"] != "pass" or row["generated_kills"] == 0, (name, row)
