"""Mutant generation, derived test implementations, and the executor against the reference."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest

from bench.mutation.generate import apply_mutant, mutate_source, scope_source
from bench.testimpl import strip_step_bodies

SOURCE = '''\
"""Module docstring."""
from __future__ import annotations


def price(qty: int = 1, unit: float = 2.5) -> float:
    """Total price; "docstring strings" are never mutated."""
    if qty <= 0 and unit > 0:
        raise ValueError("qty")
    total = qty * unit
    total += 1
    log(total)
    return (total -
            0)


@decorator(limit=10)
class Cart:
    items: list[int] = []

    @property
    def empty(self) -> bool:
        return not self.items
'''


def test_operators_and_exclusions() -> None:
    mutants = mutate_source("m.py", SOURCE)
    ops = Counter(m.operator for m in mutants)
    assert set(ops) == {"conditional_boundary", "negate_conditional", "logical", "arithmetic", "constant",
                        "return_value", "call_removal", "negation"}
    texts = {(m.operator, m.original, m.replacement) for m in mutants}
    assert ("conditional_boundary", "qty <= 0", "qty < 0") in texts
    assert ("negate_conditional", "unit > 0", "unit <= 0") in texts
    assert ("logical", "qty <= 0 and unit > 0", "(qty <= 0) or (unit > 0)") in texts
    assert ("arithmetic", "qty * unit", "qty / unit") in texts
    assert ("arithmetic", "total += 1", "total -= 1") in texts
    assert ("constant", '"qty"', '""') in texts
    assert ("call_removal", "log(total)", "None") in texts
    assert ("negation", "not self.items", "(self.items)") in texts
    # never in docstrings, annotations, decorators, default values or class bodies
    originals = {m.original for m in mutants}
    assert not any("docstring" in o for o in originals)
    assert "1" not in {m.original for m in mutants if m.line == 5}      # defaults/annotations of the def
    assert not any(m.line in (16, 18) for m in mutants)                # decorator, class attribute
    assert all(m.function in ("price", "Cart.empty") for m in mutants)


def test_mutants_compile_keep_line_numbers_and_have_stable_ids() -> None:
    mutants = mutate_source("m.py", SOURCE)
    for mutant in mutants:
        mutated = apply_mutant(SOURCE, mutant)
        assert mutated.count("\n") == SOURCE.count("\n"), mutant  # no line moves
        compile(mutated, "m.py", "exec")
    multi = next(m for m in mutants if m.operator == "return_value" and m.line == 12)
    assert multi.end_line == 13 and multi.replacement == "(None\n)"
    assert [m.id for m in mutate_source("m.py", SOURCE)] == [m.id for m in mutants]
    assert len({m.id for m in mutants}) == len(mutants)
    assert mutate_source("x.py", "def broken(:\n") == []


# behave-pandas 0.5.0 (parser.py:45): an operand of ``or`` spans lines, and the logical
# operator's replacement keeps the operands' text, newlines included; padding it with the
# original's newlines again moved the rest of the file down two lines, so the warm executor,
# which recompiles the function from its original line span, lost the function's last lines
# (a ``return`` among them) and recorded kills a fresh process with the mutant on disk did not
MULTILINE_OPERAND = """\
def parse(table, index_levels):
    if (not isinstance(index_levels, int)) or not (
        0 <= index_levels <= len(table)
    ):
        raise ValueError("levels")
    frame = list(table)
    return frame
"""


def test_an_operator_between_multiline_operands_moves_no_line() -> None:
    mutants = mutate_source("p.py", MULTILINE_OPERAND)
    assert any(m.operator == "logical" and m.end_line > m.line for m in mutants)
    for mutant in mutants:
        mutated = apply_mutant(MULTILINE_OPERAND, mutant)
        assert mutated.count("\n") == MULTILINE_OPERAND.count("\n"), mutant
        # what the warm executor compiles: the whole function, its return included
        assert scope_source(MULTILINE_OPERAND, mutant).rstrip().splitlines()[-1].startswith("    return "), mutant


def test_strip_step_bodies(tmp_path: Path) -> None:
    steps = tmp_path / "features/steps/s.py"
    steps.parent.mkdir(parents=True)
    steps.write_text(
        "from behave import given, then\n\n"
        "@given('a {x}')\ndef g(context, x):\n    '''Doc.'''\n    context.x = x\n\n"
        "@then('it is {y}')\ndef t(context, y):\n    assert context.x == y\n    assert y\n\n"
        "def helper():\n    return 1\n")
    then_only = strip_step_bodies(tmp_path, ["features/steps/s.py"], {("features/steps/s.py", 8)})
    text = then_only["features/steps/s.py"]
    assert "context.x = x" in text and "assert" not in text and "return 1" in text
    ast.parse(text)
    everything = strip_step_bodies(tmp_path, ["features/steps/s.py"], None)["features/steps/s.py"]
    assert "context.x = x" not in everything and "'''Doc.'''" in everything and "return 1" in everything


@pytest.mark.integration
def test_executor_agrees_with_a_fresh_process(mini_dataset: Path) -> None:
    """Every pool mutant of every instance: warm verdict == fresh-process verdict."""
    from dataclasses import replace

    from bench.dataset import load_dataset
    from bench.frameworks.behave.framework import BUILD_WORKER_MODULE
    from bench.frameworks.behave.fresh import run_fresh
    from bench.frameworks.worker_pool import WorkerPool, WorkerSpec
    from bench.mutation.executor import collect_session, fallback_jobs, load_manifest, pool_for, resolve_fallbacks

    dataset = load_dataset(mini_dataset)
    project = dataset.card.projects[0]
    root = mini_dataset / project.snapshot
    manifest = load_manifest(mini_dataset, project.name)
    gold = dataset.load_gold()
    spec = WorkerSpec(worker_module=BUILD_WORKER_MODULE, framework="behave", root=root, features_dir="features", python_path=["src"], production=["src/minicalc"],
                      import_packages=["minicalc"], preload=True)
    compared, import_time = 0, 0
    with WorkerPool(spec) as pool, WorkerPool(replace(spec, preload=False, import_packages=[])) as bare:
        for inst in dataset.instances:
            mutants = pool_for(manifest, gold[inst.id].covered_lines)
            reply = pool.call_one({"op": "session", "feature": inst.requirement.feature_file,
                                   "lines": inst.requirement.run_lines, "mutants": [m.model_dump() for m in mutants]})
            outcome = collect_session(reply)
            jobs = fallback_jobs(inst.id, outcome, manifest, inst.requirement.feature_file, inst.requirement.run_lines)
            import_time += len(jobs)
            resolve_fallbacks(bare, jobs, ["minicalc"])
            for mutant in mutants:
                fresh = run_fresh(root, ["src"], inst.requirement.feature_file, inst.requirement.run_lines, mutant, 60)
                assert outcome.verdicts[mutant.id] == fresh.verdict, (inst.id, mutant)
                compared += 1
            # the ground truth recorded at build time is exactly what the executor finds
            assert sorted(k for k, v in outcome.verdicts.items() if v == "killed") == gold[inst.id].kills
    assert compared > 20 and import_time >= 1


def test_kills_before_any_then_step_are_inferred_for_the_stripped_test() -> None:
    from bench.builder.mutation_stage import _killed_before_then
    from bench.mutation.executor import SessionOutcome, collect_session

    outcome = collect_session({"clean": {"exit": "ok"}, "mutants": {
        "given": {"verdict": "killed", "bindings": ["features/steps/a.py:3"]},
        "when": {"verdict": "killed", "bindings": ["features/steps/a.py:3", "features/steps/a.py:9"]},
        "then": {"verdict": "killed", "bindings": ["features/steps/a.py:3", "features/steps/a.py:15"]},
        "crashed": {"verdict": "killed", "detail": "killed by signal 9"},  # no binding list: must run
        "survivor": {"verdict": "survived"},
    }})
    assert outcome.bindings == {"given": ["features/steps/a.py:3"],
                                "when": ["features/steps/a.py:3", "features/steps/a.py:9"],
                                "then": ["features/steps/a.py:3", "features/steps/a.py:15"]}
    targets = {("features/steps/a.py", 15)}  # the Then step definitions the stripped test empties
    assert _killed_before_then(outcome, outcome.killed, targets) == {"given", "when"}
    assert _killed_before_then(SessionOutcome(clean={}), {"given"}, targets) == set()
