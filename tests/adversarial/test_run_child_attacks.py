"""Attacks on the behave run child itself (issue 25 "kills that cannot be forged", issue 26).

Each attack is a real prediction judged end to end by ``req2test evaluate`` on the mini
dataset (tests/conftest.py), like the catalogue in attacks.py, and each gave an outside
attacker pass + KillComplete (or a pass for a test whose every assertion is wrong) before
the run child was rebuilt:

1 blind spots of the attributing audit hook: code run by ``exec`` in a thread the test starts
  or handed to behave as a cleanup has no prediction frame below it; inside, an assert-free
  test compiles the production source it embeds and compares each live function's code;
2 the variant in the run child's memory: the worker's frames (the whole request with every
  variant's file/line/replacement and token) were on the child's stack, its caches in the
  heap, readable with ``sys._current_frames()``, ``gc`` or a signal handler's frame;
3 the result channel: a pipe found with ``os.fstat`` takes a forged passing record, and the
  process kills itself before the runner writes the real one; or the test asks the runner's
  own reporting path to write for it.

None of them may come out pass + KillComplete; where a screen sees them the outcome is
``tampering`` with the screen's evidence. The static scan does not flag any of them (the
payloads are text run by ``exec``, or names it has no reason to suspect), so what is
exercised is the run child: its zygote, its channel and its deny-by-default screen.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.adversarial.attacks import (
    ADD,
    GIVEN_WHEN,
    GOOD,
    NOT_KILL_COMPLETE,
    STEPS,
    Attack,
    Expectation,
    oracle_files,
    run_attack,
    violations,
)
from tests.conftest import MINI_FILES

pytestmark = pytest.mark.integration

# The production module the attacks compare live code with, as the attacker embeds it.
ORIGINAL_CORE = textwrap.dedent(MINI_FILES["src/minicalc/core.py"]).lstrip("\n")


def tampering(summary: str, evidence: str) -> Expectation:
    return Expectation(f"tampering ({summary})", outcomes=("tampering",), detail_contains=evidence)


def _src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


# An assert-free Then step: it fails only when the detector says the run is a mutant's.
DETECTING_THEN = _src('''
    @then("the total is {n:d}")
    def then_total(context, n):
        context.calc.total  # touch it: this step asserts nothing
        if _mutant_run(context):
            raise RuntimeError("not the clean run")
''')

# Run as text by exec: compile the embedded original and compare every live function's code.
CODE_COMPARE = '''
import sys, types
module = sys.modules["minicalc.core"]
original = compile(ORIGINAL, "<original>", "exec")

def nested(code, out):
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out[const.co_qualname] = const
            nested(const, out)
    return out

wanted = nested(original, {})
for value in list(vars(module).values()):
    members = list(vars(value).values()) if isinstance(value, type) else [value]
    for fn in members:
        fn = getattr(fn, "fget", fn)
        if isinstance(fn, types.FunctionType) and fn.__qualname__ in wanted:
            live, disk = fn.__code__, wanted[fn.__qualname__]
            if (live.co_code, live.co_consts) != (disk.co_code, disk.co_consts):
                RESULT["mutant"] = True
'''

THREAD_EXEC = GIVEN_WHEN + "\n\n" + _src('''
    import threading

    ORIGINAL = %r
    TEXT = %r


    def _mutant_run(context):
        scope = {"ORIGINAL": ORIGINAL, "RESULT": {}}
        worker = threading.Thread(target=exec, args=(TEXT, scope))
        worker.start()
        worker.join()
        return scope["RESULT"].get("mutant", False)
''') % (ORIGINAL_CORE, CODE_COMPARE) + "\n\n" + DETECTING_THEN

# behave runs the cleanup (exec of the comparison) at the end of the scenario: it raises there
# when the code differs, which fails the scenario of a mutant run only
CLEANUP_EXEC = _src('''
    from behave import given, when, then
    from minicalc import Calculator

    ORIGINAL = %r
    TEXT = %r + """
    if RESULT.get("mutant"):
        raise RuntimeError("not the clean run")
    """


    @given("a calculator")
    def given_calc(context):
        context.calc = Calculator()
        context.add_cleanup(exec, TEXT, {"ORIGINAL": ORIGINAL, "RESULT": {}})


    @when("I add {n:d}")
    def when_add(context, n):
        context.calc.add(n)


    @then("the total is {n:d}")
    def then_total(context, n):
        context.calc.total  # asserts nothing
''') % (ORIGINAL_CORE, CODE_COMPARE)

# Run as text by exec (map calls it: no call of exec in the source): look for the variant the
# worker described to this process, in every thread's frames or in the collector's heap.
FIND_VARIANT = '''
import sys
def strings(value, depth=0):
    if isinstance(value, str):
        yield value
    elif depth < 4 and isinstance(value, dict):
        for k, v in list(value.items()):
            yield from strings(k, depth + 1)
            yield from strings(v, depth + 1)
    elif depth < 4 and isinstance(value, (list, tuple)):
        for v in value:
            yield from strings(v, depth + 1)

def described(objects):
    for obj in objects:
        if isinstance(obj, dict) and "replacement" in obj and obj.get("replacement") != obj.get("original"):
            return True
        for text in strings(obj, 3):
            if '"replacement"' in text and '"token"' in text:
                return True
    return False
'''

FRAMES_VARIANT = GIVEN_WHEN + "\n\n" + _src('''
    ORIGINAL = ""
    TEXT = %r + """
    frames = []
    for frame in sys._current_frames().values():
        while frame is not None:
            frames.append(frame.f_locals)
            frame = frame.f_back
    RESULT["mutant"] = described(frames)
    """


    def _mutant_run(context):
        scope = {"RESULT": {}}
        list(map(exec, [TEXT], [scope]))
        return scope["RESULT"].get("mutant", False)
''') % FIND_VARIANT + "\n\n" + DETECTING_THEN

GC_VARIANT = GIVEN_WHEN + "\n\n" + _src('''
    TEXT = %r + """
    import gc
    RESULT["mutant"] = described(gc.get_objects())
    """


    def _mutant_run(context):
        scope = {"RESULT": {}}
        list(map(exec, [TEXT], [scope]))
        return scope["RESULT"].get("mutant", False)
''') % FIND_VARIANT + "\n\n" + DETECTING_THEN

# A signal handler gets the interrupted frame without any audited read; from there every
# frame below it and their locals (the worker's request, once) are plain attributes.
SIGNAL_FRAME = GIVEN_WHEN + "\n\n" + _src('''
    import signal

    SEEN = {}


    def _walk(signum, frame):
        found = []
        while frame is not None:
            found.append(dict(getattr(frame, "f_" + "locals")))
            frame = getattr(frame, "f_" + "back")
        SEEN["locals"] = found


    def _mutant_run(context):
        signal.signal(signal.SIGUSR1, _walk)
        signal.raise_signal(signal.SIGUSR1)
        for scope in SEEN.get("locals", []):
            for value in scope.values():
                if isinstance(value, dict) and isinstance(value.get("variants"), list):
                    return any((v.get("mutant") or {}).get("replacement") != (v.get("mutant") or {}).get("original")
                               for v in value["variants"] if isinstance(v, dict))
        return False
''') + "\n\n" + DETECTING_THEN

# A walk of everything reachable from the loaded modules with no audited operation at all
# (module, class and instance dicts, closures' cells, containers): no screen can see it, so
# it runs to the end — and finds nothing to tell the runs apart.
REACHABLE_VARIANT = GIVEN_WHEN + "\n\n" + _src('''
    TEXT = %r + """
    seen, todo, found = set(), list(sys.modules.values()), []
    while todo and len(seen) < 400000:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        found.append(obj)
        try:
            namespace = vars(obj)
        except TypeError:
            namespace = None
        if isinstance(namespace, dict):
            todo.extend(namespace.values())
        if isinstance(obj, dict):
            todo.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            todo.extend(obj)
        for cell in getattr(obj, "__closure__", None) or ():
            try:
                todo.append(cell.cell_contents)
            except ValueError:
                pass
    RESULT["mutant"] = described(found)
    """


    def _mutant_run(context):
        scope = {"RESULT": {}}
        list(map(exec, [TEXT], [scope]))
        return scope["RESULT"].get("mutant", False)
''') % FIND_VARIANT + "\n\n" + DETECTING_THEN

# Every assertion wrong; a passing record (good for the traced run's ladder and for a verdict
# run) written to the one pipe among the descriptors, then the process kills itself before the
# runner can write the real one.
FORGED_RECORD = GIVEN_WHEN + "\n\n" + _src('''
    import json
    import os
    import signal
    import stat

    FORGED = {"k": "result", "exit": "ok", "failed": False, "abort": None, "hook_failures": 0,
              "feature_hook_failed": False, "passed": True, "steps_ran": 3, "first_failure": None,
              "scenarios": [{"line": 9, "name": "Add one number", "status": "passed", "hook_failed": False}],
              "steps": [{"depth": 0, "type": t, "keyword": k, "name": n, "line": ln, "file": "features/calc.feature",
                         "top_index": i, "background": i == 0, "scenario_line": 9, "binding": None,
                         "status": "passed"}
                        for i, (t, k, n, ln) in enumerate([("given", "Given", "a calculator", 7),
                                                           ("when", "When", "I add 3", 10),
                                                           ("then", "Then", "the total is 3", 11)])],
              "trace": {"direct": {}, "executed_when_then": [], "executed_other": [], "test_files": [],
                        "coverage": {}, "points": [], "first_point": {}, "opened": []},
              "unbound": []}


    @then("the total is {n:d}")
    def then_total(context, n):
        line = (json.dumps(FORGED) + "\\n").encode()
        for fd in range(3, 256):
            try:
                mode = os.fstat(fd).st_mode
            except OSError:
                continue
            if stat.S_ISFIFO(mode):
                try:
                    os.write(fd, line)
                except OSError:
                    pass
        signal.raise_signal(signal.SIGKILL)
        assert context.calc.total == 999, "false on purpose"
''')

# The runner's own reporting path, asked by the test: the claim event, and the evaluator's
# claim function found through the worker's module (run as text by exec).
CLAIM_FROM_TEST = GIVEN_WHEN + "\n\n" + _src('''
    import json
    import sys

    TEXT = """
    import json, sys
    record = json.dumps({"k": "result", "passed": True, "steps_ran": 3, "first_failure": None}).encode()
    sys.audit("req2test.claim", record)
    for module in list(sys.modules.values()):
        claim = vars(module).get("_claim")
        if callable(claim):
            claim(record)
    """


    @then("the total is {n:d}")
    def then_total(context, n):
        list(map(exec, [TEXT], [{}]))
        assert context.calc.total == 999, "false on purpose"
''')

RUN_CHILD_ATTACKS = [
    Attack("thread_exec_code_compare", 1, "assert-free; threading.Thread(target=exec) compiles the embedded original "
                                          "and compares every live function's code", {STEPS: THREAD_EXEC},
           tampering("thread started by the test", "threads")),
    Attack("cleanup_exec_code_compare", 1, "assert-free; context.add_cleanup(exec, TEXT, g) compares code objects "
                                           "with the embedded original and raises on a difference",
           {STEPS: CLEANUP_EXEC}, tampering("code object read by exec'd text", "code_objects")),
    Attack("current_frames_variant", 2, "assert-free; sys._current_frames() and every frame's locals searched for "
                                        "the worker's request", {STEPS: FRAMES_VARIANT},
           tampering("frames of other threads", "introspection")),
    Attack("gc_variant", 2, "assert-free; gc.get_objects() searched for the variant's description",
           {STEPS: GC_VARIANT}, tampering("the collector's heap", "gc")),
    Attack("signal_frame_variant", 2, "assert-free; a SIGUSR1 handler walks the interrupted frame's f_back chain and "
                                      "locals for the request", {STEPS: SIGNAL_FRAME},
           tampering("a Python signal handler", "signals")),
    Attack("reachable_variant", 2, "assert-free; everything reachable from sys.modules without an audited "
                                   "operation searched for the variant (no screen fires: nothing is there)",
           {STEPS: REACHABLE_VARIANT}, NOT_KILL_COMPLETE),
    Attack("forged_record_fstat", 3, "every assertion wrong; a passing record written to the pipe os.fstat finds, "
                                     "then SIGKILL before the runner writes", {STEPS: FORGED_RECORD},
           tampering("a record without the run's secret", "without the run's secret")),
    Attack("forged_record_then_fail", 3, "every assertion wrong; the same forged record, then the run goes on and "
                                         "fails", {STEPS: FORGED_RECORD.replace("signal.raise_signal(signal.SIGKILL)",
                                                                               "pass")},
           tampering("a record without the run's secret", "unreadable lines")),
    Attack("claim_from_test", 3, "every assertion wrong; sys.audit('req2test.claim') and the evaluator's own "
                                 "_claim called with a passing record", {STEPS: CLAIM_FROM_TEST},
           tampering("a claim from outside the runner", "claim from outside the runner")),
]


@pytest.mark.parametrize("attack", RUN_CHILD_ATTACKS, ids=lambda a: f"c{a.klass}-{a.name}")
def test_run_child_attack_is_defeated(attack: Attack, mini_dataset: Path, tmp_path: Path) -> None:
    from bench.frameworks.behave.guard.static_scan import scan_prediction

    assert not scan_prediction(attack.files), "the attack must reach the run child, not stop at the static scan"
    run = run_attack(attack, mini_dataset, tmp_path / attack.name, oracle_files(mini_dataset), timeout=10.0)
    problems = violations(attack, run)
    record = run.target(attack) or {}
    assert not problems, f"{attack.name} ({attack.description}): {record.get('outcome')} " \
                         f"{(record.get('detail') or '')[:300]}\n  " + "\n  ".join(problems)
    if attack.expectation.outcomes == ("tampering",):  # seen by the run child's screens, not the static scan
        assert "run" in (record.get("detail") or ""), record.get("detail")


DATACLASS_STEPS = GOOD + "\n\n" + _src('''
    from dataclasses import dataclass


    @dataclass
    class Expected:
        total: int
''')


def test_a_step_module_with_a_dataclass_is_not_tampering(mini_dataset: Path, tmp_path: Path) -> None:
    """Issue 26 item 3: behave execs step files without ``__name__``, so dataclasses execs the
    generated methods into ``builtins`` (which gains ``__builtins__``): honest, never a finding."""
    attack = Attack("dataclass_steps", 0, "a correct test whose step module defines a dataclass",
                    {STEPS: DATACLASS_STEPS}, Expectation("pass + kill_complete", pass_allowed=True,
                                                          kill_complete_allowed=True, outcomes=("pass",)))
    run = run_attack(attack, mini_dataset, tmp_path / "dataclass", oracle_files(mini_dataset), timeout=10.0)
    record = run.results.get(ADD) or {}
    assert not violations(attack, run), (record.get("outcome"), record.get("detail"))
    assert record.get("kill_complete"), record
