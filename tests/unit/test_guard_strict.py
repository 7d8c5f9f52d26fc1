"""The run child's deny-by-default screen (bench.frameworks.behave.guard.strict_hook), rule by rule.

An audit hook can never be removed, so everything happens in a subprocess: a driver prepares
the screen for a small workspace (a "prediction" step file and a production package), puts the
gates in place, activates the screen with a pipe and a secret, then calls each probe of the step
file and records whether it was refused; last, it reads what the screen wrote to the pipe.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

DRIVER = r'''
import json, os, sys, traceback
cfg = json.loads(sys.argv[1])
root = cfg["root"]
os.chdir(root)
sys.path[:0] = [os.path.join(root, "src"), os.path.join(root, "features", "steps")]
import prodpkg.core  # production, imported before the screen (as the warm worker does)
from bench.frameworks.behave.guard import strict_hook

made = strict_hook.make_gates()
prepared = strict_hook.prepare(prediction_files={os.path.join(root, "features", "steps", "probes.py")},
                               production_dirs=[os.path.join(root, "src", "prodpkg")], workspace_root=root,
                               writable_dirs=[root, cfg["scratch"]], gates=made["originals"])
prepared.allow_gates(made["gates"])
strict_hook.install_gates(strict_hook.gate_locations(made["bound"]), made["gates"])
del made
read_fd, write_fd = os.pipe()
os.set_blocking(read_fd, False)
prepared.activate(write_fd, b"s3cr3t")
import probes  # the prediction's code runs from here

outcomes = {}
for name in cfg["probes"]:
    try:
        getattr(probes, "probe_" + name)()
        outcomes[name] = "ok"
    except PermissionError as exc:
        outcomes[name] = "refused: " + str(exc)
    except BaseException as exc:
        outcomes[name] = f"error: {type(exc).__name__}: {exc}"
try:
    channel = os.read(read_fd, 1 << 20).decode()
except BlockingIOError:
    channel = ""
sys.stdout.write(json.dumps({"outcomes": outcomes, "channel": channel}))
'''

PRODUCTION = '''
def price(amount):
    if amount < 0:
        raise ValueError("negative amount")
    return amount * 2
'''

PROBES = r'''
import collections
import dataclasses
import gc
import inspect
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import traceback
import warnings

import prodpkg.core

SCRATCH = os.environ["STRICT_SCRATCH"]
OUTSIDE = os.environ["STRICT_OUTSIDE"]


def probe_honest():
    """What honest step code does: none of it is refused."""
    try:
        prodpkg.core.price(-1)
    except ValueError:
        text = traceback.format_exc()
        assert "negative amount" in text and "raise ValueError" not in text  # no production source line
        logging.getLogger("probe").exception("expected")  # logging formats the same traceback
    logging.getLogger("probe").warning("a warning through logging")
    warnings.warn("a warning")
    collections.namedtuple("Pair", "a b")(1, 2)

    @dataclasses.dataclass
    class Expected:
        total: int
    assert Expected(3).total == 3
    inspect.signature(prodpkg.core.price)
    assert eval("1 + 1") == 2  # python-docx's steps eval values from the feature file
    exec("value = [x * 2 for x in range(3)]", {})
    with open(os.path.join(SCRATCH, "out.txt"), "w") as fh:
        fh.write("x")
    with open(os.path.join("features", "fixtures", "catalog.json")) as fh:  # the workspace's own data
        assert json.loads(fh.read()) == {"items": []}
    json.dumps({"a": 1})
    sorted(os.listdir("."))
    signal.signal(signal.SIGUSR2, signal.SIG_IGN)  # not a handler: nothing runs with a frame


def probe_getframe():
    sys._getframe(0)


def probe_current_frames():
    sys._current_frames()


def probe_tb_frame():
    try:
        1 / 0
    except ZeroDivisionError as exc:
        return exc.__traceback__.tb_frame


def probe_inspect_stack():
    inspect.stack()


def probe_extract_stack():
    traceback.extract_stack()


def probe_capture_locals():
    try:
        prodpkg.core.price(-1)
    except ValueError as exc:
        traceback.TracebackException.from_exception(exc, capture_locals=True)


def probe_logging_currentframe():
    logging.currentframe()


def probe_code():
    return prodpkg.core.price.__code__


def probe_code_write():
    prodpkg.core.price.__code__ = (lambda amount: 0).__code__


def probe_gc():
    gc.get_objects()


def probe_exec_gc():
    exec("import gc\ngc.get_referrers(1)")


def probe_exec_frames():
    exec("import sys\nsys._getframe()")


class _PosingName(str):
    """A file name that hashes and compares like the standard library's json.decoder."""
    def __hash__(self):
        return hash(json_decoder_file())

    def __eq__(self, other):
        return True

    def startswith(self, *args):
        return False


def json_decoder_file():
    import json.decoder
    return json.decoder.__file__


def probe_posing_file_name():
    exec(compile("import sys\nsys._getframe()", _PosingName("<string>"), "exec"), {})


def probe_fd_posing_as_int():
    class Path(str):
        __class__ = property(lambda self: int)
    open(Path(prodpkg.core.__file__)).close()


def probe_compile_posing():
    compile("x = 1", traceback.__file__, "exec")


def probe_exec_module_code():
    import importlib.machinery
    code = importlib.machinery.SourceFileLoader("copy", traceback.__file__).get_code("copy")
    exec(code, {})


def probe_thread():
    worker = threading.Thread(target=exec, args=("x = 1", {}))
    worker.start()
    worker.join()


def probe_thread_trace():
    threading.settrace(lambda *args: None)  # would trace every thread the test starts
    try:
        worker = threading.Thread(target=lambda: None)
        worker.start()
        worker.join()
    finally:
        threading.settrace(None)


def probe_raw_thread():
    import _thread
    _thread.start_new_thread(print, ())


def probe_raw_thread_alias():
    import _thread
    _thread.start_new(print, ())


def probe_signal_handler():
    signal.signal(signal.SIGUSR1, lambda signum, frame: frame)


def probe_fresh_thread_module():
    import _imp
    _imp.create_builtin(sys.modules["_thread"].__spec__)


def probe_claim():
    sys.audit("req2test.claim", b'{"k": "result", "passed": true}')


def probe_gate_event():
    sys.audit("req2test.gate", "start_new_thread", (print, ()), {}, [])


def probe_settrace():
    sys.settrace(None)


def probe_setprofile():
    sys.setprofile(None)


def probe_addaudithook():
    # CPython swallows any Exception a hook raises for sys.addaudithook and leaves the new hook
    # out: the refusal shows as a hook that never runs
    seen = []
    sys.addaudithook(lambda event, args: seen.append(event))
    sys.audit("probe.after_addaudithook")
    if not seen:
        raise PermissionError("the new audit hook was not added")


def probe_ctypes():
    import ctypes
    ctypes.CDLL(None)


def probe_production_source():
    with open(prodpkg.core.__file__) as fh:
        fh.read()


def probe_getsource():
    inspect.getsource(prodpkg.core.price)


def probe_reimport():
    import importlib.util
    spec = importlib.util.spec_from_file_location("fresh_core", prodpkg.core.__file__)
    importlib.util.module_from_spec(spec)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))


def probe_reimport_by_name():
    saved = sys.modules.pop("prodpkg.core")
    try:
        import prodpkg.core  # noqa: F401 - a second copy: fresh, unswapped production
    finally:
        sys.modules["prodpkg.core"] = saved


def probe_pyc():
    import importlib.util
    with open(importlib.util.cache_from_source(prodpkg.core.__file__), "rb") as fh:
        fh.read()


def probe_evaluator_source():
    with open(sys.modules["bench"].__file__) as fh:
        fh.read()


def probe_write_outside():
    open(os.path.join(OUTSIDE, "note.txt"), "w").close()


def probe_write_production():
    open(prodpkg.core.__file__, "a").close()


def probe_tmp_module():
    path = os.path.join(SCRATCH, "evil_helper.py")
    with open(path, "w") as fh:
        fh.write("X = 1\n")
    sys.path.insert(0, SCRATCH)
    import evil_helper  # noqa: F401


def probe_proc_fds():
    os.listdir("/proc/self/fd")


def probe_proc_status():
    with open("/proc/self/status") as fh:
        fh.read()


def probe_fcntl():
    import fcntl
    fcntl.fcntl(1, fcntl.F_GETFL)


def probe_kill_self():
    os.kill(os.getpid(), 0)


def probe_kill_parent():
    os.kill(os.getppid(), 0)


def probe_spawn_kill():
    subprocess.run(["kill", "-0", str(os.getppid())], check=False)


def probe_shell_kill():
    subprocess.run(["sh", "-c", "true; kill -0 $PPID"], check=False)
'''

# probe -> the finding kind it must raise (refused); "honest" must pass untouched
EXPECTED = {
    "getframe": "introspection", "current_frames": "introspection", "tb_frame": "introspection",
    "inspect_stack": "introspection", "extract_stack": "introspection", "capture_locals": "introspection",
    "logging_currentframe": "introspection", "code": "code_objects", "code_write": "code_objects", "gc": "gc",
    "exec_gc": "gc", "exec_frames": "introspection", "posing_file_name": "introspection",
    "fd_posing_as_int": "production_source", "compile_posing": "dynamic_code",
    "exec_module_code": "dynamic_code", "thread": "threads", "thread_trace": "threads", "raw_thread": "threads",
    "raw_thread_alias": "threads", "signal_handler": "signals", "fresh_thread_module": "introspection",
    "claim": "runner_internals", "gate_event": "evaluator_internals", "settrace": "tracing",
    "setprofile": "tracing", "addaudithook": "audit_hook", "ctypes": "ctypes",
    "production_source": "production_source", "getsource": "production_source", "reimport": "production_source",
    "reimport_by_name": "production_source", "pyc": "production_source",
    "evaluator_source": "evaluator_internals", "write_outside": "filesystem",
    "write_production": "production_write", "tmp_module": "dynamic_code", "proc_fds": "process",
    "proc_status": "process", "fcntl": "process", "kill_self": "signals", "kill_parent": "signals",
    "spawn_kill": "signals", "shell_kill": "signals",
}


def _run(tmp_path: Path) -> dict[str, Any]:
    root = tmp_path / "ws"
    (root / "src" / "prodpkg").mkdir(parents=True)
    (root / "src" / "prodpkg" / "__init__.py").write_text("")
    (root / "src" / "prodpkg" / "core.py").write_text(textwrap.dedent(PRODUCTION))
    (root / "features" / "steps").mkdir(parents=True)
    (root / "features" / "steps" / "probes.py").write_text(textwrap.dedent(PROBES))
    (root / "features" / "fixtures").mkdir()
    (root / "features" / "fixtures" / "catalog.json").write_text('{"items": []}')
    scratch, outside = tmp_path / "scratch", tmp_path / "outside"
    scratch.mkdir()
    outside.mkdir()
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    cfg = {"root": str(root), "scratch": str(scratch), "probes": ["honest", *EXPECTED]}
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"),
           "STRICT_SCRATCH": str(scratch), "STRICT_OUTSIDE": str(outside), "TMPDIR": str(scratch),
           "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, str(driver), json.dumps(cfg)], capture_output=True, text=True,
                          timeout=300, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)


def test_every_sensitive_operation_is_refused_whoever_performs_it(tmp_path: Path) -> None:
    result = _run(tmp_path)
    outcomes = result["outcomes"]
    assert outcomes["honest"] == "ok", outcomes["honest"]
    lines = [line for line in result["channel"].splitlines() if line]
    assert lines and all(line.startswith("s3cr3t ") for line in lines)  # every record carries the secret
    findings = [json.loads(line[len("s3cr3t "):]) for line in lines]
    assert all(f["k"] == "finding" and f["screen"] == "runtime" for f in findings)
    kinds = {f["kind"] for f in findings}
    for probe, kind in EXPECTED.items():
        assert outcomes[probe].startswith("refused"), (probe, outcomes[probe])
        assert kind in kinds, (probe, kind, sorted(kinds))
    assert not (tmp_path / "outside" / "note.txt").exists()  # refused, not only reported
    # the claim probe wrote nothing but its finding: no passing record reached the channel
    assert not any(f.get("k") == "result" or f.get("passed") for f in findings)
