"""Deny-by-default runtime screen of the evaluator's behave run child (PEP 578 audit hook).

STANDARD LIBRARY ONLY: it runs inside the project's environment, in the sandbox, in the run
child that is about to load the prediction's step modules.

A screen that *attributes* an event to the first frame not acting for its caller, and flags
it only when that frame is a prediction's, has blind spots: code a test runs through ``exec``
in a thread it started, or hands to behave (``context.add_cleanup(exec, TEXT, g)``), has no
prediction frame below it. Here nothing depends on who owns the stack: once the child
activates the hook (before the test loads) every sensitive event is **refused whoever
performs it**, unless its *performer* (the frame executing the operation) is on a short
allowlist of what the interpreter, behave and the evaluator themselves do in a run:

==========================  =====================================================================
event                       allowed when
==========================  =====================================================================
frame / code reads          performed by the standard library for its own use -- traceback and
(``sys._getframe``,         logging formatting, ``inspect.signature``, ``typing``, ``warnings``,
``f_code``, ``tb_frame``,   ``namedtuple`` -- unless the function the caller entered hands frames,
``__code__``, ...)          locals or code back (``inspect.stack``, ``traceback.walk_stack``,
                            ``dis``, ``capture_locals``...; behave itself may call
                            ``traceback.extract_stack``); by the few evaluator and behave functions
                            listed by identity (``_step_def_ref``, ``FileLocation.for_function``,
                            the traced run's profiler); by library or production code while the
                            import system runs it as a module body
``gc``, ``ctypes``,         never (ctypes: only production or a library using it for itself);
``marshal``, code and       marshal only for the import system reading a ``.pyc``; ``__code__``
function construction,      only written by ``apply_swaps`` with nothing but the evaluator on the
``__code__`` writes         stack (a reproduction batch swapping its next variant in)
tracing, audit hooks        the traced run's recorder and coverage
``compile`` / ``exec``      code with a pseudo file name (``<string>``: its frames never act for
                            anyone, so whatever it does is refused in turn); a real file only when
                            the import system loads a module that was never loaded (one copy of
                            every module: a second copy would be a fresh, unswapped one) or behave
                            loads a step file or hook
reading code files          the import system (first load), line caches for formatting (never
                            production or evaluator source: refused silently, the formatted
                            traceback then has no source line)
writes                      inside the workspace, the scratch dirs and ``/dev/null``
threads, signal handlers    started / installed by project, production or library code (the mock
                            servers of py-algorand-sdk's hooks), never by a prediction
``/proc``, descriptors      never from a prediction (``fcntl``, listing ``/proc/self/fd``...)
==========================  =====================================================================

Python 3.11 raises no audit event for starting a thread or installing a signal handler, so
the zygote replaces ``_thread.start_new_thread`` and ``signal.signal`` (and
``_imp.create_builtin``, which would make fresh copies of both) by *gates* that raise a
``req2test.gate`` audit event; the originals live only in this hook's closure.

The run's channel is written here too: ``activate`` gets the result pipe and a per-run secret
from the worker; every record goes out as ``<secret> <json>`` through a writer whose secret
is a constant of its code object (reading a code object is refused) and which only writes
when this hook's own ``emit`` calls it. Findings go out the moment they are found; the
runner's own records (``req2test.claim`` events) only when every frame between the claim and
the run child's entry point is the evaluator's. A record written straight to the pipe
(``os.write`` on a descriptor found with ``os.fstat``) lacks the secret: the worker counts it
as garbled, which the verdict process turns into ``tampering``.

While the hook runs, any watched event whose performer is not this module is refused: code
the test could slip into the hook (a patched standard library function) runs unscreened
otherwise. Everything the hook calls is bound when it is prepared; paths are normalised
with ``str`` methods only.
"""

from __future__ import annotations

import _thread
import os
import sys
import sysconfig
import time
from collections.abc import Callable, Sequence
from typing import Any

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

# findings that refuse the operation (all of them here: this is the deny-by-default screen)
_GC = frozenset({"gc.get_objects", "gc.get_referrers", "gc.get_referents"})
_CODE_MAKE = frozenset({"code.__new__", "function.__new__", "marshal.loads", "marshal.load", "marshal.dumps",
                        "marshal.dump"})
_CTYPES_PREFIX = "ctypes."
_FCNTL = frozenset({"fcntl.fcntl", "fcntl.ioctl", "fcntl.flock", "fcntl.lockf"})
_LISTING = frozenset({"os.listdir", "os.scandir"})
_WATCHED = frozenset({
    "object.__getattr__", "object.__setattr__", "object.__delattr__", "sys._getframe", "sys._current_frames",
    "sys._current_exceptions", "sys.settrace", "sys.setprofile", "sys.addaudithook", "os.kill", "os.killpg",
    "signal.pthread_kill", "open", "import", "compile", "exec", "req2test.gate", "req2test.claim",
    *_GC, *_CODE_MAKE, *_FCNTL, *_WRITES, *_SPAWN, *_LISTING,
})
# standard library functions a caller may enter that hand frames, locals or code back (or
# print them): reading frames through them is reading them directly. None: the whole module.
_LEAKY: dict[str, frozenset[str] | None] = {
    "inspect.py": frozenset({"currentframe", "stack", "trace", "getouterframes", "getinnerframes", "getframeinfo",
                             "getargvalues", "getgeneratorlocals", "getcoroutinelocals", "getclosurevars",
                             "getmembers", "getmembers_static", "_getmembers", "getsource", "getsourcelines",
                             "findsource", "getblock", "getcomments", "getlineno"}),
    "traceback.py": frozenset({"walk_stack", "walk_tb", "extract_stack", "format_stack", "print_stack"}),
    "logging/__init__.py": frozenset({"currentframe", "<lambda>"}),
    "linecache.py": None, "dis.py": None, "pdb.py": None, "bdb.py": None, "code.py": None, "codeop.py": None,
    "trace.py": None, "profile.py": None, "cProfile.py": None, "tracemalloc.py": None, "pickletools.py": None,
    "cgitb.py": None, "pydoc.py": None, "doctest.py": None, "asyncio/base_tasks.py": None,
}
# library functions that read a frame for their own use at run time and hand nothing of it
# back (file name ending, function name): reason
_LIB_OWN_USE = {
    ("/typing_extensions.py", "_has_generic_or_protocol_as_origin"):
        "installed into typing: reads its caller's locals to decide a bool (python-docx's steps subscript generics)",
}
_IMPORT_RUN = frozenset({"_load_unlocked", "_load", "exec_module", "_load_backward_compatible"})
_GATED_MODULES = frozenset({"_thread", "_signal", "_imp"})
_LINE_READERS = frozenset({"updatecache", "getlines", "getline", "checkcache", "lazycache"})

# frame classes
_FROZEN, _PSEUDO, _STDLIB, _LIB, _COVERAGE, _BEHAVE, _TRUSTED, _PRODUCTION, _PROJECT, _PREDICTION, _UNKNOWN = range(11)
_KNOWN_CODE = frozenset({_STDLIB, _LIB, _COVERAGE, _BEHAVE, _TRUSTED, _PRODUCTION, _PROJECT, _PREDICTION})
_UNTRUSTED = frozenset({_PSEUDO, _PREDICTION, _UNKNOWN})

_PREPARED = False


class Screen:
    """The findings so far (also streamed as they happen) and how many events needed a decision."""

    def __init__(self) -> None:
        self.findings: list[dict[str, Any]] = []
        self.checked = 0


class Prepared:
    """A hook built in the worker (its path classes warmed) and activated in each run child.

    ``activate`` adds the hook and then forgets it: afterwards the hook (and with it the
    channel's writer and the gated originals) is referenced by the interpreter only."""

    def __init__(self, activate: Callable[..., Screen], allow_gates: Callable[[dict[str, Any]], None]) -> None:
        self._activate: Callable[..., Screen] | None = activate
        self.allow_gates = allow_gates

    def activate(self, write_fd: int, secret: bytes, *, traced: bool = False) -> Screen:
        activate, self._activate = self._activate, None
        self.allow_gates = None  # type: ignore[assignment]
        if activate is None:
            raise RuntimeError("the req2test screen is already active in this process")
        return activate(write_fd, secret, traced)






def _code_of(fn: Any) -> Any:
    fn = getattr(fn, "__func__", fn)
    return getattr(fn, "__code__", None)


# rebuilt per run with the secret as a constant; its globals (_GETFRAME, _EMIT_CODE, _WRITE,
# _FD) are the ones ``activate`` gives the function it makes from this code
def _writer_template(data):
    caller = _GETFRAME(1)  # noqa: F821 - a global given at run time
    if caller.f_code is not _EMIT_CODE:  # noqa: F821 - a global given at run time
        raise PermissionError("req2test: the run's channel is the screen's own")
    view = memoryview(b"SECRET-PLACEHOLDER " + data + b"\n")
    while view:
        view = view[_WRITE(_FD, view):]  # noqa: F821 - globals given at run time


def prepare(*, prediction_files: set[str], production_dirs: list[str], workspace_root: str,
            writable_dirs: list[str], readers: Sequence[Any] = (), tracers: Sequence[Any] = (),
            swappers: Sequence[Any] = (), executors: Sequence[Any] = (), claimers: Sequence[Any] = (),
            anchor: Any = None, line_readers: Sequence[Any] = (), gates: dict[str, Any] | None = None,
            untrusted_production: bool = False) -> Prepared:
    """Build the deny-by-default hook (once a process; activated per run child).

    ``readers``: functions that read frames or code objects for their own use; ``tracers``:
    functions that may set profile/trace functions and audit hooks (the traced run);
    ``swappers``: functions that may write ``__code__`` (with only evaluator frames on the
    stack); ``executors``: behave's ``exec_file`` (and the evaluator's cached one); ``claimers``:
    the functions whose ``req2test.claim`` events become channel records; ``anchor``: the run
    child's entry function (claims and swaps need evaluator frames only, up to it);
    ``line_readers``: evaluator functions of the traced run that may read production source
    lines; ``gates``: gate name -> the original callable it stands for; ``untrusted_production``:
    production is the prediction (the reverse task): its frames are a prediction's.
    """
    global _PREPARED
    if _PREPARED:
        raise RuntimeError("the req2test screen is already prepared in this process")
    _PREPARED = True

    # -- everything the hook calls is bound now, before any test can patch a module
    getframe, addaudithook, get_ident = sys._getframe, sys.addaudithook, _thread.get_ident
    getcwd, os_open, os_read, os_close, os_write = os.getcwd, os.open, os.read, os.close, os.write
    os_stat, os_readlink, os_getpid, os_getpgid = os.stat, os.readlink, os.getpid, os.getpgid
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    str_type, bytes_type, int_type, tuple_type, list_type, dict_type = str, bytes, int, tuple, list, dict
    type_, len_, id_, isinstance_, bool_ = type, len, id, isinstance, bool
    code_type = type(_code_of(prepare))
    function_type: Any = type(prepare)  # types.FunctionType (mypy types it as prepare's own signature)
    method_type = type(Screen().__init__)  # type: ignore[misc]  # only the bound-method type is taken
    int_repr = int.__repr__
    from _json import encode_basestring_ascii as json_str
    main_ident = get_ident()
    shell_signal, python_signal = _SHELL_SIGNAL.search, _PYTHON_SIGNAL.search
    state = _thread._local()
    started = time.time()
    threading = sys.modules.get("threading")
    own_file = _code_of(prepare).co_filename
    permission_error = PermissionError
    module_type = type(sys)
    module_spec = type(sys.__spec__) if getattr(sys, "__spec__", None) is not None else None
    builtin_importer = sys.modules["_frozen_importlib"].BuiltinImporter

    def norm(path: str) -> str:
        """Absolute, ``.``/``..`` and doubled separators collapsed, no symlink followed (str methods only)."""
        if not path.startswith("/"):
            path = getcwd() + "/" + path
        parts: list[str] = []
        for part in path.split("/"):
            if part == "" or part == ".":
                continue
            if part == "..":
                if parts:
                    parts.pop()
                continue
            parts.append(part)
        return "/" + "/".join(parts)

    def realpath(path: str) -> str:
        """``norm`` with every symlink followed (readlink only; 40 links at most)."""
        pending = norm(path)[1:].split("/")
        pending.reverse()
        done: list[str] = []
        links = 0
        while pending:
            part = pending.pop()
            if part == "" or part == ".":
                continue
            if part == "..":
                if done:
                    done.pop()
                continue
            candidate = "/" + "/".join(done + [part])
            try:
                target = os_readlink(candidate)
            except (OSError, ValueError):
                done.append(part)
                continue
            links += 1
            if links > 40 or type_(target) is not str_type:
                return candidate
            if target.startswith("/"):
                done = []
            rest = target.split("/")
            rest.reverse()
            pending.extend(rest)
        return "/" + "/".join(done)

    def under(path: str, prefixes: tuple[str, ...]) -> bool:
        return path.startswith(prefixes) or (path + "/") in prefixes

    predictions = frozenset(norm(os.path.abspath(p)) for p in prediction_files)
    production = _prefixes(production_dirs)
    trusted = _prefixes([PACKAGE_DIR])
    behave_dir = _prefixes([_package_dir("behave")])
    coverage_dir = _prefixes([_package_dir("coverage")])
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
    import tempfile
    writable = _prefixes([*writable_dirs, tempfile.gettempdir()])
    writable_files = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})

    def ids(functions: Any) -> frozenset[int]:
        codes = [c for c in (_code_of(f) for f in functions) if c is not None]
        keep.extend(codes)  # strong references: an id cannot be recycled by a look-alike
        return frozenset(id(c) for c in codes)

    keep: list[Any] = []
    reader_ids, tracer_ids, swapper_ids = ids(readers), ids(tracers), ids(swappers)
    executor_ids, claimer_ids, line_reader_ids = ids(executors), ids(claimers), ids(line_readers)
    anchor_code = _code_of(anchor)
    originals = dict(gates or {})
    gate_codes: set[int] = set()  # filled by allow_gates

    classes: dict[str, int] = {}
    stdlib_rel: dict[str, str] = {}
    loaded: set[str] = set()  # source files of every module loaded: one copy each

    def source_of(path: str) -> str:
        """x/__pycache__/m.cpython-311.pyc -> x/m.py (what an import of either reads)."""
        head, _, tail = path.rpartition("/")
        if head.endswith("/__pycache__") and tail.endswith((".pyc", ".pyo")):
            return head[:-len("/__pycache__")] + "/" + tail.split(".", 1)[0] + ".py"
        return path

    def note_loaded(path: Any) -> None:
        if type_(path) is str_type and not path.startswith("<"):
            path = norm(path)
            loaded.add(source_of(path))

    for name, module in list(sys.modules.items()):
        for attr in ("__file__", "__cached__"):
            note_loaded(getattr(module, attr, None))
        if getattr(getattr(module, "__spec__", None), "origin", None) == "frozen":
            loaded.add(f"<frozen {name}>")  # a frozen module's code: loaded once too

    def classify(filename: str) -> int:
        if filename.startswith("<"):
            cls = _FROZEN if filename.startswith("<frozen ") else _PSEUDO
        else:
            path = norm(filename)
            if path in predictions:
                cls = _PREDICTION
            elif under(path, production):
                cls = _PREDICTION if untrusted_production else _PRODUCTION
            elif under(path, trusted):
                cls = _TRUSTED
            elif under(path, behave_dir):
                cls = _BEHAVE
            elif coverage_dir and under(path, coverage_dir):
                cls = _COVERAGE
            elif under(path, libs):
                cls = _LIB
            elif under(path, stdlibs):
                cls = _STDLIB
                for prefix in stdlibs:
                    if path.startswith(prefix):
                        stdlib_rel[filename] = path[len(prefix):]
                        break
            elif under(path, workspace):
                try:  # a file the test wrote after we started is not project code
                    cls = _PROJECT if os_stat(path).st_ctime < started else _UNKNOWN
                except OSError:
                    cls = _UNKNOWN
            else:
                cls = _UNKNOWN
        classes[filename] = cls
        return cls

    def class_of(code: Any) -> int:
        filename = code.co_filename
        if type_(filename) is not str_type:
            return _PSEUDO  # compile() keeps a str subclass as the file name: never a real file's code
        try:
            return classes[filename]
        except KeyError:
            return classify(filename)

    def filename_of(code: Any) -> str:
        filename = code.co_filename
        return filename if type_(filename) is str_type else "<odd file name>"

    # ------------------------------------------------------------------ the frame walk
    def walk(frame: Any) -> tuple[Any, Any, int, bool, bool, bool]:
        """From the performer down through standard-library and frozen frames: (entry: the
        outermost of them, the requester: the first frame that is neither, its class (-1:
        none), run by the import system, leaky: the entry hands frames, locals or code back
        (or a traceback captures locals), a line cache filling itself on the way)."""
        entry = None
        importing = lines = capture = False
        f = frame
        while f is not None:
            code = f.f_code
            cls = class_of(code)
            if cls == _FROZEN:
                if code.co_name in _IMPORT_RUN:
                    importing = True
            elif cls == _STDLIB:
                rel = stdlib_rel.get(code.co_filename)
                if rel == "linecache.py" and code.co_name in _LINE_READERS:
                    lines = True
                elif rel == "traceback.py" and code.co_name == "_extract_from_extended_frame_gen":
                    try:  # anything but a plain false value captures (no __bool__ of the test's runs here)
                        value = f.f_locals.get("capture_locals")
                        capture = capture or not (value is None or value is False or (type(value) is int and value == 0))
                    except Exception:  # noqa: BLE001 - an odd frame: treat it as capturing
                        capture = True
            else:
                return entry, f, cls, importing, capture or leaky(entry), lines
            entry = code
            f = f.f_back
        return entry, None, -1, importing, capture or leaky(entry), lines

    def leaky(entry: Any) -> bool:
        if entry is None:
            return False
        rel = stdlib_rel.get(entry.co_filename)
        if rel is None:
            return False
        names = _LEAKY.get(rel, ())
        return names is None or entry.co_name in names

    def culprit(frame: Any) -> Any:
        """The frame to name in a finding: the nearest prediction, pseudo or unknown frame."""
        f = frame
        while f is not None:
            if class_of(f.f_code) in _UNTRUSTED:
                return f
            f = f.f_back
        return frame

    def only_evaluator_to_anchor(frame: Any) -> bool:
        """Every frame from ``frame`` down to the run child's entry point is the evaluator's."""
        f = frame
        while f is not None:
            code = f.f_code
            if code is anchor_code:
                return True
            if class_of(code) != _TRUSTED:
                return False
            f = f.f_back
        return False

    # ------------------------------------------------------------------ findings and the channel
    screen = Screen()
    findings = screen.findings
    sink: list[Any] = [None]  # the writer, set by activate

    def emit(data: bytes) -> None:
        writer = sink[0]
        if writer is not None:
            writer(data)

    emit_code = _code_of(emit)

    def dump(finding: dict[str, Any]) -> bytes:
        parts = []
        for key, value in finding.items():
            if type_(value) is int_type:
                text = int_repr(value)
            else:
                text = json_str(value if type_(value) is str_type else "")
            parts.append(json_str(key) + ": " + text)
        return ("{" + ", ".join(parts) + "}").encode("ascii")

    def where(frame: Any) -> str:
        """`` (by f <- g <- h)``: the performer and the two frames below it, for the evidence."""
        names: list[str] = []
        f = frame
        while f is not None and len_(names) < 3:
            code = f.f_code
            names.append(filename_of(code).rpartition("/")[2] + ":" + code.co_name)
            f = f.f_back
        return " (by " + " <- ".join(names) + ")" if names else ""

    def report(kind: str, frame: Any, evidence: str, *, refuse: bool = True, performer: Any = None) -> None:
        if performer is not None:
            evidence = evidence + where(performer)
        path, line = "", 0
        if frame is not None:
            filename = filename_of(frame.f_code)
            path = norm(filename) if not filename.startswith("<") else filename
            for prefix in workspace:
                if path.startswith(prefix):
                    path = path[len(prefix):]
                    break
            line = frame.f_lineno or 0
        finding = {"kind": kind, "path": path, "line": line, "evidence": evidence[:200], "screen": "runtime"}
        findings.append(finding)
        try:
            emit(dump({"k": "finding", **finding}))
        except BaseException:  # noqa: BLE001, S110 - a broken channel must not unblock the operation
            pass
        if refuse:
            raise permission_error(f"req2test: {kind} is not allowed in a test")

    def refuse(kind: str) -> None:
        """Refused without a finding (a line cache looking for production source)."""
        raise permission_error(f"req2test: {kind} is not readable in a test")

    def clean_str(value: Any) -> str | None:
        """A str/bytes argument as a plain str, without running code the test may have put in it."""
        if type_(value) is str_type:
            return value
        if type_(value) is bytes_type:
            return value.decode("utf-8", "surrogateescape")
        if isinstance_(value, str_type):
            return "".join((value,))  # noqa: FLY002 - an f-string would call a str subclass's __format__
        if isinstance_(value, bytes_type):
            return b"".join((value,)).decode("utf-8", "surrogateescape")
        return None

    # ------------------------------------------------------------------ decisions
    def on_read(read: str, frame: Any) -> None:
        """A frame or code object read (``read`` is the attribute, or ``sys._getframe``)."""
        code = frame.f_code
        if id_(code) in reader_ids:
            return
        cls = class_of(code)
        if cls == _STDLIB or cls == _FROZEN:
            _, _, rcls, importing, leaks, _ = walk(frame)
            if not leaks or rcls in (_TRUSTED, _BEHAVE) or importing or (rcls == _COVERAGE and traced_run[0]):
                return
        elif cls in (_LIB, _PRODUCTION, _BEHAVE, _COVERAGE, _PROJECT):
            if cls == _COVERAGE and traced_run[0]:
                return
            if cls == _LIB and read == "sys._getframe" and lib_own_use(code):
                return
            if walk_import(frame):
                return
        kind = "code_objects" if read in _CODE_ATTRS else "introspection"
        report(kind, culprit(frame), "sys._getframe" if read == "sys._getframe" else f"read of .{read}", performer=frame)

    def lib_own_use(code: Any) -> bool:
        filename = code.co_filename
        for (ending, name) in _LIB_OWN_USE:
            if code.co_name == name and filename.endswith(ending):
                return True
        return False

    def walk_import(frame: Any) -> bool:
        """Known code executed by the import system as (part of) a module body, nothing
        untrusted in between."""
        f = frame
        while f is not None:
            code = f.f_code
            cls = class_of(code)
            if cls == _FROZEN and code.co_name in _IMPORT_RUN:
                return True
            if cls in _UNTRUSTED:
                return False
            f = f.f_back
        return False

    def on_open(args: tuple[Any, ...], frame: Any) -> None:
        path = clean_str(args[0]) if args else None
        if path is None:
            report("filesystem", culprit(frame), "open of a path object", performer=frame)
            return
        mode: Any = args[1] if len_(args) > 1 else None
        flags = args[2] if len_(args) > 2 else 0
        if type_(mode) is str_type:
            writing = "w" in mode or "a" in mode or "x" in mode or "+" in mode
        else:
            writing = type_(flags) is int_type and bool_(flags & write_flags)
        if writing:
            problem = write_problem(path)
            if problem is not None:
                report(problem[0], culprit(frame), f"open for writing {problem[1]}", performer=frame)
            return
        plain = norm(path)
        if plain.startswith("/proc/"):
            on_proc(plain, frame)
            return
        if not (plain.endswith((".py", ".pyc", ".pyo")) or "/__pycache__/" in plain):
            return
        real = realpath(plain)
        source = source_of(real)
        _, requester, rcls, importing, leaks, lines = walk(frame)
        is_prod = under(source, production) or under(source_of(plain), production)
        is_bench = under(source, trusted)
        if importing and class_of(frame.f_code) == _FROZEN:
            # the import system: known code, loaded once
            if source in loaded or source_of(plain) in loaded:
                report("production_source" if is_prod else "code_objects", culprit(frame),
                       f"second load of {source}")
            cls = classify(source) if source not in classes else classes[source]
            if cls not in _KNOWN_CODE or (real.endswith((".pyc", ".pyo")) and "/__pycache__/" not in real
                                          and cls not in (_STDLIB, _LIB)):
                report("dynamic_code", culprit(frame), f"import of code the test wrote: {real}", performer=frame)
            return
        if lines and not (leaks and rcls in _UNTRUSTED):
            # a line cache filling itself to format a traceback or a warning: never with
            # production or evaluator source (the traced run's recorder may, for dataclasses)
            if is_prod:
                if traced_run[0] and requester is not None and id_(requester.f_code) in line_reader_ids:
                    return
                refuse("production source")
            if is_bench:
                refuse("evaluator source")
            return
        if is_prod:
            report("production_source", culprit(frame), f"open {source}", performer=frame)
        elif is_bench:
            if class_of(frame.f_code) == _TRUSTED and id_(frame.f_code) in executor_ids:
                return
            report("evaluator_internals", culprit(frame), f"open {source}", performer=frame)
        elif real.endswith((".pyc", ".pyo")) or "/__pycache__/" in real:
            report("code_objects", culprit(frame), f"open {real}", performer=frame)

    def on_proc(path: str, frame: Any) -> None:
        if path.endswith("/mem") or "/mem/" in path:
            report("ptrace", culprit(frame), f"open {path}", performer=frame)
            return
        _, _requester, rcls, importing, _, _ = walk(frame)
        if importing or rcls in (_LIB, _PRODUCTION, _COVERAGE, _BEHAVE, _TRUSTED):
            return
        report("process", culprit(frame), f"read of {path}", performer=frame)

    def write_problem(path: str) -> tuple[str, str] | None:
        if path in writable_files:
            return None
        plain = norm(path)
        real = realpath(plain)
        if under(real, production) or under(plain, production):
            return "production_write", real
        if under(real, writable) or real in writable_files:
            return None
        return "filesystem", real

    def on_compile(args: tuple[Any, ...], frame: Any) -> None:
        filename = clean_str(args[1]) if len_(args) > 1 else None
        if filename is None:
            report("dynamic_code", culprit(frame), "compile with an odd file name", performer=frame)
            return
        if filename.startswith("<") and not filename.startswith("<frozen"):
            return  # pseudo code: its frames are never allowed to do anything sensitive
        cls = class_of_name(filename)
        code = frame.f_code
        if class_of(code) == _FROZEN and walk_import(frame) and cls in _KNOWN_CODE \
                and source_of(norm(filename)) not in loaded:
            return
        if id_(code) in executor_ids and cls in (_PREDICTION, _PROJECT):
            return
        report("dynamic_code", culprit(frame), f"compile as {filename}", performer=frame)

    def class_of_name(filename: str) -> int:
        try:
            return classes[filename]
        except KeyError:
            return classify(filename)

    def on_exec(args: tuple[Any, ...], frame: Any) -> None:
        code_obj: Any = args[0] if args else None
        if type_(code_obj) is not code_type:
            return
        filename = code_obj.co_filename
        if type_(filename) is not str_type or (filename.startswith("<") and not filename.startswith("<frozen")):
            return
        performer = frame.f_code
        if filename.startswith("<frozen "):
            # the frozen importer running a frozen module's code, the first time only
            if class_of(performer) == _FROZEN and performer.co_name == "exec_module" and filename not in loaded:
                loaded.add(filename)
                return
            report("dynamic_code", culprit(frame), f"exec of frozen code {filename}", performer=frame)
            return
        cls = class_of_name(filename)
        if class_of(performer) == _FROZEN and performer.co_name == "_call_with_frames_removed" \
                and walk_import(frame) and cls in _KNOWN_CODE:
            module_file = module_file_of(frame)
            if module_file is not None and norm(module_file) != norm(filename):
                report("dynamic_code", culprit(frame), f"module code posing as {filename}", performer=frame)
            note_loaded(filename)
            return
        if id_(performer) in executor_ids and cls in (_PREDICTION, _PROJECT):
            return
        report("dynamic_code", culprit(frame), f"exec of code from {filename}", performer=frame)

    def module_file_of(frame: Any) -> str | None:
        """The ``__file__`` of the module an ``exec_module`` frame below is executing."""
        f = frame.f_back
        while f is not None and class_of(f.f_code) == _FROZEN:
            if f.f_code.co_name == "exec_module":
                try:
                    module = f.f_locals.get("module")
                except Exception:  # noqa: BLE001
                    return None
                if type_(module) is module_type:
                    value = vars(module).get("__file__")
                    return value if type_(value) is str_type else None
                return None
            f = f.f_back
        return None

    def on_gate(args: tuple[Any, ...], frame: Any) -> None:
        if len_(args) != 4 or id_(frame.f_code) not in gate_codes:
            report("evaluator_internals", culprit(frame), "a gate event from outside the gate", performer=frame)
            return
        name, gargs, gkwargs, box = args
        if type_(name) is not str_type or type_(gargs) is not tuple_type or type_(gkwargs) is not dict_type \
                or type_(box) is not list_type or name not in originals:
            report("evaluator_internals", culprit(frame), "a malformed gate event", performer=frame)
            return
        if name == "create_builtin":
            spec_name = gargs[0] if gargs and type_(gargs[0]) is str_type else None
            if spec_name is None or spec_name in _GATED_MODULES:
                report("signals" if spec_name == "_signal" else "introspection", culprit(frame),
                       f"a fresh copy of the builtin module {spec_name}")
            # report() refused a None spec_name above, and the sys module always has a __spec__
            box.append(originals[name](module_spec(spec_name, builtin_importer,  # type: ignore[misc, arg-type]
                                                   origin="built-in")))
            return
        if name == "signal":
            handler = gargs[1] if len_(gargs) > 1 else None
            # SIG_DFL and SIG_IGN arrive as plain ints (signal.signal converts its enum)
            if type_(handler) is not int_type and not allowed_requester(frame):
                report("signals", culprit(frame), "a Python signal handler", performer=frame)
        elif not allowed_requester(frame):
            report("threads", culprit(frame), "a thread started by the test", performer=frame)
        box.append(originals[name](*gargs, **gkwargs))

    def allowed_requester(frame: Any) -> bool:
        """The gate was reached from project, production, library, behave or evaluator code
        (through the standard library only), or from the standard library alone (a server
        thread handing a request to a new thread)."""
        f = frame.f_back
        while f is not None:
            cls = class_of(f.f_code)
            if cls in _UNTRUSTED:
                return False
            if cls not in (_STDLIB, _FROZEN):
                return True
            f = f.f_back
        return get_ident() != main_ident

    def on_claim(args: tuple[Any, ...], frame: Any) -> None:
        data: Any = args[0] if args else None
        if type_(data) is not bytes_type or id_(frame.f_code) not in claimer_ids or get_ident() != main_ident \
                or not only_evaluator_to_anchor(frame):
            report("runner_internals", culprit(frame), "a claim from outside the runner", performer=frame)
            return
        emit(data)

    def on_trace(event: str, frame: Any) -> None:
        if frame is None or walk(frame)[2] == -1 and class_of(frame.f_code) in (_STDLIB, _FROZEN):
            # a new thread installs threading's trace/profile function before any frame of its own
            if threading is None:
                return
            fn: Any = vars(threading).get("_trace_hook" if event == "sys.settrace" else "_profile_hook")
            if type_(fn) is method_type:
                fn = fn.__func__
            if fn is None:
                return
            if type_(fn) is function_type and class_of(fn.__code__) in (_TRUSTED, _COVERAGE):
                return
            report("tracing", None, f"{event} in a new thread")
            return
        code = frame.f_code
        if id_(code) in tracer_ids or (class_of(code) == _COVERAGE and traced_run[0]):
            return
        report("tracing" if event != "sys.addaudithook" else "audit_hook", culprit(frame), event, performer=frame)

    def on_code_write(args: tuple[Any, ...], frame: Any) -> None:
        if id_(frame.f_code) in swapper_ids and only_evaluator_to_anchor(frame):
            return
        report("code_objects", culprit(frame), f"write of .{args[1]}", performer=frame)

    def on_import(args: tuple[Any, ...], frame: Any) -> None:
        name = clean_str(args[0]) if args else None
        top = name.split(".")[0] if name else ""
        if top in _GATED_MODULES:
            report("introspection", culprit(frame), f"a fresh copy of {name}", performer=frame)
        if top not in ("bench", "harness", "req2test", "coverage", "ctypes", "_ctypes", "cffi", "_cffi_backend"):
            return
        _, _requester, rcls, _, _, _ = walk(frame)
        if top in ("ctypes", "_ctypes", "cffi", "_cffi_backend"):
            if rcls in (_PRODUCTION, _LIB, _COVERAGE) or (rcls == -1 and walk_import(frame)):
                return
            report("ctypes", culprit(frame), f"import {name}", performer=frame)
        elif rcls not in (_TRUSTED, _COVERAGE):
            report("evaluator_internals", culprit(frame), f"import {name}", performer=frame)

    def on_lib_only(kind: str, event: str, frame: Any) -> None:
        """Allowed for production and library code (and in imports), never for the test's."""
        _, _requester, rcls, importing, _, _ = walk(frame)
        cls = class_of(frame.f_code)
        if importing or (cls not in (_STDLIB, _FROZEN) and cls in (_LIB, _PRODUCTION, _COVERAGE)) \
                or (cls in (_STDLIB, _FROZEN) and rcls in (_LIB, _PRODUCTION, _COVERAGE)):
            return
        report(kind, culprit(frame), event, performer=frame)

    def on_kill(event: str, args: tuple[Any, ...], frame: Any) -> None:
        target = args[0] if args and type_(args[0]) is int_type else 0
        if event == "os.kill":
            if target > 0 and target != os_getpid() and is_child(target):
                return
        elif event == "os.killpg":
            try:
                mine = os_getpgid(0)
            except OSError:
                mine = -1
            if target > 0 and target != mine and is_child(target):
                return
        signal_number = args[1] if len_(args) > 1 and type_(args[1]) is int_type else "?"
        report("signals", culprit(frame), f"{event} {target} signal {signal_number}", performer=frame)

    def is_child(pid: int) -> bool:
        """Whether ``pid``'s parent is this process (from /proc/<pid>/stat)."""
        try:
            fd = os_open(f"/proc/{pid}/stat", os.O_RDONLY)
        except OSError:
            return False
        try:
            data = os_read(fd, 4096)
        finally:
            os_close(fd)
        try:
            return int_type(data.rsplit(b")", 1)[1].split()[1]) == os_getpid()
        except (IndexError, ValueError):
            return False

    def on_spawn(event: str, args: tuple[Any, ...], frame: Any) -> None:
        if event == "os.system":
            command = clean_str(args[0]) if args else None
            argv = ["sh", "-c", command] if command is not None else []
        else:
            raw: Any = args[2] if event == "os.spawn" and len_(args) > 2 else (args[1] if len_(args) > 1 else None)
            text = clean_str(raw)
            if text is not None:
                argv = [text]
            elif type_(raw) in (list_type, tuple_type):
                argv = [w for w in (clean_str(a) for a in raw[:16]) if w is not None]
            else:
                argv = []
        if not argv:
            return
        first = argv[0].split()[0] if argv[0].strip() else ""
        program = first.rpartition("/")[2]
        script = argv[argv.index("-c") + 1] if "-c" in argv[:-1] else ""
        if program in _SIGNAL_TOOLS or (program in _SHELLS and shell_signal(script) is not None) or \
                (program.startswith("python") and python_signal(script) is not None):
            report("signals", culprit(frame), f"{event} {' '.join(argv)[:160]}", performer=frame)

    def handle(event: str, args: tuple[Any, ...], frame: Any) -> None:
        if event == "open":
            on_open(args, frame)
        elif event == "req2test.claim":
            on_claim(args, frame)
        elif event == "exec":
            on_exec(args, frame)
        elif event == "compile":
            on_compile(args, frame)
        elif event in _GC:
            report("gc", culprit(frame), event, performer=frame)
        elif event == "req2test.gate":
            on_gate(args, frame)
        elif event == "object.__setattr__" or event == "object.__delattr__":
            on_code_write(args, frame)
        elif event in ("sys.settrace", "sys.setprofile", "sys.addaudithook"):
            on_trace(event, frame)
        elif event in _CODE_MAKE:
            if event == "marshal.loads" and frame is not None and class_of(frame.f_code) == _FROZEN \
                    and frame.f_code.co_name == "_compile_bytecode" and walk_import(frame):
                return
            if event in ("code.__new__", "function.__new__") and frame is not None \
                    and class_of(frame.f_code) in (_STDLIB, _LIB, _PRODUCTION) and walk_import(frame):
                return
            report("code_objects", culprit(frame), event, performer=frame)
        elif event.startswith(_CTYPES_PREFIX):
            on_lib_only("ctypes", event, frame)
        elif event in ("sys._current_frames", "sys._current_exceptions"):
            report("introspection", culprit(frame), event, performer=frame)
        elif event in ("os.kill", "os.killpg", "signal.pthread_kill"):
            if event == "signal.pthread_kill":
                report("signals", culprit(frame), event, performer=frame)
            else:
                on_kill(event, args, frame)
        elif event in _WRITES:
            for index in _WRITES[event]:
                path = clean_str(args[index]) if len_(args) > index else None
                problem = write_problem(path) if path is not None else None
                if problem is not None:
                    report(problem[0], culprit(frame), f"{event} {problem[1]}", performer=frame)
        elif event in _LISTING:
            path = clean_str(args[0]) if args else None
            if path is not None and norm(path).startswith("/proc/"):
                on_proc(norm(path), frame)
        elif event in _FCNTL:
            on_lib_only("process", event, frame)
        elif event == "import":
            on_import(args, frame)
        elif event in _SPAWN:
            on_spawn(event, args, frame)

    traced_run = [False]
    state.busy = 0
    state.frame = state.back = None

    def hook(event: str, args: tuple[Any, ...]) -> None:
        # Hot path: it sees every audited event of the process. Most return at the first test.
        if event not in _WATCHED:
            return
        read = ""
        if event == "object.__getattr__":
            try:
                read = args[1]
            except IndexError:
                return
            if type_(read) is not str_type or read not in _READ_ATTRS:
                return
        elif event == "sys._getframe":
            read = event
        elif event == "object.__setattr__" or event == "object.__delattr__":
            try:
                if type_(args[1]) is not str_type or args[1] not in _CODE_ATTRS:
                    return
            except IndexError:
                return
        elif event == "open" and (not args or type_(args[0]) is int_type or type_(args[0]) is bool_):
            return  # a descriptor
        try:
            busy = state.busy
        except AttributeError:  # a thread that has not been here before
            state.frame = state.back = None
            busy = 0
        if busy:
            # Re-entered from inside the hook: our own frame reads and opens are fine; anything
            # else is code the test slipped into something the hook calls.
            if busy == 1:
                state.busy = 2
                try:
                    f = getframe(1)
                    filename = f.f_code.co_filename if f is not None else None
                    if type_(filename) is not str_type or filename != own_file:
                        raise permission_error("req2test: not allowed inside the screen")
                finally:
                    state.busy = 1
            return
        state.busy = 1
        try:
            screen.checked += 1
            try:
                frame = getframe(1)
            except ValueError:
                frame = None
            if read:
                if frame is None:
                    report("introspection", None, f"read of .{read} without a frame")
                    return
                if frame is state.frame and frame.f_back is state.back:
                    return  # the same performer reading again (a stack being extracted): decided
                on_read(read, frame)
                state.frame, state.back = frame, frame.f_back
                return
            handle(event, args, frame)
        finally:
            state.busy = 0

    for module in list(sys.modules.values()):  # warm the class cache: forked children inherit it
        path: Any = getattr(module, "__file__", None)
        if type_(path) is str_type and path not in classes:
            try:
                classify(path)
            except Exception:  # noqa: BLE001, S110 - an odd __file__ is classified on demand
                pass
    for code in keep:
        class_of(code)

    def allow_gates(gated: dict[str, Any]) -> None:
        """Record the gate functions' code (only they may raise ``req2test.gate``)."""
        for fn in gated.values():
            code = _code_of(fn)
            if code is not None:
                keep.append(code)
                gate_codes.add(id(code))
                class_of(code)

    def activate(write_fd: int, secret: bytes, traced: bool) -> Screen:
        template = _code_of(_writer_template)
        consts = tuple(b"".join((secret, b" ")) if c == b"SECRET-PLACEHOLDER " else c for c in template.co_consts)
        writer = function_type(template.replace(co_consts=consts),
                               {"_GETFRAME": getframe, "_EMIT_CODE": emit_code, "_WRITE": os_write, "_FD": write_fd,
                                "__builtins__": {"memoryview": memoryview, "PermissionError": permission_error}},
                               "write")
        sink[0] = writer
        traced_run[0] = traced
        addaudithook(hook)
        return screen

    return Prepared(activate, allow_gates)


def make_gates() -> dict[str, Any]:
    """The gate functions (``gates``: name -> gate), the originals the hook calls for them
    (``originals``) and every object each gate replaces (``bound``, for ``gate_locations``).

    A gate raises a ``req2test.gate`` audit event carrying its arguments and a box; the hook
    decides, calls the original (which only it holds) and puts the result in the box."""
    import _imp
    import _signal

    audit = sys.audit

    def start_new_thread(function, args, kwargs=None):
        box: list[Any] = []
        audit("req2test.gate", "start_new_thread", (function, args) if kwargs is None else (function, args, kwargs),
              {}, box)
        if not box:
            raise RuntimeError("req2test: threads are only started through the run's screen")
        return box[0]

    def signal(signalnum, handler):
        box: list[Any] = []
        audit("req2test.gate", "signal", (signalnum, handler), {}, box)
        if not box:
            raise RuntimeError("req2test: signal handlers are only installed through the run's screen")
        return box[0]

    def create_builtin(spec):
        name = spec.name  # read here, outside the hook: a property of the test's runs as the test
        box: list[Any] = []
        # a plain str copy: an f-string would call a str subclass's __format__
        audit("req2test.gate", "create_builtin", ("".join((name,)) if isinstance(name, str) else None,),  # noqa: FLY002
              {}, box)
        if not box:
            raise ImportError("req2test: builtin modules are only created through the run's screen")
        return box[0]

    gates = {"start_new_thread": start_new_thread, "signal": signal, "create_builtin": create_builtin}
    originals = {"start_new_thread": _thread.start_new_thread, "signal": _signal.signal,
                 "create_builtin": _imp.create_builtin}
    # every object a gate stands for: ``_thread.start_new`` is a second builtin, not an alias
    bound = {"start_new_thread": [_thread.start_new_thread, getattr(_thread, "start_new", None)],
             "signal": [_signal.signal], "create_builtin": [_imp.create_builtin]}
    return {"gates": gates, "originals": originals, "bound": bound}


def gate_locations(bound: dict[str, list[Any]]) -> list[tuple[dict[str, Any], str, str]]:
    """Where the gated primitives are bound (namespace, key, gate name): every loaded module's
    global that *is* one of them (``bound``: gate name -> the objects it stands for), and the
    ``__wrapped__`` a ``functools.wraps`` may have given the ``signal.signal`` wrapper. Found once
    in the worker; the run child only assigns."""
    by_id = {id(original): name for name, objects in bound.items() for original in objects if original is not None}
    namespaces: list[dict[str, Any]] = []
    for module in list(sys.modules.values()):
        try:
            namespaces.append(vars(module))
        except TypeError:
            continue
    wrapper = getattr(sys.modules.get("signal"), "signal", None)
    if wrapper is not None and hasattr(wrapper, "__dict__"):
        namespaces.append(vars(wrapper))
    out = []
    for namespace in namespaces:
        for key, value in list(namespace.items()):
            name = by_id.get(id(value))
            if name is not None:
                out.append((namespace, key, name))
    return out


def install_gates(locations: list[tuple[dict[str, Any], str, str]], gates: dict[str, Any]) -> None:
    """Put the gates where the originals were (in the run child, before its screen is on)."""
    for namespace, key, name in locations:
        namespace[key] = gates[name]
