"""Runtime tamper screen: a PEP 578 audit hook installed before any prediction code loads.

This is the *attributing* screen: it flags what a prediction's frame owns. The evaluator's
behave run child uses the deny-by-default screen ``bench.frameworks.behave.guard.strict_hook`` instead (which
refuses sensitive events whoever performs them: code run by ``exec`` in a thread or as a
behave cleanup has no prediction frame to attribute to); this one remains for callers that
drive behave in a process of their own (``install``) and as the reference for its rules.

STANDARD LIBRARY ONLY: it runs inside the project's environment, in a sandbox, in the
forked child that is about to load the prediction's step modules.

Every audited event the interpreter raises reaches ``hook``; the few that matter are
*attributed*: frames are walked from the operation's caller towards the bottom of the
stack, skipping code that acts on behalf of its caller (the standard library, frozen
importlib, ``<string>`` code, installed libraries including behave), and the first
remaining frame owns the event. Owners are classified by file:

  prediction  a file in ``prediction_files``, or code from anywhere unknown (a module the
              test wrote to /tmp, a workspace file created after ``install``)
  trusted     the evaluator's package (``bench``) and ``trusted_dirs``
  production  ``production_dirs``
  project     the workspace's own files (hooks, kept helpers) that predate ``install``

Only events owned by a prediction are findings, with a few exceptions that count
whenever prediction code is anywhere on the stack (signalling another process, ptrace,
``/proc/<pid>/mem``, writes outside ``writable_dirs``, writes into production): those
are harmful whoever performs them on the prediction's behalf.

Rules that keep the screen quiet on honest tests (the bundled example's and python-docx
1.2.0's own steps raise no finding, in plain and in traced runs):
- frames and code objects read by the standard library *for its own use* (logging's
  caller lookup, namedtuple's module name, ``inspect.signature`` reading ``__code__``,
  traceback formatting reading ``tb_frame``) are not findings; only a direct read, or
  one through a function that hands frames/code back (``inspect.stack``,
  ``traceback.walk_stack``, ``dis``...), is;
- everything the import system does while importing a module (opening and unmarshalling
  its ``.pyc``, running the module body) belongs to the import, not to the importer --
  unless the module is production code that was already imported (a fresh copy would
  bypass the mutant under test);
- production source read by traceback formatting of an exception is not a finding.

Rules that keep an attacker from hiding behind someone else's frame:
- a callable the prediction hands to behave (``context.add_cleanup(gc.get_objects)``)
  runs from behave's frames: behave itself never touches gc, ctypes, trace hooks, audit
  hooks or code objects, so such an event whose nearest library frame is behave counts;
- evaluator code entered *from* prediction code (other than through a profile/trace/audit
  callback) is owned by the prediction;
- ``compile`` with a real file name (code posing as behave or stdlib) is a finding.

Kinds are those of ``static_scan`` plus ``ptrace`` (``/proc/<pid>/mem``, ptrace symbols),
``production_write`` (writing a production file) and ``filesystem`` (writing outside
``writable_dirs``). With ``block=True`` the hook raises ``PermissionError("req2test: <kind> is not allowed in
a test")`` for the kinds in ``BLOCKING`` after ``emit`` has written the finding out.
The hook never calls ``repr``/``str`` on objects the test made: code it does not own would
run inside the hook, where events are not screened.

Not audited by CPython, hence covered by ``static_scan`` and ``integrity`` instead:
attribute writes on classes and modules, ``f_back``/``f_globals``/``f_locals``,
``__closure__``/``cell_contents``/``__globals__``, ``sys.modules`` edits, ``sys.gettrace``.
"""

from __future__ import annotations

import _thread
import os
import sys
import sysconfig
import time
from typing import Any, Callable

from bench import PACKAGE_DIR
from bench.frameworks.behave.guard.events import CODE_ATTRS as _CODE_ATTRS
from bench.frameworks.behave.guard.events import PYTHON_SIGNAL as _PYTHON_SIGNAL
from bench.frameworks.behave.guard.events import READ_ATTRS as _READ_ATTRS
from bench.frameworks.behave.guard.events import SHELL_SIGNAL as _SHELL_SIGNAL
from bench.frameworks.behave.guard.events import SHELLS as _SHELLS
from bench.frameworks.behave.guard.events import SIGNAL_TOOLS as _SIGNAL_TOOLS
from bench.frameworks.behave.guard.events import SPAWN as _SPAWN
from bench.frameworks.behave.guard.events import WRITES as _WRITES
from bench.frameworks.behave.guard.events import package_dir as _package_dir
from bench.frameworks.behave.guard.events import prefixes as _prefixes

BLOCKING = frozenset({
    "ctypes", "gc", "introspection", "code_objects", "tracing", "signals", "audit_hook", "production_source",
    "evaluator_internals", "ptrace", "production_write", "dynamic_code",
})

# event -> what it is about; everything else returns at the first line of the hook
_HARD = {  # findings whenever the owner is a prediction, whatever library sits in between
    "gc.get_objects": "gc", "gc.get_referrers": "gc", "gc.get_referents": "gc",
    "sys.settrace": "tracing", "sys.setprofile": "tracing", "sys.addaudithook": "audit_hook",
    "code.__new__": "code_objects", "function.__new__": "code_objects", "marshal.loads": "code_objects",
    "marshal.load": "code_objects", "marshal.dumps": "code_objects", "marshal.dump": "code_objects",
}
_CTYPES = frozenset({
    "ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.call_function", "ctypes.addressof",
    "ctypes.cdata", "ctypes.cdata/buffer", "ctypes.create_string_buffer", "ctypes.create_unicode_buffer",
    "ctypes.get_errno", "ctypes.set_errno", "ctypes.get_last_error", "ctypes.set_last_error",
    "ctypes.string_at", "ctypes.wstring_at", "ctypes.PyObj_FromPtr", "ctypes.seh_exception",
})
_PTRACE_SYMBOLS = frozenset({"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd"})
_WATCHED = frozenset({
    "object.__getattr__", "object.__setattr__", "object.__delattr__", "sys._getframe", "sys._current_frames",
    "sys._current_exceptions", "os.kill", "os.killpg", "open", "import", "compile",
    *_HARD, *_CTYPES, *_WRITES, *_SPAWN,
})

# stdlib entry points (path relative to the stdlib dir, function) that hand frames or code
# objects back to their caller: reading through them is reading directly
_LEAKY: dict[str, frozenset[str] | None] = {
    "inspect.py": frozenset({"currentframe", "stack", "trace", "getouterframes", "getinnerframes", "getframeinfo",
                             "getargvalues", "getgeneratorlocals", "getcoroutinelocals", "getclosurevars",
                             "getmembers", "getmembers_static", "_getmembers"}),
    "traceback.py": frozenset({"walk_stack", "walk_tb", "extract_stack", "format_stack", "print_stack", "extract"}),
    "dis.py": None, "pdb.py": None, "bdb.py": None,
}
# traceback functions that format an *exception*: the source lines they read are the lines
# that raised, which any test may print
_EXCEPTION_FORMAT = frozenset({
    "format_exc", "print_exc", "format_exception", "print_exception", "format_tb", "print_tb", "extract_tb",
    "print_last", "format_exception_only", "from_exception", "__init__",
})
_IMPORT_FIND = "_find_and_load"
_IMPORT_LOAD = frozenset({"_load_unlocked", "exec_module", "_load"})
# evaluator callbacks the interpreter calls with prediction frames below them
# (bench.frameworks.behave.worker.RunRecorder's profile functions and audit hook, the
# worker's import-time profiler)
DEFAULT_CALLBACKS = frozenset({"_profile", "_split_profile", "_audit", "record_import_time"})

# frame classes; those below _OWNER are transparent (they act for their caller)
_FROZEN, _PSEUDO, _STDLIB, _LIB, _BEHAVE = 0, 1, 2, 3, 4
_OWNER = 5
_PREDICTION, _TRUSTED, _PRODUCTION, _PROJECT = 5, 6, 7, 8

_INSTALLED = False


class Screen:
    """What ``install`` returns: the findings so far (also emitted as they happen)."""

    def __init__(self) -> None:
        self.findings: list[dict[str, Any]] = []
        self.checked = 0  # watched events that needed attribution (for overhead reports)

    @property
    def kinds(self) -> set[str]:
        return {str(f["kind"]) for f in self.findings}






def install(*, prediction_files: set[str], production_dirs: list[str], workspace_root: str,
            writable_dirs: list[str], emit: Callable[[dict[str, Any]], None], block: bool = True,
            trusted_dirs: list[str] | None = None, callbacks: frozenset[str] = DEFAULT_CALLBACKS) -> Screen:
    """Add the audit hook (once per process: audit hooks cannot be removed).

    ``prediction_files`` are absolute paths; ``writable_dirs`` are where a test may write
    (the temp dir and /dev/null always are); ``emit`` receives each finding as a dict with
    the fields of ``TamperFinding`` the moment it is found; ``trusted_dirs`` adds code
    locations to the evaluator's (tests that drive behave from their own script).
    """
    prepared = prepare(prediction_files=prediction_files, production_dirs=production_dirs,
                       workspace_root=workspace_root, writable_dirs=writable_dirs, block=block,
                       trusted_dirs=trusted_dirs, callbacks=callbacks)
    return prepared.activate(emit)


class Prepared:
    """A hook built and its path classifications warmed, not yet active: a warm worker
    prepares once, and every forked run child activates it (a few microseconds) with its
    own channel before the test loads."""

    def __init__(self, screen: Screen, hook: Callable[[str, tuple[Any, ...]], None],
                 sink: list[Callable[[dict[str, Any]], None]]) -> None:
        self._screen, self._hook, self._sink = screen, hook, sink
        self._active = False

    def activate(self, emit: Callable[[dict[str, Any]], None]) -> Screen:
        # a per-object flag: a forked child activates its inherited copy once, and the
        # module's globals stay as the integrity snapshot saw them
        if self._active:
            raise RuntimeError("the req2test audit hook is already installed in this process")
        self._active = True
        self._sink[0] = emit
        sys.addaudithook(self._hook)
        return self._screen


def prepare(*, prediction_files: set[str], production_dirs: list[str], workspace_root: str,
            writable_dirs: list[str], block: bool = True, trusted_dirs: list[str] | None = None,
            callbacks: frozenset[str] = DEFAULT_CALLBACKS) -> Prepared:
    """Everything ``install`` does but adding the hook (see ``Prepared``); once a process."""
    global _INSTALLED
    if _INSTALLED:
        raise RuntimeError("the req2test audit hook is already installed in this process")
    _INSTALLED = True
    sink: list[Callable[[dict[str, Any]], None]] = [lambda finding: None]

    def emit(finding: dict[str, Any]) -> None:
        sink[0](finding)

    screen = Screen()
    findings = screen.findings

    # -- everything the hook calls is bound now, before the test can patch a module
    getframe = sys._getframe
    normpath, realpath, join, isabs = os.path.normpath, os.path.realpath, os.path.join, os.path.isabs
    basename = os.path.basename
    getcwd, getpid, getpgid, os_open, os_read, os_close, os_stat = (os.getcwd, os.getpid, os.getpgid, os.open,
                                                                     os.read, os.close, os.stat)
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    state = _thread._local()
    started = time.time()
    threading = sys.modules.get("threading")
    function_type, method_type = type(_prefixes), type(Screen().__init__)

    def norm(path: str) -> str:
        return normpath(path if isabs(path) else join(getcwd(), path))

    predictions = frozenset(norm(p) for p in prediction_files)
    production = _prefixes(production_dirs)
    trusted = _prefixes([PACKAGE_DIR, *(trusted_dirs or [])])
    behave_dir = _prefixes([_package_dir("behave")])
    lib_dirs: list[str] = []
    stdlib_dirs: list[str] = []
    for scheme_prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}:
        paths = sysconfig.get_paths(vars={"base": scheme_prefix, "platbase": scheme_prefix,
                                          "installed_base": scheme_prefix, "installed_platbase": scheme_prefix})
        lib_dirs += [paths["purelib"], paths["platlib"]]
        stdlib_dirs += [paths["stdlib"], paths["platstdlib"]]
    try:
        import site
        lib_dirs += site.getsitepackages() + [site.getusersitepackages()]
    except (AttributeError, ImportError):
        pass
    libs = _prefixes(lib_dirs)
    stdlibs = _prefixes(stdlib_dirs)
    workspace = _prefixes([workspace_root])
    writable = _prefixes([*writable_dirs, _tempdir()])
    writable_files = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})

    classes: dict[str, int] = {}
    stdlib_rel: dict[str, str] = {}
    reimport_seen: set[str] = set()
    for module in list(sys.modules.values()):  # production already imported: a second import is a fresh copy
        for attr in ("__file__", "__cached__"):
            path = getattr(module, attr, None)
            if isinstance(path, str) and _under(norm(path), production):
                reimport_seen.add(norm(path))

    def classify(filename: str) -> int:
        if filename.startswith("<"):
            cls = _FROZEN if filename.startswith("<frozen ") else _PSEUDO
        else:
            path = norm(filename)
            if path in predictions:
                cls = _PREDICTION
            elif _under(path, production):
                cls = _PRODUCTION
            elif _under(path, trusted):
                cls = _TRUSTED
            elif _under(path, behave_dir):
                cls = _BEHAVE
            elif _under(path, libs):
                cls = _LIB
            elif _under(path, stdlibs):
                cls = _STDLIB
                for prefix in stdlibs:
                    if path.startswith(prefix):
                        stdlib_rel[filename] = path[len(prefix):]
                        break
            elif _under(path, workspace):
                # a file the test wrote after we started is the test's code
                try:
                    cls = _PROJECT if os_stat(path).st_ctime < started else _PREDICTION
                except OSError:
                    cls = _PREDICTION
            else:
                cls = _PREDICTION  # unknown code: written by the test, or posing as something else
        classes[filename] = cls
        return cls

    def walk(frame: Any) -> tuple[int, Any, int, Any, bool, int, bool]:
        """(owner class, owner frame, transparent frames in between, the one the owner called,
        inside an import, nearest library class, inside exception formatting)."""
        k = 0
        entry = None
        found_find = found_load = pseudo_first = exc_format = False
        first_lib = 0
        f = frame
        while f is not None:
            code = f.f_code
            filename = code.co_filename
            cls = classes.get(filename)
            if cls is None:
                cls = classify(filename)
            if cls >= _OWNER:
                return (cls, f, k, entry, found_find and found_load and not pseudo_first, first_lib,
                        exc_format)
            if cls == _FROZEN:
                name = code.co_name
                if name == _IMPORT_FIND:
                    found_find = True
                elif name in _IMPORT_LOAD:
                    found_load = True
            elif cls == _PSEUDO:
                if not found_load:
                    pseudo_first = True  # exec'd text running as if it were a module body
            else:
                k += 1
                entry = code
                if not first_lib and cls >= _LIB:
                    first_lib = cls
                if cls == _STDLIB and code.co_name in _EXCEPTION_FORMAT and \
                        stdlib_rel.get(filename) == "traceback.py":
                    exc_format = True
            f = f.f_back
        return -1, None, k, entry, found_find and found_load and not pseudo_first, first_lib, exc_format

    def class_of(frame: Any) -> int:
        filename = frame.f_code.co_filename
        cls = classes.get(filename)
        return classify(filename) if cls is None else cls

    def proxied(frame: Any) -> Any:
        """The prediction frame that called into evaluator code at ``frame`` -- directly or
        through the standard library only, and not as a profile/trace/audit callback -- or
        None. (Evaluator code that behave calls, such as the recorder's wrapped
        ``Step.run``, is the evaluator's own doing even with a prediction further down.)"""
        entry = frame
        f = frame
        while f is not None:
            cls = class_of(f)
            if cls == _TRUSTED:
                entry = f
            elif cls >= _LIB:
                break
            f = f.f_back
        if f is not None and class_of(f) == _PREDICTION and entry.f_code.co_name not in callbacks:
            return f
        return None

    def prediction_below(frame: Any) -> Any:
        f = frame
        while f is not None:
            if class_of(f) == _PREDICTION:
                return f
            f = f.f_back
        return None

    def leaky(entry: Any) -> bool:
        rel = stdlib_rel.get(entry.co_filename)
        if rel is None or rel not in _LEAKY:
            return False
        names = _LEAKY[rel]
        return names is None or entry.co_name in names

    def report(kind: str, frame: Any, evidence: str) -> None:
        path, line = "", 0
        if frame is not None:
            path = norm(frame.f_code.co_filename)
            for prefix in workspace:
                if path.startswith(prefix):
                    path = path[len(prefix):]
                    break
            line = frame.f_lineno or 0
        finding = {"kind": kind, "path": path, "line": line, "evidence": evidence[:200], "screen": "runtime"}
        findings.append(finding)
        try:
            emit(dict(finding))
        except BaseException:  # noqa: BLE001 - a broken channel must not unblock the operation
            pass
        if block and kind in BLOCKING:
            raise PermissionError(f"req2test: {kind} is not allowed in a test")

    def owner_of(frame: Any) -> tuple[int, Any, int, Any, bool, int, bool]:
        # Events come in bursts from one frame (traceback.extract_stack reads f_code of every
        # frame on the stack): while that frame runs, the frames below it cannot change, so
        # its walk is reused. The frame is held, so its id cannot be recycled meanwhile; a
        # generator frame's caller can change between resumptions, hence the f_back check.
        if frame is not None and frame is state.frame and frame.f_back is state.back:
            return state.info
        info = walk(frame)
        if info[0] == _TRUSTED:
            entered = proxied(info[1])
            if entered is not None:
                info = (_PREDICTION, entered) + info[2:]
        state.frame, state.back, state.info = frame, (frame.f_back if frame is not None else None), info
        return info

    def attributed(kind: str, frame: Any, evidence: str, *, hard: bool = False) -> None:
        """A finding when a prediction owns the event (outside an import); ``hard``: also when
        behave itself performed it, which only happens when behave runs a callable a test
        handed it (``context.add_cleanup(gc.get_objects)``)."""
        cls, owner, _, _, in_import, first_lib, _ = owner_of(frame)
        if in_import:
            return
        if cls == _PREDICTION:
            report(kind, owner, evidence)
        elif hard and first_lib == _BEHAVE:
            report(kind, None, evidence + " (called by behave)")

    def anywhere(kind: str, frame: Any, evidence: str) -> None:
        """A finding when a prediction owns the event or is anywhere below its owner."""
        cls, owner, _, _, in_import, _, _ = owner_of(frame)
        if in_import or cls == _TRUSTED or cls < 0:
            return
        culprit = owner if cls == _PREDICTION else prediction_below(owner)
        if culprit is not None:
            report(kind, culprit, evidence)

    def clean_path(value: Any) -> str | None:
        """A path argument as a plain str, without running code the test may have put in it."""
        if type(value) is str:
            return value
        if type(value) is bytes:
            return value.decode("utf-8", "surrogateescape")
        if isinstance(value, str):
            return "".join((value,))  # a str subclass: copy the characters, call no method of it
        if isinstance(value, bytes):
            return b"".join((value,)).decode("utf-8", "surrogateescape")
        return None

    def write_problem(path: str) -> tuple[str, str] | None:
        """(kind, resolved path) when writing ``path`` is not allowed; symlinks are followed,
        so a link the workspace holds into production or the original tree does not hide it."""
        if path in writable_files:
            return None
        plain = norm(path)
        real = realpath(plain)
        if _under(real, production) or _under(plain, production):
            return "production_write", real
        if _under(real, writable) or real in writable_files:
            return None
        return "filesystem", real

    def open_target(args: tuple[Any, ...]) -> tuple[str, str] | None:
        """(what, path) of an ``open`` worth attributing; None for the many that are not
        (reads of data files, writes where writing is fine). Looks at no frame."""
        path = clean_path(args[0])
        if path is None:
            return "object", ""  # io.FileIO(<object>): a path we cannot read without running its code
        mode = args[1] if len(args) > 1 else None
        flags = args[2] if len(args) > 2 else 0
        if type(mode) is str:
            writing = any(c in mode for c in "wax+")
        else:
            writing = type(flags) is int and bool(flags & write_flags)
        if writing:
            problem = write_problem(path)
            return problem
        if not isabs(path):
            path = norm(path)
        if path.startswith("/proc/"):
            return ("ptrace" if path.endswith("/mem") else "process"), path
        if path.endswith((".py", ".pyc", ".pyo")) or "__pycache__" in path:
            return "source", normpath(path)
        return None

    def on_open(what: str, path: str, frame: Any) -> None:
        if what == "object":
            attributed("filesystem", frame, "open of a path object")
        elif what in ("ptrace", "production_write", "filesystem"):
            anywhere(what, frame, f"open {path}" if what == "ptrace" else f"open for writing {path}")
        elif what == "process":
            attributed("process", frame, f"open {path}")
        elif path.endswith((".pyc", ".pyo")) or "__pycache__" in path:
            reopen("evaluator_internals" if _under(path, trusted) else "production_source", path, frame)
        elif _under(path, production) or _under(realpath(path), production):
            reopen("production_source", path, frame)
        elif _under(path, trusted):
            attributed("evaluator_internals", frame, f"open {path}")

    def reopen(kind: str, path: str, frame: Any) -> None:
        """Source or bytecode read: fine for a first import and for exception formatting."""
        cls, owner, _, _, in_import, _, exc_format = owner_of(frame)
        if cls != _PREDICTION:
            return
        if in_import:
            # one import opens the .pyc, and the .py when the cache is stale: each file once
            if kind == "production_source" and _under(_source_of(path), production):
                if path in reimport_seen:
                    report(kind, owner, f"re-import of {_source_of(path)}")
                reimport_seen.add(path)
            return
        if exc_format:
            return
        report(kind, owner, f"open {path}")

    def on_kill(event: str, args: tuple[Any, ...], frame: Any) -> None:
        target = args[0] if args and type(args[0]) is int else 0
        if event == "os.kill":
            if target > 0 and target != getpid() and _is_child(target, getpid(), os_open, os_read, os_close):
                return
        else:  # killpg: a group whose leader is our child
            try:
                mine = getpgid(0)
            except OSError:
                mine = -1
            if target > 0 and target != mine and _is_child(target, getpid(), os_open, os_read, os_close):
                return
        anywhere("signals", frame, f"{event} {target} signal {args[1] if len(args) > 1 and type(args[1]) is int else '?'}")

    def on_spawn(event: str, args: tuple[Any, ...], frame: Any) -> None:
        """A process started to do the signalling (``kill``, ``sh -c 'kill ...'``, ``python -c
        'os.kill(...)'``): the new process is not screened, so its command line is."""
        if event == "os.system":
            command = clean_path(args[0]) if args else None
            argv = ["sh", "-c", command] if command is not None else []
        else:
            raw = args[2] if event == "os.spawn" and len(args) > 2 else (args[1] if len(args) > 1 else None)
            text = clean_path(raw)
            if text is not None:
                argv = [text]
            elif type(raw) in (list, tuple):
                argv = [w for w in (clean_path(a) for a in raw[:16]) if w is not None]
            else:
                argv = []
        if not argv:
            return
        program = basename(argv[0].split()[0]) if argv[0].strip() else ""
        script = argv[argv.index("-c") + 1] if "-c" in argv[:-1] else ""
        if program in _SIGNAL_TOOLS or (program in _SHELLS and _SHELL_SIGNAL.search(script)) or \
                (program.startswith("python") and _PYTHON_SIGNAL.search(script)):
            anywhere("signals", frame, f"{event} {' '.join(argv)[:160]}")

    def on_threadless_trace(event: str) -> None:
        # a new thread installs threading's trace/profile hook before any frame of its own
        if threading is None:
            return
        # read through the module dict and exact types: no code of the test's runs in here
        fn = vars(threading).get("_trace_hook" if event == "sys.settrace" else "_profile_hook")
        if type(fn) is method_type:
            fn = fn.__func__
        if type(fn) is not function_type:
            return
        filename = fn.__code__.co_filename
        if type(filename) is str and (classes.get(filename) or classify(filename)) == _PREDICTION:
            report("tracing", None, f"{event} in a new thread ({basename(filename)})")

    def handle(event: str, args: tuple[Any, ...], frame: Any) -> None:
        """Every watched event but reads and opens (``hook`` decides those itself)."""
        if event == "object.__setattr__" or event == "object.__delattr__":
            if len(args) > 1 and args[1] in _CODE_ATTRS:
                attributed("code_objects", frame, f"write of .{args[1]}", hard=True)
        elif event in _HARD:
            if event in ("sys.settrace", "sys.setprofile") and (frame is None or walk(frame)[0] < 0):
                on_threadless_trace(event)
            else:
                attributed(_HARD[event], frame, event, hard=True)
        elif event in _CTYPES:
            if event == "ctypes.dlsym" and len(args) > 1 and clean_path(args[1]) in _PTRACE_SYMBOLS:
                anywhere("ptrace", frame, f"{event} {clean_path(args[1])}")
            attributed("ctypes", frame, event, hard=True)
        elif event in ("os.kill", "os.killpg"):
            on_kill(event, args, frame)
        elif event in _WRITES:
            for index in _WRITES[event]:
                path = clean_path(args[index]) if len(args) > index else None
                problem = write_problem(path) if path is not None else None
                if problem is not None:
                    anywhere(problem[0], frame, f"{event} {problem[1]}")
        elif event == "import":
            name = clean_path(args[0]) if args else None
            top = name.split(".")[0] if name else ""
            if top in ("bench", "harness", "coverage", "req2test"):
                attributed("evaluator_internals", frame, f"import {name}")
            elif top in ("ctypes", "_ctypes", "cffi", "_cffi_backend"):
                attributed("ctypes", frame, f"import {name}")
        elif event == "compile":
            filename = clean_path(args[1]) if len(args) > 1 else None
            if filename is None or (filename.startswith("<") and not filename.startswith("<frozen")):
                return
            if norm(filename) not in predictions:  # real-looking file names make code pose as someone else's
                attributed("dynamic_code", frame, f"compile as {filename}")
        elif event in ("sys._current_frames", "sys._current_exceptions"):
            attributed("introspection", frame, event)
        elif event in _SPAWN:
            on_spawn(event, args, frame)

    state.busy = False
    state.frame = state.back = state.info = None

    def hook(event: str, args: tuple[Any, ...]) -> None:
        # Hot path, written for speed: it sees every audited event of the process, and under
        # a profiler (the traced run) every Python call and builtin call made here is itself
        # reported to the profile function. So: no helper calls until an event matters,
        # attribute and item access instead of getattr()/len(), and the frequent reads of
        # f_code/__code__/tb_frame and sys._getframe decided inline from the cached walk.
        if event not in _WATCHED:
            return
        read = ""
        if event == "object.__getattr__":
            try:
                read = args[1]
            except IndexError:
                return
            if read not in _READ_ATTRS:
                return
        elif event == "sys._getframe":
            read = event
        elif event == "object.__setattr__" or event == "object.__delattr__":
            try:
                if args[1] not in _CODE_ATTRS:
                    return
            except IndexError:
                return
        elif event == "open":
            if not args or isinstance(args[0], int):
                return
        try:
            if state.busy:
                return  # our own frame walk (sys._getframe, f_code), path checks and emit raise events too
        except AttributeError:  # a thread that has not been here before
            state.frame = state.back = state.info = None
        state.busy = True
        try:
            screen.checked += 1
            try:
                frame = getframe(1)
            except ValueError:
                frame = None
            if read:
                if frame is None:
                    return
                if frame is state.frame and frame.f_back is state.back:
                    info = state.info
                else:
                    # the evaluator reading frames in its profile callback (every call of a
                    # traced run): find where its code was entered, and stop there
                    code = frame.f_code
                    try:
                        cls = classes[code.co_filename]
                    except KeyError:
                        cls = classify(code.co_filename)
                    if cls == _TRUSTED and code.co_name in callbacks:
                        return  # the profile callback itself: no need to look further
                    if cls == _TRUSTED:
                        f = frame.f_back
                        while f is not None:
                            inner = f.f_code
                            try:
                                if classes[inner.co_filename] != _TRUSTED:
                                    break
                            except KeyError:
                                break
                            code = inner
                            f = f.f_back
                        if code.co_name in callbacks:
                            return
                    info = owner_of(frame)
                if info[0] != _PREDICTION or info[4]:  # not a prediction's, or inside an import
                    return
                if info[2] == 0 or (info[3] is not None and leaky(info[3])):
                    kind = "code_objects" if read in _CODE_ATTRS else "introspection"
                    report(kind, info[1], "sys._getframe" if read == event else f"read of .{read}")
                return
            if event == "open":
                target = open_target(args)
                if target is not None:
                    on_open(target[0], target[1], frame)
                return
            handle(event, args, frame)
        finally:
            state.busy = False

    # classify every module loaded now, so forked children start with a warm cache
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and path not in classes:
            try:
                classify(path)
            except Exception:  # noqa: BLE001 - a module with an odd __file__ is classified on demand
                pass
    return Prepared(screen, hook, sink)


def _under(path: str, prefixes: tuple[str, ...]) -> bool:
    return path.startswith(prefixes) or (path + os.sep) in prefixes


def _source_of(path: str) -> str:
    """x/__pycache__/m.cpython-311.pyc -> x/m.py (what an import of either reads)."""
    head, tail = os.path.split(path)
    if os.path.basename(head) == "__pycache__" and tail.endswith((".pyc", ".pyo")):
        return os.path.join(os.path.dirname(head), tail.split(".", 1)[0] + ".py")
    return path


def _tempdir() -> str:
    import tempfile
    return tempfile.gettempdir()


def _is_child(pid: int, me: int, os_open: Any, os_read: Any, os_close: Any) -> bool:
    """Whether ``pid``'s parent is this process (from /proc/<pid>/stat: pid (comm) state ppid ...)."""
    try:
        fd = os_open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return False
    try:
        data = os_read(fd, 4096)
    finally:
        os_close(fd)
    try:
        return int(data.rsplit(b")", 1)[1].split()[1]) == me
    except (IndexError, ValueError):
        return False
