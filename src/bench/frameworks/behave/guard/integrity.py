"""Runner integrity: what the test may have rewritten in the runner, the worker or the stdlib.

STANDARD LIBRARY (+ behave, imported lazily) ONLY: it runs in the project's environment.

Setting an attribute on a class or a module raises no audit event, so the audit hook
cannot see ``behave.model.Step.run = fake`` or ``json.dumps = ...``. Instead
``snapshot()`` records, before any prediction code loads, the identity of every
attribute of the runner-relevant behave classes and modules, of selected module globals
(``os``, ``json``, ``sys``, ``builtins``, ``traceback``, ``linecache``), of the evaluator's own modules
(``bench.*``, their globals and classes) and of the ``sys.modules`` entries of all
these; ``changes()`` lists what was replaced, added or deleted since. Each entry keeps
a strong reference to the original value, so an id cannot be recycled by a look-alike.

Run it after the run, once the evaluator's own instrumentation (RunRecorder patches
``Step.run``, ``Scenario.run`` and ``StepRegistry.find_match`` and restores them) is
undone. Caveat: that restore also undoes a test's own patch of those three attributes made
*during* a step (one made while the step modules load is seen: the recorder restores the
test's version); catching the former needs an identity check before the restore. Attributes behave legitimately changes at run time are allowlisted in
``ALLOWED`` with the reason; the allowlist was derived by running the bundled example's
and python-docx 1.2.0's own step definitions, which change nothing else.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

# behave classes whose methods run scenarios, steps, hooks, matching and capture
_BEHAVE_CLASSES: dict[str, tuple[str, ...]] = {
    "behave.model": ("Feature", "Background", "Rule", "Scenario", "ScenarioOutline", "ScenarioOutlineBuilder",
                     "Examples", "Step", "Table", "Row", "ScenarioContainer"),
    "behave.model_core": ("BasicStatement", "TagAndStatusStatement", "TagStatement", "Replayable", "Status"),
    "behave.model_type": ("Status", "FileLocation"),
    "behave.runner": ("Runner", "ModelRunner", "Context"),
    "behave.step_registry": ("StepRegistry",),
    "behave.matchers": ("Match", "NoMatch", "MatchWithError", "Matcher", "ParseMatcher", "CFParseMatcher",
                        "RegexMatcher", "SimplifiedRegexMatcher", "CucumberRegexMatcher", "StepMatcherFactory"),
    "behave.capture": ("CaptureController", "CaptureControllerWithResult", "Captured", "ManyCaptured",
                       "NoCaptured", "CaptureSinkAsCollector", "CaptureSink2Null", "CaptureSink2Print"),
    "behave.configuration": ("Configuration",),
}
# behave modules whose globals the runner looks up at run time (imported here if need be:
# the runner imports all of them anyway before a scenario runs)
_BEHAVE_MODULES = ("behave", "behave.model", "behave.model_core", "behave.model_type", "behave.runner",
                   "behave.runner_util", "behave.step_registry", "behave.matchers", "behave.capture",
                   "behave.configuration")
# ... and these only when already loaded (importing them would cost every run child time)
_BEHAVE_OPTIONAL = ("behave.fixture", "behave.exception_util", "behave.api.async_step", "behave.hooks")
# stdlib globals the worker, the recorder or behave call while a test runs. Modules tests
# legitimately mock for the code under test (time, os.path, subprocess, random) are left
# out: a forgotten patch there is sloppy, not tampering.
_STDLIB_NAMES: dict[str, tuple[str, ...] | None] = {
    "builtins": None,  # every builtin
    "os": ("write", "read", "open", "close", "_exit", "kill", "killpg", "fork", "getpid", "getppid", "waitpid",
           "dup", "dup2", "pipe", "setpgid", "getpgid", "fspath", "path", "environ", "devnull", "sep"),
    "sys": ("exit", "setprofile", "settrace", "getprofile", "gettrace", "excepthook", "modules", "meta_path",
            "path_hooks", "path_importer_cache", "addaudithook", "audit", "_getframe", "exc_info"),
    "json": ("dumps", "loads", "dump", "load", "JSONEncoder", "JSONDecoder", "encoder", "decoder"),
    "traceback": ("format_exc", "format_exception", "print_exc", "extract_tb", "walk_tb", "TracebackException",
                  "StackSummary", "FrameSummary"),
    "linecache": ("getline", "getlines", "checkcache", "updatecache"),
}
# label -> reason: changes behave (or the interpreter) makes on its own during a run
ALLOWED: dict[str, str] = {  # (and ``builtins.__builtins__`` holding the builtins dict: see _exec_bookkeeping)
    # Configuration.setup_model() (behave builds a Configuration per runner, after the
    # snapshot) re-assigns the outline name template: a fresh but equal string
    "behave.model.ScenarioOutline.annotation_schema": "set by behave.configuration.Configuration.setup_model",
    "builtins._": "the interactive interpreter's last result",
}
# attribute names anywhere: ``__slotnames__`` is copyreg's cache, added to a class with
# __slots__ the first time copy.copy/deepcopy copies an instance (behave copies Step,
# FileLocation, Match, capture objects for outlines and nested steps)
# ``__warningregistry__`` is the warnings module's once-per-location record, added to a
# module's globals the first time code in that module issues a warning (behave.matchers
# warned under one python-docx mutant: found by the full calibration)
_ALLOWED_NAMES = frozenset({"__slotnames__", "__warningregistry__"})


class Snapshot:
    """Attribute values by container label; strong references keep the ids unique."""

    __slots__ = ("containers", "module_dict", "modules")

    def __init__(self) -> None:
        # label -> (object, {name: value}, whole): ``whole`` containers report added names too
        self.containers: dict[str, tuple[Any, dict[str, Any], bool]] = {}
        self.modules: dict[str, Any] = {}  # sys.modules name -> module object
        self.module_dict: Any = sys.modules  # the sys.modules dict itself


def _class_names(module: Any, names: Iterable[str]) -> list[tuple[str, Any]]:
    out = []
    for name in names:
        obj = getattr(module, name, None)
        if isinstance(obj, type):
            out.append((f"{module.__name__}.{name}", obj))
    return out


def _import(name: str) -> Any:
    try:
        __import__(name)
    except Exception:  # noqa: BLE001 - an optional behave module missing in this version
        return None
    return sys.modules.get(name)


def snapshot(*, module_prefixes: Iterable[str] = ("bench", "behave")) -> Snapshot:
    """Record what ``changes`` compares against; call it before any prediction code loads.

    ``module_prefixes``: the ``sys.modules`` entries whose identity must not change (the
    evaluator's and behave's by default; add the production packages to catch a test that
    swaps a production module for a fresh, unmutated copy).
    """
    snap = Snapshot()
    containers = snap.containers

    def add(label: str, obj: Any, names: Iterable[str] | None = None) -> None:
        try:
            attrs = vars(obj)
        except TypeError:
            return
        if names is None:
            containers[label] = (obj, dict(attrs), True)
        else:
            containers[label] = (obj, {n: attrs[n] for n in names if n in attrs}, False)

    registry_module = _import("behave.step_registry")
    for module_name, class_names in _BEHAVE_CLASSES.items():
        module = _import(module_name)
        if module is None:
            continue
        for label, cls in _class_names(module, class_names):
            add(label, cls)
    if registry_module is not None and hasattr(registry_module, "registry"):
        cls = type(registry_module.registry)
        add(f"{cls.__module__}.{cls.__qualname__}", cls)
        # the registry object itself: which step table dict and which methods it uses
        add("behave.step_registry.registry", registry_module.registry,
            [n for n in vars(registry_module.registry) if n != "steps"])
    for module_name in _BEHAVE_MODULES + _BEHAVE_OPTIONAL:
        module = _import(module_name) if module_name in _BEHAVE_MODULES else sys.modules.get(module_name)
        if module is not None:
            add(module_name, module)
    for module_name, names in _STDLIB_NAMES.items():
        module = sys.modules.get(module_name) or _import(module_name)
        if module is not None:
            add(module_name, module, names if names is not None else None)
    prefixes = tuple(module_prefixes)
    for name, module in list(sys.modules.items()):
        if module is None or not name.split(".")[0] in prefixes:
            continue
        snap.modules[name] = module
        if name.split(".")[0] == "bench":
            add(name, module)
            for attr, value in list(vars(module).items()):
                if isinstance(value, type) and getattr(value, "__module__", None) == name:
                    add(f"{name}.{attr}", value)
    return snap


def changes(snap: Snapshot) -> list[str]:
    """Every replaced, added or deleted attribute since ``snap``, as "behave.model.Step.run replaced"."""
    out: list[str] = []
    if sys.modules is not snap.module_dict:
        out.append("sys.modules replaced")
    for label, (obj, before, whole) in snap.containers.items():
        try:
            now = vars(obj)
        except TypeError:
            out.append(f"{label} lost its attributes")
            continue
        for name, value in before.items():
            key = f"{label}.{name}"
            if name not in now:
                if not _allowed(key):
                    out.append(f"{key} deleted")
            elif now[name] is not value and not _allowed(key):
                out.append(f"{key} replaced")
        if whole and (len(now) != len(before) or any(n not in before for n in now)):
            for name in now:
                if name in before or _allowed(f"{label}.{name}") or _submodule(obj, name, now[name]) \
                        or _exec_bookkeeping(obj, name, now[name]):
                    continue
                out.append(f"{label}.{name} added")
    current = sys.modules
    for name, module in snap.modules.items():
        if current.get(name) is not module:
            out.append(f"sys.modules[{name!r}] {'deleted' if name not in current else 'replaced'}")
    return out


def _allowed(key: str) -> bool:
    return key in ALLOWED or key.rsplit(".", 1)[-1] in _ALLOWED_NAMES


def _exec_bookkeeping(owner: Any, name: str, value: Any) -> bool:
    """``exec`` into a namespace without ``__builtins__`` adds the builtins dict under that name.
    behave execs step files without ``__name__`` in their globals, so a class a step file
    defines has ``__module__ == "builtins"`` and ``dataclasses`` execs its generated methods
    with ``builtins``' own dict as globals: ``builtins.__builtins__`` appears, holding that very
    dict (issue 26). Any other value is still a change."""
    return name == "__builtins__" and owner is sys.modules.get("builtins") and value is vars(owner)


def _submodule(owner: Any, name: str, value: Any) -> bool:
    """A package gaining its own submodule as an attribute: the import system's doing
    (behave imports e.g. behave.model_describe lazily); a test swapping one in for a
    replaced entry still shows as "replaced" and in sys.modules."""
    package = getattr(owner, "__name__", None)
    return (type(value) is type(sys) and isinstance(package, str) and hasattr(owner, "__path__")
            and getattr(value, "__name__", None) == f"{package}.{name}" and sys.modules.get(f"{package}.{name}") is value)


def describe(snap: Snapshot) -> dict[str, int]:
    """Sizes for reports: containers and attributes watched."""
    return {"containers": len(snap.containers), "attributes": sum(len(v[1]) for v in snap.containers.values()),
            "modules": len(snap.modules)}


__all__ = ["ALLOWED", "Snapshot", "changes", "describe", "snapshot"]
