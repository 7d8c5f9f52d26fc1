"""Static tamper screen: an AST scan of a prediction's Python files.

A prediction is code written by an agent that optimises its score. Tests that pass or
fail on their own merits need behave's public step API, the production package and
ordinary library calls; they never need the runner's internals, frames, code objects,
the collector, ctypes, trace hooks, other processes, the evaluator's modules or the
production source text. This scan flags every *reference* to those (an import, an
attribute, a call), with its line, before any prediction code runs. It is a screen,
not a proof: the runtime screens (``strict_hook``, ``integrity``) back it up.

Zero false positives on developers' own suites is a hard requirement (tested on the
bundled example and on python-docx 1.2.0), so the rules are narrow where tests
legitimately use a name: ``getattr(obj, name)`` is flagged only on modules such as
``sys``; ``eval`` only when its text can come from somewhere other than a step
argument (the feature file, which the agent cannot edit); behave's ``Context`` and the
model's type names may be imported for annotations, but nothing else of
``behave.runner``/``behave.model`` may be reached, and no behave object may be written.

Kinds (``TamperFinding.kind``):
  runner_internals     behave beyond the public step API; writes to runner/model state
  introspection        frames, tracebacks' frames, closures, function globals, stack walks
  code_objects         ``__code__``, code/function construction, ``marshal``, ``dis``
  gc                   the garbage collector's object graph
  ctypes               ctypes / cffi / CPython test APIs
  tracing              settrace / setprofile (and reading them), debuggers, profilers
  audit_hook           ``sys.addaudithook``
  signals              killing or signalling other processes, the parent's pid, ``kill -9 $X``
                       text for a shell
  process              forking, new sessions, ``os._exit``, ``/proc`` paths, psutil
  evaluator_internals  the evaluator's own packages (``bench``, ``harness``, ``coverage``)
  sys_modules          ``sys.modules`` and the import system's internals, reloads
  builtins             patching or reaching ``builtins`` / ``__builtins__``
  monkeypatch          writing attributes of ``sys``/``os``/``json``/... modules
  dynamic_code         ``exec``/``compile``/``eval`` or imports of computed text
  production_source    reading source or bytecode (``inspect.getsource``, ``linecache``, ``.pyc``)
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from bench.frameworks.behave.guard.findings import TamperFinding

KINDS = frozenset({
    "runner_internals", "introspection", "code_objects", "gc", "ctypes", "tracing", "audit_hook", "signals",
    "process", "evaluator_internals", "sys_modules", "builtins", "monkeypatch", "dynamic_code",
    "production_source",
})

# ---------------------------------------------------------------------------- rules
# Any reference to these modules (or anything inside them) is a finding.
_MODULE_KINDS: dict[str, str] = {
    "gc": "gc",
    "ctypes": "ctypes", "_ctypes": "ctypes", "cffi": "ctypes", "_cffi_backend": "ctypes",
    "_testcapi": "ctypes", "_testinternalcapi": "ctypes", "_xxsubinterpreters": "ctypes",
    "marshal": "code_objects", "dis": "code_objects",
    "linecache": "production_source",
    "faulthandler": "introspection",
    "bdb": "tracing", "pdb": "tracing", "trace": "tracing", "cProfile": "tracing", "profile": "tracing",
    "_lsprof": "tracing",
    "bench": "evaluator_internals", "harness": "evaluator_internals", "coverage": "evaluator_internals",
    "req2test": "evaluator_internals",
    "psutil": "process",
    "importlib._bootstrap": "sys_modules", "importlib._bootstrap_external": "sys_modules", "_imp": "sys_modules",
}

# Dotted names (and everything below them).
_NAME_KINDS: dict[str, str] = {
    # frames and stacks
    "sys._getframe": "introspection", "sys._current_frames": "introspection",
    "sys._current_exceptions": "introspection", "sys._getframemodulename": "introspection",
    "inspect.currentframe": "introspection", "inspect.stack": "introspection", "inspect.trace": "introspection",
    "inspect.getouterframes": "introspection", "inspect.getinnerframes": "introspection",
    "inspect.getframeinfo": "introspection", "inspect.getargvalues": "introspection",
    "inspect.getgeneratorlocals": "introspection", "inspect.getcoroutinelocals": "introspection",
    "inspect.getclosurevars": "introspection",
    "traceback.walk_stack": "introspection", "traceback.walk_tb": "introspection",
    "traceback.extract_stack": "introspection", "traceback.format_stack": "introspection",
    "traceback.print_stack": "introspection",
    "types.FrameType": "introspection",
    # code objects
    "types.CodeType": "code_objects",
    # trace and profile hooks (reading them tells a traced run from a verdict run)
    "sys.settrace": "tracing", "sys.setprofile": "tracing", "sys.gettrace": "tracing", "sys.getprofile": "tracing",
    "sys.monitoring": "tracing",
    "threading.settrace": "tracing", "threading.setprofile": "tracing", "threading.gettrace": "tracing",
    "threading.getprofile": "tracing", "threading.settrace_all_threads": "tracing",
    "threading.setprofile_all_threads": "tracing", "threading._trace_hook": "tracing",
    "threading._profile_hook": "tracing",
    "sys.addaudithook": "audit_hook",
    # other processes
    "os.kill": "signals", "os.killpg": "signals", "os.getppid": "signals", "signal.pthread_kill": "signals",
    "signal.pidfd_send_signal": "signals", "os.pidfd_open": "signals",
    "os.fork": "process", "os.forkpty": "process", "pty.fork": "process", "os.setsid": "process",
    "os.setpgid": "process", "os.setpgrp": "process", "os._exit": "process", "os.abort": "process",
    "os.register_at_fork": "process",
    # the import system
    "sys.modules": "sys_modules", "sys.meta_path": "sys_modules", "sys.path_hooks": "sys_modules",
    "sys.path_importer_cache": "sys_modules", "importlib.reload": "sys_modules", "imp.reload": "sys_modules",
    # source and bytecode
    "inspect.getsource": "production_source", "inspect.getsourcelines": "production_source",
    "inspect.getsourcefile": "production_source", "inspect.getfile": "production_source",
    "inspect.getabsfile": "production_source", "inspect.findsource": "production_source",
    "inspect.getcomments": "production_source", "io.open_code": "production_source",
    "importlib.machinery.SourcelessFileLoader": "production_source",
}

# Names that are harmless as type references (isinstance) but not when called.
_CALL_KINDS: dict[str, str] = {
    "types.FunctionType": "code_objects", "types.LambdaType": "code_objects", "types.CellType": "introspection",
    "types.TracebackType": "introspection",
}

# Attribute names flagged on any object: nothing in a test needs them.
_ATTR_KINDS: dict[str, str] = {
    "__code__": "code_objects", "co_code": "code_objects", "co_consts": "code_objects",
    "co_names": "code_objects", "co_filename": "code_objects", "gi_code": "code_objects",
    "cr_code": "code_objects", "ag_code": "code_objects",
    "f_back": "introspection", "f_globals": "introspection", "f_locals": "introspection",
    "f_code": "introspection", "f_builtins": "introspection", "f_trace": "introspection",
    "tb_frame": "introspection", "gi_frame": "introspection", "cr_frame": "introspection",
    "ag_frame": "introspection", "__closure__": "introspection", "cell_contents": "introspection",
    "__globals__": "introspection", "__subclasses__": "introspection",
    "__builtins__": "builtins",
    "__loader__": "production_source", "__cached__": "production_source",
}

# Writing an attribute of these modules patches what the runner or the worker uses.
_PATCH_KINDS: dict[str, str] = {
    "builtins": "builtins", "sys": "monkeypatch", "os": "monkeypatch", "posix": "monkeypatch",
    "json": "monkeypatch", "signal": "monkeypatch", "threading": "monkeypatch", "_thread": "monkeypatch",
    "importlib": "sys_modules", "io": "monkeypatch", "inspect": "monkeypatch", "traceback": "monkeypatch",
    "types": "monkeypatch", "select": "monkeypatch", "atexit": "monkeypatch",
}
# ... except what tests legitimately redirect or mock for the code under test.
_PATCH_ALLOWED = ("sys.stdout", "sys.stderr", "sys.stdin", "sys.argv", "sys.path", "os.environ", "os.path")
# from MODULE import * of these hands the file every name the rules above look for.
_STAR_SENSITIVE: dict[str, str] = {
    "sys": "introspection", "inspect": "introspection", "traceback": "introspection", "types": "code_objects",
    "gc": "gc", "ctypes": "ctypes", "signal": "signals", "os": "signals", "threading": "tracing",
    "marshal": "code_objects", "dis": "code_objects", "linecache": "production_source",
}

# getattr/setattr/vars with a computed name on these modules is a way around every rule above.
_DYNAMIC_SENSITIVE = frozenset({
    "sys", "os", "posix", "builtins", "gc", "inspect", "ctypes", "signal", "threading", "_thread", "importlib",
    "types", "traceback", "marshal", "json", "io", "linecache", "dis", "behave", "bench", "harness", "coverage",
})

# behave: module -> names a step module may reference (None: any public name, deeper too).
_BEHAVE_PUBLIC: dict[str, frozenset[str] | None] = {
    "behave": frozenset({
        "given", "when", "then", "step", "Given", "When", "Then", "Step", "use_default_step_matcher",
        "use_step_matcher", "register_type", "fixture", "use_fixture", "step_matcher", "__version__",
        # submodules reached as attributes: their own rules apply to what follows
        "api", "matchers", "model", "model_core", "model_type", "runner", "tag_matcher",
        "tag_expression", "textutil", "log_capture", "step_registry",
    }),
    "behave.api": None,  # pending_step, async_step, step_matchers, runtime_constraint, ...
    "behave.fixture": None,
    "behave.tag_matcher": None,
    "behave.tag_expression": None,
    "behave.textutil": None,
    "behave.matchers": frozenset({
        "register_type", "use_step_matcher", "use_default_step_matcher", "step_matcher", "ParseMatcher",
        "CFParseMatcher", "RegexMatcher", "CucumberRegexMatcher", "Matcher", "register_step_matcher_class",
    }),
    "behave.log_capture": frozenset({"capture"}),
    "behave.step_registry": frozenset({"given", "when", "then", "step", "Given", "When", "Then", "Step"}),
    # type names for annotations and isinstance; their methods stay out of reach
    "behave.model": frozenset({"Table", "Row", "Text", "Tag", "Feature", "Background", "Rule", "Scenario",
                               "ScenarioOutline", "Step", "Examples", "Status"}),
    "behave.model_core": frozenset({"Status"}),
    "behave.model_type": frozenset({"Status"}),
    "behave.runner": frozenset({"Context"}),
}
# Allowed names whose public attributes may be read (Status.passed, Table.headings ...).
_BEHAVE_DEEP_READ = frozenset({
    "behave.model.Status", "behave.model_core.Status", "behave.model_type.Status", "behave.model.Table",
    "behave.model.Row", "behave.runner.Context",
})
# Methods that run or re-judge a model object: reachable only through internals.
_RUNNER_METHODS = frozenset({
    "run", "run_model", "run_with_paths", "run_hook", "run_step", "set_status", "reset", "clear_status",
    "find_match", "find_step_definition", "add_step_definition", "mark_skipped_and_untested",
    "hook_failed", "store_exception_context", "emit", "setup_capture", "teardown_capture",
})
_MUTATORS = frozenset({
    "append", "extend", "insert", "remove", "pop", "clear", "sort", "reverse", "update", "setdefault", "popitem",
    "__setitem__", "__delitem__", "__setattr__", "__delattr__",
})
# Attributes of ``context`` that hold the runner's own objects.
_MODEL_ATTRS = frozenset({"scenario", "feature", "config", "rule", "active_outline", "runner", "step",
                          "log_capture", "stdout_capture", "stderr_capture", "captured"})
# behave.runner.Context's own private state and machinery (behave 1.2.6-1.3.x); other
# underscore names on context are the test's own values (context._browser)
_CONTEXT_INTERNALS = frozenset({
    "_runner", "_config", "_stack", "_root", "_mode", "_origin", "_record", "_push", "_pop", "_dump",
    "_emit_warning", "_set_root_attribute", "_select_stack_frame_by_layer", "_use_with_behave_mode",
    "_use_with_user_mode", "_do_cleanups", "_do_remaining_cleanups", "_cleanups", "_is_context",
})
_STEP_DECORATORS = frozenset({"given", "when", "then", "step", "Given", "When", "Then", "Step"})
_BUILTIN_NAMES = frozenset({
    "getattr", "setattr", "delattr", "hasattr", "vars", "eval", "exec", "compile", "__import__", "open",
    "type", "object", "globals", "locals", "breakpoint",
})
_BYTECODE_PATH = re.compile(r"\.py[co]\b|__pycache__")
_PROC_PATH = re.compile(r"/proc\b")
_SHELL_KILL = re.compile(r"\b(?:kill|pkill|killall)\s+(?:-\w+\s+)*(?:-?\d|\$|\"|')")
_MAX_NESTED_CODE = 3  # exec("exec('...')") is scanned this deep


# ---------------------------------------------------------------------------- API
def scan_prediction(files: dict[str, str]) -> list[TamperFinding]:
    """Every finding in a prediction's Python files (path -> source), in file and line order.

    Non-Python files are data and are not scanned; a file that does not parse cannot
    load either (the run reports that), so it yields no finding here.
    """
    findings: list[TamperFinding] = []
    for path in sorted(files):
        if path.endswith(".py"):
            findings.extend(scan_source(path, files[path]))
    return findings


def scan_source(path: str, source: str) -> list[TamperFinding]:
    """The findings of one Python source file."""
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError):
        return []
    scanner = _Scanner(path, source)
    scanner.run(tree)
    return sorted(scanner.findings.values(), key=lambda f: (f.line, f.kind))


# ---------------------------------------------------------------------------- scanner
def _literal_str(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _under(dotted: str, prefix: str) -> bool:
    return dotted == prefix or dotted.startswith(prefix + ".")


def _lookup(table: dict[str, str], dotted: str) -> str | None:
    """The kind of the longest prefix of ``dotted`` listed in ``table``."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        kind = table.get(".".join(parts[:end]))
        if kind is not None:
            return kind
    return None


def _behave_allowed(dotted: str, *, store: bool) -> bool:
    """Whether a reference to ``dotted`` (under ``behave``) stays in the public step API."""
    if store:
        return False  # no behave object, class or module is ever written by a test
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        module = ".".join(parts[:end])
        if module in _BEHAVE_PUBLIC:
            break
    else:
        return False
    rest = parts[end:]
    if not rest:
        return True  # the module itself: what is reached through it is checked where it is reached
    names = _BEHAVE_PUBLIC[module]
    if any(p.startswith("_") and p != "__version__" for p in rest):
        return False
    if names is None:
        return True
    if rest[0] not in names:
        return False
    if len(rest) == 1:
        return True
    # deeper: public attributes of a few value types, never runner methods
    return f"{module}.{rest[0]}" in _BEHAVE_DEEP_READ and rest[1] not in _RUNNER_METHODS


class _Scanner(ast.NodeVisitor):
    def __init__(self, path: str, source: str, *, at_line: int | None = None, depth: int = 0,
                 parent: _Scanner | None = None) -> None:
        self.path = path
        self.source = source
        self.at_line = at_line  # code scanned out of a string literal reports the literal's line
        self.depth = depth
        self.findings: dict[tuple[int, str], TamperFinding] = parent.findings if parent else {}
        self.aliases: dict[str, str] = dict(parent.aliases) if parent else {}
        self.context_names: set[str] = set(parent.context_names) if parent else {"context"}
        self.model_aliases: dict[str, list[str]] = dict(parent.model_aliases) if parent else {}
        self.params: list[set[str]] = []

    # ------------------------------------------------------------- bookkeeping
    def run(self, tree: ast.AST) -> None:
        self._collect_aliases(tree)
        self.visit(tree)

    def flag(self, kind: str, node: ast.AST) -> None:
        line = self.at_line if self.at_line else getattr(node, "lineno", 0)
        if (line, kind) in self.findings:
            return
        evidence = ""
        if self.at_line is None:
            evidence = ast.get_source_segment(self.source, node) or ""
        if not evidence:
            evidence = ast.unparse(node) if isinstance(node, ast.AST) else ""
        self.findings[(line, kind)] = TamperFinding(kind=kind, path=self.path, line=line, evidence=evidence,
                                                    screen="static")

    def _collect_aliases(self, tree: ast.AST) -> None:
        """Flow-insensitive: every import binds its name for the whole file, and simple
        re-bindings (``f = sys._getframe``, ``sc = context.scenario``) follow it."""
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.aliases[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.aliases[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if alias.name != "*":
                        self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args.posonlyargs + node.args.args
                if args and any(self._is_step_decorator(d) for d in node.decorator_list):
                    self.context_names.add(args[0].arg)
        for _ in range(2):  # re-bindings of re-bindings
            for node in ast.walk(tree):
                targets: list[ast.expr] = []
                value: ast.expr | None = None
                if isinstance(node, ast.Assign):
                    targets, value = node.targets, node.value
                elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                    targets, value = [node.target], node.iter
                elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                    targets, value = [node.optional_vars], node.context_expr
                if value is None:
                    continue
                for target in targets:
                    if not isinstance(target, ast.Name):
                        continue
                    dotted = self.resolve(value)
                    if dotted is not None and isinstance(value, (ast.Name, ast.Attribute)):
                        self.aliases.setdefault(target.id, dotted)
                    chain = self.context_chain(value)
                    if chain is not None and len(chain) >= 2 and chain[1] in _MODEL_ATTRS:
                        self.model_aliases.setdefault(target.id, chain)

    def _is_step_decorator(self, node: ast.expr) -> bool:
        func = node.func if isinstance(node, ast.Call) else node
        dotted = self.resolve(func)
        return dotted is not None and _under(dotted, "behave") and dotted.rsplit(".", 1)[-1] in _STEP_DECORATORS

    def resolve(self, node: ast.AST | None) -> str | None:
        """The dotted name an expression denotes through the file's imports, if any."""
        if isinstance(node, ast.Name):
            if node.id in self.aliases:
                return self.aliases[node.id]
            if node.id in _BUILTIN_NAMES:
                return f"builtins.{node.id}"
            return None
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, ast.Call):  # __import__("x"), importlib.import_module("x")
            func = self.resolve(node.func)
            if func in ("builtins.__import__", "importlib.import_module") and node.args:
                return _literal_str(node.args[0])
        return None

    def context_chain(self, node: ast.AST) -> list[str] | None:
        """``context.scenario.steps`` -> ["context", "scenario", "steps"]; None if not rooted at context."""
        attrs: list[str] = []
        while isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        if isinstance(node, ast.Call) and self.resolve(node.func) in ("builtins.getattr",) and \
                len(node.args) >= 2 and _literal_str(node.args[1]) is not None:
            inner = self.context_chain(node.args[0])
            return inner + [str(_literal_str(node.args[1]))] + attrs[::-1] if inner is not None else None
        if not isinstance(node, ast.Name):
            return None
        if node.id in self.context_names:
            return ["context"] + attrs[::-1]
        if node.id in self.model_aliases:
            return self.model_aliases[node.id] + attrs[::-1]
        return None

    # ------------------------------------------------------------------ checks
    def check_module(self, module: str, node: ast.AST) -> None:
        kind = _lookup(_MODULE_KINDS, module)
        if kind:
            self.flag(kind, node)
        if _under(module, "behave") and not _behave_allowed(module, store=False):
            self.flag("runner_internals", node)

    def check_name(self, dotted: str, node: ast.AST, *, store: bool = False, call: bool = False) -> None:
        kind = _lookup(_MODULE_KINDS, dotted) or _lookup(_NAME_KINDS, dotted)
        if kind is None and call:
            kind = _CALL_KINDS.get(dotted)
        if kind:
            self.flag(kind, node)
        if _under(dotted, "behave") and not _behave_allowed(dotted, store=store):
            self.flag("runner_internals", node)
        if store:
            module = dotted.split(".")[0]
            if module in _PATCH_KINDS and "." in dotted and not any(_under(dotted, a) for a in _PATCH_ALLOWED):
                self.flag(_PATCH_KINDS[module], node)

    def check_attr(self, attr: str, node: ast.AST) -> None:
        kind = _ATTR_KINDS.get(attr)
        if kind:
            self.flag(kind, node)

    def check_context(self, chain: list[str], node: ast.AST, *, store: bool = False,
                      method: str | None = None) -> None:
        """Rules for expressions rooted at the step's ``context``."""
        if len(chain) < 2:
            return
        if chain[1] in _CONTEXT_INTERNALS or (chain[1].startswith("__") and chain[1].endswith("__")):
            self.flag("runner_internals", node)  # context._runner, context._stack, context.__class__
            return
        if chain[1] not in _MODEL_ATTRS:
            return  # the test's own values (context.paragraph._p is production's business)
        if any(part.startswith("_") for part in chain[2:]):
            self.flag("runner_internals", node)  # context.scenario._cached_status
            return
        if store:
            if "userdata" not in chain[2:]:  # context.config.userdata is the test's own settings
                self.flag("runner_internals", node)  # context.scenario = ..., context.scenario.status = ...
        elif method is not None and len(chain) >= 2 and (
                method in _RUNNER_METHODS or (method in _MUTATORS and "userdata" not in chain)):
            self.flag("runner_internals", node)

    def is_sensitive_target(self, node: ast.AST) -> bool:
        dotted = self.resolve(node)
        return dotted is not None and dotted.split(".")[0] in _DYNAMIC_SENSITIVE

    # ----------------------------------------------------------------- visitors
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.check_module(alias.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module:
            return  # the prediction's own package
        self.check_module(node.module, node)
        for alias in node.names:
            if alias.name == "*":
                if _under(node.module, "behave"):
                    if node.module != "behave" and _BEHAVE_PUBLIC.get(node.module, ()) is not None:
                        self.flag("runner_internals", node)  # from behave.runner import *
                elif node.module in _STAR_SENSITIVE:
                    self.flag(_STAR_SENSITIVE[node.module], node)
                continue
            self.check_name(f"{node.module}.{alias.name}", node)
            if alias.name in _ATTR_KINDS:
                self.check_attr(alias.name, node)

    def visit_Expr(self, node: ast.Expr) -> None:
        if _literal_str(node.value) is not None:
            return  # a docstring or a bare string: words in prose are not paths
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "__builtins__":
            self.flag("builtins", node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        store = isinstance(node.ctx, (ast.Store, ast.Del))
        self.check_attr(node.attr, node)
        dotted = self.resolve(node)
        if dotted is not None:
            self.check_name(dotted, node, store=store)
        if node.attr == "__dict__" and self.is_sensitive_target(node.value):
            self.flag("introspection", node)
        chain = self.context_chain(node)
        if chain is not None:
            self.check_context(chain, node, store=store)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        key = _literal_str(node.slice)
        store = isinstance(node.ctx, (ast.Store, ast.Del))
        base = node.value
        owner: ast.AST | None = None
        if isinstance(base, ast.Attribute) and base.attr == "__dict__":
            owner = base.value
        elif isinstance(base, ast.Call) and self.resolve(base.func) == "builtins.vars" and base.args:
            owner = base.args[0]
        if owner is not None and key is not None:  # vars(sys)["_getframe"] is sys._getframe
            self.check_attr(key, node)
            dotted = self.resolve(owner)
            if dotted is not None:
                self.check_name(f"{dotted}.{key}", node, store=store)
        chain = self.context_chain(base)
        if chain is not None and store and len(chain) >= 2:
            self.check_context(chain + ["[]"], node, store=True)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        value = self.resolve(node.value)
        if value is not None and any(_under(value, f"{m}.Status") for m in
                                     ("behave.model", "behave.model_core", "behave.model_type")) \
                and any(isinstance(t, ast.Attribute) for t in node.targets):
            self.flag("runner_internals", node)  # something.status = Status.passed
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            text = node.value
            if _PROC_PATH.search(text):
                self.flag("process", node)
            if _SHELL_KILL.search(text):
                self.flag("signals", node)  # "kill -9 $PPID" for a shell to run
            if _BYTECODE_PATH.search(text):
                self.flag("production_source", node)

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        args = node.args
        names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
        names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        self.params.append(names)
        self.generic_visit(node)
        self.params.pop()

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function
    visit_Lambda = _visit_function

    def visit_Call(self, node: ast.Call) -> None:
        func = self.resolve(node.func)
        if func is not None:
            self.check_name(func, node, call=True)
            self._builtin_call(func, node)
            if func.endswith((".patch", ".patch.object", ".patch.dict")) or func in ("mock.patch",):
                self._patch_call(func, node)
        if isinstance(node.func, ast.Attribute):
            chain = self.context_chain(node.func.value)
            if chain is not None:
                self.check_context(chain, node, method=node.func.attr)
            if node.func.attr == "set_status" and any(self._is_status(a) for a in node.args):
                self.flag("runner_internals", node)
        self.generic_visit(node)

    def _is_status(self, node: ast.AST | None) -> bool:
        dotted = self.resolve(node)
        return dotted is not None and any(_under(dotted, f"{m}.Status") for m in
                                          ("behave.model", "behave.model_core", "behave.model_type"))

    def _builtin_call(self, func: str, node: ast.Call) -> None:
        args = node.args
        name = func.removeprefix("builtins.")
        if func in ("builtins.object.__setattr__", "builtins.type.__setattr__", "builtins.object.__delattr__",
                    "builtins.type.__delattr__"):
            name = "setattr"
        if name in ("getattr", "hasattr", "setattr", "delattr") and func.startswith("builtins.") and len(args) >= 2:
            store = name in ("setattr", "delattr")
            attr = _literal_str(args[1])
            chain = self.context_chain(args[0])
            if attr is not None:  # getattr(x, "f_back") is x.f_back
                self.check_attr(attr, node)
                owner = self.resolve(args[0])
                if owner is not None:
                    self.check_name(f"{owner}.{attr}", node, store=store)
                if chain is not None:
                    self.check_context(chain + [attr], node, store=store)
                if store and self._is_status(args[2] if len(args) > 2 else None):
                    self.flag("runner_internals", node)
            else:
                owner = self.resolve(args[0])
                if owner is not None and owner.split(".")[0] in _DYNAMIC_SENSITIVE:
                    kind = "runner_internals" if _under(owner, "behave") else (
                        _PATCH_KINDS.get(owner.split(".")[0], "monkeypatch") if store else "introspection")
                    self.flag(kind, node)
                elif store and chain is not None and len(chain) >= 2:
                    self.check_context(chain + ["?"], node, store=True)
        elif name == "vars" and func.startswith("builtins.") and args and self.is_sensitive_target(args[0]):
            self.flag("introspection", node)
        elif func in ("builtins.__import__", "importlib.import_module", "importlib.__import__"):
            target = _literal_str(args[0]) if args else None
            if target is None:
                self.flag("dynamic_code", node)
            else:
                self.check_module(target, node)
        elif func in ("builtins.eval", "builtins.exec", "builtins.compile"):
            self._dynamic_code(name, node)

    def _dynamic_code(self, name: str, node: ast.Call) -> None:
        if not node.args:
            return
        text = _literal_str(node.args[0])
        if text is not None:  # literal code: scan what it says
            if self.depth < _MAX_NESTED_CODE:
                try:
                    tree = ast.parse(text, mode="exec" if name != "eval" else "eval")
                except (SyntaxError, ValueError):
                    return
                inner = _Scanner(self.path, text, at_line=self.at_line or node.lineno, depth=self.depth + 1,
                                 parent=self)
                inner.run(tree)
            return
        arg = node.args[0]
        from_feature = (name == "eval" and isinstance(arg, ast.Name) and bool(self.params)
                        and arg.id in self.params[-1])
        if not from_feature:  # eval(value) of a step argument is text from the feature file
            self.flag("dynamic_code", node)

    def _patch_call(self, func: str, node: ast.Call) -> None:
        """unittest.mock.patch("json.dumps"), patch.object(sys, "settrace"): a write by another name."""
        if not node.args:
            return
        if func.endswith(".patch.object") and len(node.args) >= 2:
            owner, attr = self.resolve(node.args[0]), _literal_str(node.args[1])
            if owner is not None and attr is not None:
                self.check_name(f"{owner}.{attr}", node, store=True)
            return
        target = _literal_str(node.args[0])
        if target is not None:
            self.check_name(target, node, store=not func.endswith(".patch.dict"))
            if func.endswith(".patch.dict") and _under(target, "sys.modules"):
                self.flag("sys_modules", node)


def kinds_of(findings: Iterable[TamperFinding]) -> set[str]:
    """The set of kinds in some findings (a convenience for reports and tests)."""
    return {f.kind for f in findings}
