"""A warm behave worker: one process per core that forks once per scenario run.

Why this exists: a fresh ``behave`` process costs 0.6–1.0 s, >98 % of it start-up,
while a python-docx scenario runs in ~5 ms. This worker imports behave and the
production packages once (and, in *preloaded* mode, the project's hooks and step
definitions too), then forks a child per run. The fork gives every run a clean
copy of the warm state, so runs cannot contaminate each other, and a test that
calls ``os._exit``, kills its process or loops forever only takes its own child
down; the worker reports that as ``crashed``/``timeout`` from the outside.

It speaks JSON lines on its original stdout (fd 1 is redirected to stderr so
project prints cannot corrupt the protocol). It deliberately depends on the
standard library, behave and (lazily) coverage only: it runs inside the
project's environment, possibly inside a sandbox, never inside ours.

Requests (one JSON object a line), typed in ``bench.frameworks.messages``: ``BuildInit``,
``StaticBindingsRequest`` (preloaded mode only), ``RunRequest``, ``SessionRequest``,
``ImportMutantRequest``; ``{"op": "quit"}`` ends the worker.
"""

from __future__ import annotations

import gc
import json
import os
import pkgutil
import sys
import time
import traceback
from collections.abc import Mapping
from typing import Any

from bench.frameworks.behave import split_stream
from bench.frameworks.behave.forking import fork_call, serve_worker
from bench.frameworks.messages import BuildInit, ImportMutantRequest, RunRequest, SessionRequest

# Names of production descriptor/trampoline methods: a production function called
# by one of these, which itself was called from test code, is a direct call
# (python-docx's lazyproperty.__get__ → the decorated getter).
TRAMPOLINES = frozenset({"__get__", "__set__", "__call__", "__delete__"})

# (step type, step text) -> behave Match, filled by a session before it forks per mutant:
# every mutant run binds the same steps, so matching them once saves ~1/3 of a run.
MATCH_CACHE: dict[tuple[str, str], Any] = {}

import __future__

# RunRecorder._traced_profile: what it knows of an executing frame
_PROD, _TEST, _TRAMP, _POINT = 1, 2, 4, 8

# generator, coroutine, async generator: objects made from these keep their code
_SUSPENDABLE = 0x20 | 0x80 | 0x200

_FUTURE_FLAGS = 0
for _name in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _name).compiler_flag


def _abspath(root: str, filename: str) -> str:
    if os.path.isabs(filename):
        return os.path.normpath(filename)
    return os.path.normpath(os.path.join(root, filename))


class Worker:
    def __init__(self, proto_out) -> None:
        self.proto_out = proto_out
        self.root = ""
        self.features_dir = ""
        self.production_dirs: list[str] = []
        self.hook_files: list[str] = []
        self.runner = None
        self.preloaded = False
        self.load_error: str | None = None
        self.import_time: set[tuple[str, int, str]] = set()
        self.import_lines: dict[str, set[int]] = {}
        self.import_packages: list[str] = []

    # ------------------------------------------------------------------ init
    def init(self, req: BuildInit) -> dict[str, Any]:
        _shorten_idle_polls()
        self.root = os.path.abspath(req["root"])
        self.features_dir = os.path.abspath(req["features_dir"])
        self.production_dirs = [os.path.abspath(p) for p in req.get("production_dirs", [])]
        os.chdir(self.root)
        for entry in reversed(req.get("python_path", [])):
            sys.path.insert(0, os.path.abspath(entry))
        import behave  # warm import
        import behave.model
        import behave.runner  # noqa: F401

        self.import_packages = list(req.get("import_packages", []))
        import_time: set[tuple[str, int, str]] = set()
        prod_prefixes = tuple(d.rstrip(os.sep) + os.sep for d in self.production_dirs)

        def record_import_time(frame, event, arg):
            # Bodies that run while the package imports must stay visible in any view,
            # or the hidden package would not import at all.
            if event == "call":
                code = frame.f_code
                path = _abspath(self.root, code.co_filename)
                if path.startswith(prod_prefixes):
                    import_time.add((_rel(self.root, path), code.co_firstlineno, code.co_qualname))

        cov = None
        try:  # which production lines run while the package imports (mutant fallback rule)
            import coverage
            cov = coverage.Coverage(data_file=None, config_file=False,
                                    source=[d.rstrip(os.sep) for d in self.production_dirs])
            cov.start()
        except ImportError:
            cov = None
        sys.setprofile(record_import_time)
        try:
            import_errors = self._import_production(req.get("import_packages", []))
        finally:
            sys.setprofile(None)
            if cov is not None:
                cov.stop()
        self.import_time = import_time
        if cov is not None:
            data = cov.get_data()
            self.import_lines = {_rel(self.root, f): set(data.lines(f) or []) for f in data.measured_files()}
        if req.get("preload"):
            self.runner, self.load_error = self._make_runner(self.features_dir, load=True)
            self.preloaded = True
        try:
            import coverage  # warm import for traced runs
        except ImportError:
            pass
        return {
            "ok": True,
            "behave_version": _behave_version(),
            "python": sys.version.split()[0],
            "import_errors": import_errors,
            "import_time": sorted(list(k) for k in import_time),
            "load_error": self.load_error,
        }

    def _import_production(self, packages: list[str]) -> dict[str, str]:
        errors: dict[str, str] = {}
        for name in packages:
            try:
                pkg = __import__(name, fromlist=["__path__"])
            except BaseException as exc:  # noqa: BLE001 - an import error is data, not a crash
                errors[name] = f"{type(exc).__name__}: {exc}"
                continue
            for info in pkgutil.walk_packages(getattr(pkg, "__path__", []), name + "."):
                try:
                    __import__(info.name)
                except BaseException as exc:  # noqa: BLE001 - an import error is data, not a crash
                    errors[info.name] = f"{type(exc).__name__}: {exc}"
        return errors

    def _make_runner(self, features_dir: str, load: bool):
        from behave.configuration import Configuration
        from behave.runner import Runner

        config = Configuration(
            command_args=[features_dir, "--no-summary", "--no-snippets", "-f", "plain", "-o", os.devnull],
            load_config=False,
        )
        config.reporters = []
        runner = Runner(config)
        error = None
        try:
            runner.setup_paths()
            # Our feature files hold the steps dir; behave must see it on sys.path for
            # helpers that step modules import lazily at run time.
            steps_dir = os.path.join(runner.base_dir, config.steps_dir)
            if steps_dir not in sys.path:
                sys.path.insert(0, steps_dir)
            if load:
                runner.load_hooks()
                runner.load_step_definitions()
        except BaseException as exc:  # noqa: BLE001 - hooks or steps that do not load are the run's load error
            error = f"{type(exc).__name__}: {exc}\n" + traceback.format_exc(limit=8)
        runner.formatters = []
        self.hook_files = [_abspath(self.root, os.path.join(runner.base_dir or features_dir,
                                                           config.environment_file))]
        return runner, error

    # --------------------------------------------------------- static checks
    def static_bindings(self) -> dict[str, Any]:
        """Every step definition that matches each effective step, per scenario.

        behave silently takes the first match; a step that several definitions
        match does not bind *uniquely* (docs/building.md#rules-that-needed-a-decision),
        so we list them all.
        """
        from behave.runner_util import collect_feature_locations, parse_features
        from behave.step_registry import registry

        if self.runner is None or self.load_error:
            return {"error": self.load_error or "not preloaded"}
        out: dict[str, Any] = {}
        locations = collect_feature_locations([self.features_dir])
        for feature in parse_features(locations):
            rel = os.path.relpath(os.path.abspath(feature.filename), self.root)
            for scenario in feature.walk_scenarios():
                entries = []
                for step in scenario.all_steps:
                    matches = []
                    candidates = list(registry.steps.get(step.step_type, []))
                    candidates += list(registry.steps.get("step", []))
                    for step_def in candidates:
                        if step_def.match(step.name):
                            matches.append(_step_def_ref(self.root, step_def.func, step_def.location))
                    entries.append({"line": step.line, "type": step.step_type,
                                    "name": step.name, "matches": matches})
                out[f"{rel}:{scenario.line}"] = entries
        return {"scenarios": out}

    # ------------------------------------------------------------ workspaces
    def materialize_workspace(self, spec: dict[str, Any]) -> str:
        return materialize_workspace(self.root, self.features_dir, spec)

    # ------------------------------------------------------------------- run
    def run(self, req: RunRequest) -> dict[str, Any]:
        return fork_call(lambda: self._child_run(req), float(req.get("timeout", 60.0)))

    def _enter_test_tree(self, req: Mapping[str, Any]):
        """In a forked child: silence output, then use the preloaded runner, or materialise
        the request's workspace and load its hooks and steps. Returns
        (runner, load_error, root of the test tree, its features dir)."""
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        if not req.get("workspace"):
            os.chdir(self.root)
            return self.runner, self.load_error, self.root, self.features_dir
        ws_root = self.materialize_workspace(req["workspace"])
        features_dir = os.path.join(ws_root, os.path.relpath(self.features_dir, self.root))
        os.chdir(ws_root)
        _enter_import_root(self.root, ws_root, self.features_dir)
        from behave.step_registry import registry
        for key in registry.steps:
            registry.steps[key] = []
        runner, load_error = self._make_runner(features_dir, load=True)
        return runner, load_error, ws_root, features_dir

    def _child_run(self, req: Mapping[str, Any]) -> dict[str, Any]:
        runner, load_error, tree_root, features_dir = self._enter_test_tree(req)
        if load_error or runner is None:
            return {"exit": "ok", "load_error": load_error or "worker not initialised"}
        recorder = _recorder_class()(tree_root, features_dir, self.production_dirs, self.hook_files,
                                     trace=bool(req.get("trace")), prod_root=self.root)
        return recorder.run(runner, os.path.join(tree_root, req["feature"]), req["lines"])

    # ---------------------------------------------------------------- mutants
    def session(self, req: SessionRequest) -> dict[str, Any]:
        """One test against a list of mutants: a clean traced run, then a fork per mutant."""
        return fork_call(lambda: self._session(req), float(req.get("session_timeout", 7200.0)))

    def _session(self, req: Mapping[str, Any]) -> dict[str, Any]:
        runner, load_error, root_for_paths, features_dir = self._enter_test_tree(req)
        if load_error or runner is None:
            return {"clean": {"exit": "ok", "load_error": load_error or "worker not initialised"}, "mutants": {}}
        feature = os.path.join(os.getcwd(), req["feature"])
        lines = req["lines"]

        def recorder(trace: bool) -> RunRecorder:
            return _recorder_class()(root_for_paths, features_dir, self.production_dirs, self.hook_files,
                                     trace=trace, prod_root=self.root)

        from behave.model_core import FileLocation
        from behave.runner_util import parse_features
        parsed = parse_features([FileLocation(feature, int(line)) for line in lines])
        from behave.step_registry import registry as step_registry
        wanted = {int(line) for line in lines}
        unbound = sorted({f"{step.line}: {step.name}" for feat in parsed for scenario in feat.walk_scenarios()
                          if scenario.line in wanted for step in scenario.all_steps
                          if step_registry.find_match(step) is None})
        _prune_to_selected(parsed, wanted)
        started = time.monotonic()
        mutants = req.get("mutants") or []
        # coverage decides which mutants are reached: without mutants the clean run only says
        # whether the test passes, and runs untraced (a then-stripped test whose every kill the
        # builder inferred)
        clean = fork_call(lambda: recorder(bool(mutants)).run(runner, feature, lines, parsed),
                          float(req.get("timeout", 120.0)))
        out: dict[str, Any] = {"clean": clean, "mutants": {}, "unbound": unbound}
        if not mutants or not _run_passed(clean, len(lines)):
            return out
        trace = clean.get("trace", {})
        covered = {f: set(v) for f, v in trace.get("coverage", {}).items()}
        swapper = CodeSwapper(self.root, self._function_index())
        timings = out["timings"] = {"clean": round(time.monotonic() - started, 4)}
        for feat in parsed:
            for scenario in feat.walk_scenarios():
                for step in scenario.all_steps:
                    match = step_registry.find_match(step)
                    if match is not None:
                        MATCH_CACHE[(step.step_type, step.name)] = match
        # behave records a stack summary (source line included) per context attribute set:
        # read the step, hook and behave sources once here rather than in every child, and
        # never re-stat them (source files do not change under a session)
        import linecache
        linecache.checkcache = lambda filename=None: None
        behave_dir = os.path.dirname(os.path.abspath(sys.modules["behave"].__file__ or ""))
        for module in list(sys.modules.values()):
            path = getattr(module, "__file__", None) or ""
            if path.endswith(".py") and path.startswith((behave_dir, root_for_paths)) \
                    and not _abspath(self.root, path).startswith(tuple(self.production_dirs)):
                linecache.getlines(path)
        limit = max(float(req.get("mutant_timeout_min", 2.0)),
                    float(req.get("mutant_timeout_factor", 10.0)) * float(clean.get("elapsed", 0.1)))
        order = {label: i for i, label in enumerate(trace.get("points", []))}
        plan: dict[str, list[dict[str, Any]]] = {}
        for mutant in mutants:
            if not set(mutant["lines"]) & covered.get(mutant["file"], set()):
                out["mutants"][mutant["id"]] = {"verdict": "unreached"}
                continue
            mutated_lines = set(range(int(mutant["line"]), int(mutant["end_line"]) + 1))
            if mutated_lines & self.import_lines.get(mutant["file"], set()):
                # the mutated code ran while the package imported: swapping code afterwards
                # cannot replay that, so a fresh import with the mutant on disk decides
                out["mutants"][mutant["id"]] = {"verdict": "fallback", "detail": "mutated code runs at import time"}
                continue
            swapper.load(mutant)
            point = split_stream.RUN_START if swapper.holds_generator(mutant) else \
                split_stream.fork_point(mutant, trace.get("first_point", {}), order)
            plan.setdefault(point, []).append(mutant)
        gc.collect()
        gc.freeze()  # keep the warm heap out of later collections (fewer copy-on-write faults)
        planned = [m for group in plan.values() for m in group]
        point_of = {m["id"]: label for label, group in plan.items() for m in group}
        out["fork_points"] = {label: len(group) for label, group in plan.items()}

        def prepare(mutant: dict[str, Any]) -> str | None:
            error = swapper.swap(mutant)
            if error is None:
                _stop_at_first_failure(runner)
            return error

        def drive() -> dict[str, Any]:
            split = split_stream.SplitStream(plan, limit, prepare=prepare,
                                             summarize=lambda result: _summarize_run(result, len(lines), bindings=True))
            run_recorder = recorder(False)
            run_recorder.point_hook = split.at
            result = run_recorder.run(runner, feature, lines, parsed)
            split.finish(result)  # a mutant child reports and exits here
            # The driver's own run went on from every fork point after that point's children
            # had finished: it is a clean run of the shared state they left behind. Children
            # share everything outside the process (files in /tmp, a scratch directory an
            # after_scenario hook deletes): when the driver fails, the children may have
            # failed for the same reason, so none of their verdicts is kept.
            return {"results": split.results, "driver_passed": _run_passed(result, len(lines)),
                    "driver_failure": str(_summarize_run(result, len(lines)).get("first_failure") or "")[:300]}

        timings["prepare"] = round(time.monotonic() - started - timings["clean"], 4)
        driven = fork_call(drive, limit * (len(planned) + 1) + 60.0) if planned else {"results": {}}
        timings["split_stream"] = round(float(driven.get("elapsed", 0.0)), 4)
        results = driven.get("results", {})
        if planned and driven.get("driver_passed") is False:
            out["split_stream_discarded"] = driven.get("driver_failure") or "the driver's clean run failed"
            results = {}  # every planned mutant runs whole, from a fork of the worker
        for mutant in planned:
            result = results.get(mutant["id"])
            if result is None:
                # the driver died or never reached the mutant's point: a fork from the start
                # fork_call runs the function in a child and waits for it: within this iteration
                result = fork_call(lambda: self._mutant_child(runner, recorder, feature, lines, parsed,
                                                              mutant, swapper), limit)  # noqa: B023
            out["mutants"][mutant["id"]] = dict(_mutant_verdict(result, len(lines)), point=point_of[mutant["id"]])
        return out

    def import_mutant(self, req: ImportMutantRequest) -> dict[str, Any]:
        """One mutant, many tests: import the production package with the mutant applied
        (the mutant is served by an import hook, as if written to disk), then run each test.

        For mutants whose code runs at import time, which a code swap cannot replay. The
        worker must not have imported production itself (``import_packages`` empty at init).
        """
        return fork_call(lambda: self._import_mutant(req), float(req.get("session_timeout", 7200.0)))

    def _import_mutant(self, req: Mapping[str, Any]) -> dict[str, Any]:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        mutant = req["mutant"]
        path = _abspath(self.root, mutant["file"])
        with open(path, encoding="utf-8") as fh:
            source = apply_span(fh.read(), mutant["line"], mutant["col"], mutant["end_line"], mutant["end_col"],
                                mutant["replacement"])
        _install_source_override(path, source)
        # Unmutated modules may use a bytecode cache kept outside the project tree (shared by
        # all import-time mutants of this worker); the mutated module is always compiled.
        sys.pycache_prefix = os.path.join(os.path.dirname(self.root), "pycache-" + os.path.basename(self.root))
        sys.dont_write_bytecode = False
        verdicts: dict[str, Any] = {}
        # No eager import here: as in a fresh process, the step files import what they use
        # (a package that no longer imports shows up as their load error: no step runs).
        shared_runner = None
        for run in req["runs"]:
            limit = float(run.get("timeout", 60.0))
            if run.get("workspace"):
                # fork_call runs the function in a child and waits for it: within this iteration
                result = fork_call(lambda: self._run_in_workspace(run), limit)  # noqa: B023
            else:
                if shared_runner is None:
                    os.chdir(self.root)
                    shared_runner = self._make_runner(self.features_dir, load=True)
                    _stop_at_first_failure(shared_runner[0])
                runner, load_error = shared_runner
                if load_error:
                    verdicts[run["key"]] = {"verdict": "infra_no_step", "detail": load_error.splitlines()[0][:300]}
                    continue
                feature = os.path.join(self.root, run["feature"])
                recorder = RunRecorder(self.root, self.features_dir, self.production_dirs, self.hook_files,
                                       trace=False)
                # fork_call runs the function in a child and waits for it: within this iteration
                result = fork_call(lambda: _summarize_run(recorder.run(runner, feature, run["lines"]),  # noqa: B023
                                                          len(run["lines"]), bindings=True), limit)  # noqa: B023
            verdicts[run["key"]] = _mutant_verdict(result, len(run["lines"]))
        return {"verdicts": verdicts}

    def _run_in_workspace(self, run: dict[str, Any]) -> dict[str, Any]:
        ws_root = self.materialize_workspace(run["workspace"])
        features_dir = os.path.join(ws_root, os.path.relpath(self.features_dir, self.root))
        os.chdir(ws_root)
        runner, load_error = self._make_runner(features_dir, load=True)
        if load_error:
            return {"passed": False, "steps_ran": 0, "first_failure": load_error.splitlines()[0][:300]}
        _stop_at_first_failure(runner)
        recorder = RunRecorder(ws_root, features_dir, self.production_dirs, self.hook_files, trace=False,
                               prod_root=self.root)
        return _summarize_run(recorder.run(runner, os.path.join(ws_root, run["feature"]), run["lines"]),
                              len(run["lines"]), bindings=True)

    def _function_index(self) -> dict[tuple[str, int, str], list[Any]]:
        """Every live production function, by its code identity (scanned once per session)."""
        import gc
        import types

        prefixes = tuple(d.rstrip(os.sep) + os.sep for d in self.production_dirs)
        index: dict[tuple[str, int, str], list[Any]] = {}
        for obj in gc.get_objects():
            if type(obj) is types.FunctionType:
                code = obj.__code__
                path = _abspath(self.root, code.co_filename)
                if path.startswith(prefixes):
                    index.setdefault((path, code.co_firstlineno, code.co_qualname), []).append(obj)
        return index

    @staticmethod
    def _mutant_child(runner, recorder, feature: str, lines: list[int], parsed, mutant: dict[str, Any],
                      swapper: CodeSwapper) -> dict[str, Any]:
        error = swapper.swap(mutant)
        if error:
            return {"swap_error": error}
        _stop_at_first_failure(runner)
        return _summarize_run(recorder(False).run(runner, feature, lines, parsed), len(lines), bindings=True)

    # ------------------------------------------------------------------ loop
    def ops(self) -> dict[str, Any]:
        """Request op -> handler (a subclass adds or replaces entries)."""
        return {"init": self.init, "static_bindings": lambda req: self.static_bindings(), "run": self.run,
                "session": self.session, "import_mutant": self.import_mutant}

    def serve(self, stdin) -> None:
        handlers = self.ops()
        for line in stdin:
            line = line.strip()
            if not line:
                continue
            try:
                req = json.loads(line)
                op = req.get("op")
                if op == "quit":
                    self._reply({"ok": True})
                    return
                handler = handlers.get(op)
                reply = handler(req) if handler is not None else {"error": f"unknown op {op!r}"}
            except BaseException as exc:  # noqa: BLE001 - a failed request is answered; the worker serves on
                reply = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
            self._reply(reply)

    def _reply(self, obj: dict[str, Any]) -> None:
        self.proto_out.write(json.dumps(obj) + "\n")
        self.proto_out.flush()


class _RunDecided(BaseException):
    """Raised above the test's frames once a verdict run can no longer pass."""


class RunRecorder:
    """Runs selected scenarios in-process and records what a builder or evaluator needs.

    Structured results only: statuses come from behave's model objects, never from
    text the test prints.
    """

    def __init__(self, root: str, features_dir: str, production_dirs: list[str],
                 hook_files: list[str], trace: bool, prod_root: str | None = None) -> None:
        self.root = root
        # production is imported from the worker's own root even when the test runs in a
        # workspace (which only symlinks it): report production paths relative to that root
        self.prod_root = prod_root or root
        self.features_dir = features_dir.rstrip(os.sep) + os.sep
        self.production_dirs = [d.rstrip(os.sep) + os.sep for d in production_dirs]
        self.hook_files = set(hook_files)
        self.trace = trace
        self.step_stack: list[dict[str, Any]] = []
        self.records: list[dict[str, Any]] = []
        self.top_index = -1
        self.top_role = ""
        self.in_background = False
        self.direct: dict[int, set[tuple[str, int, str]]] = {}
        self.executed_when_then: set[tuple[str, int, str]] = set()
        self.executed_other: set[tuple[str, int, str]] = set()
        self.test_files: set[str] = set()
        self.opened: set[str] = set()
        self._kind_cache: dict[int, int] = {}  # id(code) -> kind (see _kind)
        self._kind_held: list[Any] = []
        self._path_cache: dict[str, str] = {}
        self._scenario = None
        # split-stream labels (see split_stream.py): points of this run, in order
        self.point_hook: Any = None
        self.points: list[str] = []
        self._scenario_count = -1
        self._step_label = split_stream.RUN_START
        self._call_points = 0
        self._cov: Any = None
        self.runner_patched: list[str] = []
        # A verdict run (behave --stop) is decided by its first scenario that does not pass:
        # end the run there, as behave would, but without the feature and after_all hooks
        # (a project's teardown — py-algorand-sdk's mock servers poll 0.5 s to shut down —
        # cannot turn a failed scenario into a passing run). Never for a traced run.
        self.decided = False
        self.end_at_decision = True  # False: a decided run still ends through behave (after_all runs)

    def _point(self, label: str) -> None:
        if self._cov is not None:
            self._cov.switch_context(label)
            self.points.append(label)
        if self.point_hook is not None:
            self.point_hook(label)

    def _call_point_after(self, frame) -> None:
        """A point after each return from production into step code with no other
        production frame on the stack (so no production code is mid-way through)."""
        if self._kind(frame.f_code) != 1:
            return
        caller = frame.f_back
        if caller is None or self._kind(caller.f_code) != 2:
            return
        outer = caller.f_back
        while outer is not None:
            if self._kind(outer.f_code) == 1:
                return
            outer = outer.f_back
        self._call_points += 1
        self._point(split_stream.call_point(self._step_label, self._call_points))

    def _split_profile(self, frame, event, arg):  # the split-stream driver's only hook
        if event == "return":
            self._call_point_after(frame)

    # code classification: 0 other, 1 production, 2 test-side (not hooks)
    def _kind(self, code) -> int:
        # Keyed by id(code), not by the code object: a code object's hash is recomputed on
        # every look-up from its bytecode, names and constants (nested code objects included),
        # 0.1-1 µs for a function and tens of µs for a module body, and this ran on every call
        # and return of a run. Code equality also ignores co_filename: two identical functions
        # at the same lines of two files (a production and a step file) shared one entry.
        # ``_kind_held`` keeps each code object alive, so an id cannot be recycled by another
        # code object while the cache lives (the old cache, keyed by the objects, held them too).
        kind = self._kind_cache.get(id(code))
        if kind is None:
            kind = self._file_kind(code.co_filename)
            self._kind_cache[id(code)] = kind
            self._kind_held.append(code)
        return kind

    def _file_kind(self, filename: str) -> int:
        """0 other, 1 production, 2 test-side (not hooks): what a code object's file makes it."""
        path = self._path(filename)
        if any(path.startswith(d) for d in self.production_dirs):
            return 1
        if path.startswith(self.features_dir) and path not in self.hook_files:
            return 2
        return 0

    def _path(self, filename: str) -> str:
        path = self._path_cache.get(filename)
        if path is None:
            path = _abspath(self.root, filename)
            self._path_cache[filename] = path
        return path

    def _traced_profile(self):
        """The traced run's ``sys.setprofile`` callback (``_profile``), built per run.

        It records what the callback it replaced records (``bench.frameworks.behave.trace_reference``
        keeps that one as the reference), in the same order, for 1.6x less CPU time over all
        371 python-pptx scenarios (1.9x on the largest outlines) and 1.6x over python-docx's
        239, identical results on all (benchmarks/trace_cost.py); the evaluator's traced run,
        whose screen examines every frame read, takes 3-4x less. Where the time went —
        python-pptx, a 30-row outline:
        2 M profile events (C calls and returns included), 0.54 M Python calls, half of
        them into production:

        - ``frame.f_code`` was read on every call and every return, and on each return from
          production into step code once per frame of the whole stack (is a production frame
          further out?): 1.9 M reads. In a traced run each read is an audit event, and the
          audit hook (``_audit``, the opened-files record) runs for each — a bound method,
          on which the interpreter's per-hook ``__cantrace__`` look-up raises and clears an
          AttributeError every time (0.57 µs a read against 0.21 µs for a plain function);
        - code objects were looked up in a dict keyed by the code objects, whose hash CPython
          recomputes from bytecode, names and constants (nested code objects included) on
          every look-up: 0.1 µs for a short function, 1 µs for zipfile's ``ZipFile.open``, more
          the longer the code; two or three look-ups per call and per return;
        - everything went through ``self`` of a bound method.

        Here ``f_code`` is read once per call event and never on a return; the kind of code is
        looked up by file name (a str: its hash is cached; the kind depends on nothing else),
        a production function's record by id(code) (see ``_kind``); the audit hook is a plain
        function (``_audit_hook``); and the stack questions are answered from ``live``: the
        frames of production and step code executing now, each put in at its call event and
        taken out at its return event (the profiler pairs them exactly: generator resumes and
        yields and exceptions included; it is per thread, as before). A frame missing from
        ``live`` is neither production nor step code. ``prod_depth`` counts the production
        frames in ``live``: "no production frame further out" at a return is "none on the
        stack when it was called", since the frames under a running frame cannot change. The
        frames already on the stack when profiling starts (the worker's own) are put in
        ``live`` at the first call event. (A test that swaps the profile function out and
        back in mid-run would leave ``live`` stale; the evaluator's screen reports any
        tracing a test does.)

        Reads frames: its code is registered with the evaluator's screen as a reader
        (``traced_profile_readers``) and named ``_profile`` for the attribution screen.
        """
        recorder = self
        classify = self._kind
        # A code object's kind depends on its file name only, a str whose hash is cached: the
        # first look-up is by name. Production code then needs its own record, by id(code).
        OTHER, STEP, PROD_FILE, STRING = "other", "step", "production", "<string>"
        by_file: dict[str, str] = {}   # co_filename -> OTHER, STEP, PROD_FILE or STRING (kind 0)
        prod_info: dict[int, Any] = {}  # id(code) -> (key, is a trampoline, may be a direct call)
        held: list[Any] = []  # the production code objects of prod_info (ids stay theirs; see _kind)
        live: dict[Any, int] = {}  # executing frame -> _TEST, or _PROD | _TRAMP? | _POINT?
        prod_depth = 0
        seeded = False
        when_then = ("when", "then")
        executed_when_then, executed_other, direct = self.executed_when_then, self.executed_other, self.direct
        test_files = self.test_files
        point, generated_init = self._point, self._generated_init
        call_point = split_stream.call_point
        PROD, TEST, TRAMP, POINT = _PROD, _TEST, _TRAMP, _POINT

        def file_info(code) -> str:
            kind = classify(code)
            filename = code.co_filename
            if kind == 1:
                value = PROD_FILE
            elif kind == 2:
                value = STEP
                test_files.add(filename)
            elif filename == "<string>":  # where dataclass/attrs __init__ come from
                value = STRING
            else:
                value = OTHER
            by_file[filename] = value
            return value

        def production(code) -> Any:
            value = ((code.co_filename, code.co_firstlineno, code.co_qualname), code.co_name in TRAMPOLINES,
                     code.co_name not in TRAMPOLINES and "<" not in code.co_qualname)
            prod_info[id(code)] = value
            held.append(code)
            return value

        def seed(frame) -> None:
            """The frames on the stack before the first call event (the run's callers)."""
            nonlocal prod_depth
            while frame is not None:
                code = frame.f_code
                kind = classify(code)
                if kind == 1:
                    live[frame] = PROD | (TRAMP if code.co_name in TRAMPOLINES else 0)
                    prod_depth += 1
                elif kind == 2:
                    live[frame] = TEST
                frame = frame.f_back

        def _profile(frame, event, arg):
            nonlocal prod_depth, seeded
            if event == "call":
                if not seeded:
                    seeded = True
                    seed(frame.f_back)
                code = frame.f_code
                value = by_file.get(code.co_filename)
                if value is None:
                    value = file_info(code)
                if value is OTHER:
                    return
                if value is STEP:
                    live[frame] = TEST
                    return
                if value is STRING:
                    if code.co_name == "__init__":
                        generated_init(frame)
                    return
                value = prod_info.get(id(code))
                if value is None:
                    value = production(code)
                key, trampoline, may_be_direct = value
                if recorder.top_role in when_then and not recorder.in_background:
                    executed_when_then.add(key)
                else:
                    executed_other.add(key)
                flags = PROD | TRAMP if trampoline else PROD
                caller = frame.f_back
                if caller is not None:
                    caller_flags = live.get(caller, 0)
                    if caller_flags == TEST:
                        if may_be_direct:
                            direct.setdefault(recorder.top_index, set()).add(key)
                        if not prod_depth:
                            flags |= POINT
                    elif may_be_direct and caller_flags & TRAMP:
                        outer = caller.f_back
                        if outer is not None and live.get(outer, 0) == TEST:
                            direct.setdefault(recorder.top_index, set()).add(key)
                live[frame] = flags
                prod_depth += 1
            elif event == "return":
                flags = live.pop(frame, 0)
                if flags & PROD:
                    prod_depth -= 1
                    if flags & POINT:
                        # a point after a return from production into step code with no
                        # other production frame on the stack
                        recorder._call_points += 1
                        point(call_point(recorder._step_label, recorder._call_points))

        return _profile

    def _generated_init(self, frame) -> None:
        """dataclass/attrs __init__ is compiled from a string: attribute it to its class."""
        caller = frame.f_back
        if caller is None or self._kind(caller.f_code) != 2:
            return
        instance = frame.f_locals.get("self")
        cls = type(instance)
        module = sys.modules.get(cls.__module__)
        filename = getattr(module, "__file__", None)
        if not filename or not any(os.path.abspath(filename).startswith(d) for d in self.production_dirs):
            return
        try:
            import inspect
            line = inspect.getsourcelines(cls)[1]
        except (OSError, TypeError):
            line = 0
        key = (filename, line, cls.__qualname__ + ".__init__")
        self.direct.setdefault(self.top_index, set()).add(key)

    def _audit_hook(self):
        """The traced run's audit hook (``_audit``): files opened for reading.

        A plain function, not a bound method: the interpreter looks ``__cantrace__`` up on
        each hook for every audit event, and on a bound method the miss raises and clears an
        AttributeError (0.57 µs a call against 0.21 µs). Every ``f_code`` read of the profile
        callback is such an event."""
        opened, abspath = self.opened, os.path.abspath
        write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT

        def _audit(event, args):
            if event == "open" and args:
                path = args[0]
                mode = args[1] if len(args) > 1 else "r"
                if isinstance(mode, str) and any(c in mode for c in "wax+"):
                    return
                if isinstance(mode, int) and mode & write_flags:
                    return
                if isinstance(path, bytes):
                    path = path.decode(errors="replace")
                if isinstance(path, str):
                    opened.add(abspath(path))

        return _audit

    def run(self, runner, feature_path: str, lines: list[int], features=None) -> dict[str, Any]:
        """Run the selected scenarios; ``features`` may be pre-parsed (a forked caller's copy)."""
        from behave import model
        from behave.model_core import FileLocation
        from behave.runner import Context
        from behave.runner_util import parse_features
        from behave.step_registry import StepRegistry

        recorder = self
        original_step_run = model.Step.run
        original_find_match = StepRegistry.find_match
        original_scenario_run = model.Scenario.run

        def scenario_run(scenario, runner_):
            recorder._scenario = scenario
            recorder.top_index = -1
            recorder._scenario_count += 1
            recorder._point(split_stream.scenario_point(recorder._scenario_count))
            failed = original_scenario_run(scenario, runner_)
            if not recorder.trace and recorder.end_at_decision and getattr(runner_.config, "stop", False) \
                    and scenario.status.name not in ("passed", "skipped", "untested"):
                recorder.decided = True
                raise _RunDecided()
            return failed

        def step_run(step, runner_, *args, **kwargs):
            depth = len(recorder.step_stack)
            if depth == 0:
                recorder.top_index += 1
                recorder._step_label = split_stream.step_point(recorder._scenario_count, recorder.top_index)
                recorder._call_points = 0
                recorder._point(recorder._step_label)
                recorder.top_role = step.step_type
                scenario = recorder._scenario
                bg = scenario.background_steps if scenario is not None else []
                recorder.in_background = any(s is step for s in bg)
            entry = {"depth": depth, "type": step.step_type, "keyword": step.keyword,
                     "name": step.name, "line": step.line,
                     "file": _rel(recorder.root, step.filename),
                     "top_index": recorder.top_index, "background": recorder.in_background,
                     "scenario_line": recorder._scenario.line if recorder._scenario else None,
                     "binding": None}
            recorder.step_stack.append(entry)
            recorder.records.append(entry)
            try:
                return original_step_run(step, runner_, *args, **kwargs)
            finally:
                recorder.step_stack.pop()
                entry["status"] = step.status.name
                exc = getattr(step, "exception", None)
                if exc is not None:
                    entry["error_type"] = type(exc).__name__
                    entry["error_module"] = type(exc).__module__
                    entry["error_message"] = str(exc)[:2000]
                    entry["error_origin"] = _origin(recorder.root, exc)
                    if recorder.trace and depth == 0 and entry["status"] in ("failed", "error"):
                        # the traced run is the clean run that decides the outcome: why it failed
                        entry.update(_failure_record(recorder.root, exc, runner_))

        def find_match(registry, step):
            match = MATCH_CACHE.get((step.step_type, step.name)) or original_find_match(registry, step)
            if match is not None and recorder.step_stack:
                recorder.step_stack[-1]["binding"] = _step_def_ref(
                    recorder.root, match.func, match.location)
            return match

        model.Step.run = step_run
        StepRegistry.find_match = find_match
        model.Scenario.run = scenario_run

        if features is None:
            features = parse_features([FileLocation(os.path.abspath(feature_path), int(line)) for line in lines])
        runner.features = features
        runner.context = Context(runner)
        runner.undefined_steps.clear() if hasattr(runner.undefined_steps, "clear") else None

        cov = None
        if self.trace:
            sys.addaudithook(self._audit_hook())
            try:
                import coverage
                cov = coverage.Coverage(data_file=None, config_file=False,
                                        source=[d.rstrip(os.sep) for d in self.production_dirs])
                cov.start()
            except ImportError:
                cov = None
            self._cov = cov
            sys.setprofile(self._traced_profile())
        elif self.point_hook is not None:
            sys.setprofile(self._split_profile)
        failed = None
        abort = None
        try:
            self._point(split_stream.RUN_START)
            failed = runner.run_model(features)
        except _RunDecided:
            failed = True
        except SystemExit as exc:
            abort = f"SystemExit({exc.code!r})"
        except BaseException as exc:  # noqa: BLE001 - whatever ends the run early is its abort
            abort = f"{type(exc).__name__}: {exc}"
        finally:
            sys.setprofile(None)
            if self.trace:
                if cov is not None:
                    cov.stop()
                self._cov = None
            # a test that replaced what we installed did so during a step: say so before
            # undoing the instrumentation (the evaluator's integrity check runs after this)
            self.runner_patched = [name for name, current, ours in (
                ("behave.model.Step.run", model.Step.run, step_run),
                ("behave.step_registry.StepRegistry.find_match", StepRegistry.find_match, find_match),
                ("behave.model.Scenario.run", model.Scenario.run, scenario_run)) if current is not ours]
            # undo the instrumentation (matters only when a caller runs twice in-process)
            model.Step.run = original_step_run
            StepRegistry.find_match = original_find_match
            model.Scenario.run = original_scenario_run
        scenarios = []
        for feature in features:
            for scenario in feature.walk_scenarios():
                if scenario.status.name in ("skipped", "untested") and not any(
                        r["scenario_line"] == scenario.line for r in self.records):
                    continue
                scenarios.append({"line": scenario.line, "name": scenario.name,
                                  "status": scenario.status.name,
                                  "hook_failed": bool(getattr(scenario, "hook_failed", False))})
        result: dict[str, Any] = {
            "exit": "ok",
            "failed": failed,
            "abort": abort,
            "hook_failures": getattr(runner, "hook_failures", 0),
            "feature_hook_failed": any(getattr(f, "hook_failed", False) for f in features),
            "scenarios": scenarios,
            "steps": self.records,
        }
        if self.trace:
            coverage_lines: dict[str, list[int]] = {}
            first_point: dict[str, dict[str, str]] = {}
            order = {label: i for i, label in enumerate(self.points)}
            if cov is not None:
                data = cov.get_data()
                for filename in data.measured_files():
                    lines_ = data.lines(filename) or []
                    if lines_:
                        rel = _rel(self.prod_root, filename)
                        coverage_lines[rel] = sorted(lines_)
                        first = split_stream.first_points(data.contexts_by_lineno(filename), order)
                        first_point[rel] = {str(line): label for line, label in first.items()}
            result["trace"] = {
                "direct": {str(k): sorted([_rel(self.prod_root, f), ln, q] for f, ln, q in v)
                           for k, v in self.direct.items()},
                "executed_when_then": sorted([_rel(self.prod_root, f), ln, q]
                                             for f, ln, q in self.executed_when_then),
                "executed_other": sorted([_rel(self.prod_root, f), ln, q]
                                         for f, ln, q in self.executed_other),
                "test_files": sorted({_rel(self.root, f) for f in self.test_files}),
                "coverage": coverage_lines,
                "points": self.points,
                "first_point": first_point,
                "opened": sorted(_rel(self.root, p) for p in self.opened
                                 if p.startswith(self.features_dir)),
            }
        return result


def _recorder_class() -> type[RunRecorder]:
    """RunRecorder, or the traced run as it was before it was made cheaper when the worker's
    environment asks for it (``bench.frameworks.behave.trace_reference``: benchmarks and tests only)."""
    if os.environ.get("REQ2TEST_REFERENCE_TRACE") == "1":
        from bench.frameworks.behave.trace_reference import ReferenceRunRecorder
        return ReferenceRunRecorder
    return RunRecorder


def traced_profile_readers() -> list[Any]:
    """Stand-ins (``__code__`` only) for the functions of ``RunRecorder._traced_profile`` that
    read frames (``f_code``): the evaluator's screen knows its readers by their code objects,
    and these are created per run, so it is given their code instead."""
    import types

    codes = {const.co_name: const for const in RunRecorder._traced_profile.__code__.co_consts
             if isinstance(const, types.CodeType)}
    return [types.SimpleNamespace(__code__=codes[name]) for name in ("_profile", "seed")]


def _shorten_idle_polls() -> None:
    """socketserver's ``serve_forever`` notices ``shutdown()`` only at its next poll, 0.5 s
    by default: a suite whose hooks start and stop mock HTTP servers (py-algorand-sdk: two
    per run, stopped in after_all) waits up to a second per run, and here every run is a
    whole behave run. The default poll becomes 10 ms; what a served request sees does not
    change (only how soon a shutdown is noticed). A poll the test passes itself is kept."""
    import socketserver

    serve_forever = socketserver.BaseServer.serve_forever
    if serve_forever.__defaults__ == (0.5,):
        serve_forever.__defaults__ = (0.01,)


def _enter_import_root(root: str, ws_root: str, features_dir: str) -> None:
    """Make imports resolve inside the workspace, as they do in the project itself.

    Step modules that import each other through a package (py-algorand-sdk:
    ``import tests.steps.other_v2_steps``) would otherwise find the sibling through the
    original tree on sys.path while behave loads it from the workspace: the same step
    definitions twice, from two locations (AmbiguousStep), and a test module the
    workspace was built to leave out. Every sys.path entry inside the project now points
    at the workspace, and test-side modules imported from the original tree are dropped.
    """
    prefix = root.rstrip(os.sep) + os.sep
    sys.path[:] = [os.path.join(ws_root, os.path.relpath(entry, root))
                   if entry and (os.path.abspath(entry) == root or os.path.abspath(entry).startswith(prefix))
                   else entry for entry in sys.path]
    top = os.path.join(root, os.path.relpath(features_dir, root).split(os.sep)[0]) + os.sep

    def in_test_tree(path: str) -> bool:  # the tree's top itself counts (a package's __path__)
        return (os.path.abspath(path) + os.sep).startswith(top)

    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None) or ""
        if (file and in_test_tree(file)) or any(in_test_tree(p) for p in getattr(module, "__path__", None) or []):
            del sys.modules[name]
    import importlib
    importlib.invalidate_caches()


def materialize_workspace(root: str, features_dir: str, spec: dict[str, Any]) -> str:
    """A copy of the project whose features tree keeps only some Python files.

    Production and everything outside the features tree are symlinked from ``root``,
    so production stays identical; non-Python files of the features tree (feature
    files, fixtures, data) are symlinked too; Python files are kept only when listed in
    ``keep_py`` (symlinked) or given in ``files`` (written: e.g. a prediction's test).
    Each worker has its own root, so tests that write scratch files never race.
    """
    ws_root = os.path.join(os.path.dirname(root), "ws-" + os.path.basename(root), spec["key"])
    if os.path.isdir(ws_root):
        return ws_root
    keep = set(spec.get("keep_py", []))
    files: dict[str, str] = spec.get("files") or {}
    features_rel = os.path.relpath(features_dir, root)
    top = features_rel.split(os.sep)[0]
    staging = f"{ws_root}.tmp{os.getpid()}"
    os.makedirs(staging, exist_ok=True)
    for name in os.listdir(root):
        if name != top:
            os.symlink(os.path.join(root, name), os.path.join(staging, name))
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        rel_dir = os.path.relpath(dirpath, root)
        os.makedirs(os.path.join(staging, rel_dir), exist_ok=True)
        for filename in filenames:
            rel = os.path.normpath(os.path.join(rel_dir, filename))
            if filename.endswith((".pyc", ".pyo")) or rel in files:
                continue
            if filename.endswith(".py") and rel not in keep:
                continue
            os.symlink(os.path.join(root, rel), os.path.join(staging, rel))
    for rel, content in files.items():
        path = os.path.join(staging, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(content)
    # behave refuses to start without a steps directory (ConfigError)
    os.makedirs(os.path.join(staging, features_rel, "steps"), exist_ok=True)
    try:
        os.rename(staging, ws_root)
    except OSError:
        if not os.path.isdir(ws_root):  # lost a race with another creator: theirs is identical
            raise
        import shutil
        shutil.rmtree(staging, ignore_errors=True)
    return ws_root


def _run_passed(result: dict[str, Any], expected_units: int) -> bool:
    """The pass condition of bench.frameworks.outcomes.classify_run (kept stdlib-only here)."""
    if result.get("exit") != "ok" or result.get("load_error") or result.get("abort"):
        return False
    if result.get("hook_failures") or result.get("feature_hook_failed"):
        return False
    scenarios = result.get("scenarios", [])
    return len(scenarios) == expected_units and all(s.get("status") == "passed" for s in scenarios)


def _summarize_run(result: dict[str, Any], expected_units: int, bindings: bool = False) -> dict[str, Any]:
    """A verdict run's summary; ``bindings`` (build runs): the step definitions a failing run
    executed, at any depth, as "file:line" (lets the builder see that a failure came before
    any Then step definition ran)."""
    passed = _run_passed(result, expected_units)
    out: dict[str, Any] = {
        "passed": passed,
        "steps_ran": sum(1 for s in result.get("steps", []) if s.get("status") not in ("untested", "skipped")),
        "first_failure": next((f"{s.get('error_type', s.get('status'))}: {s.get('error_message', '')[:200]}"
                               for s in result.get("steps", [])
                               if s.get("status") in ("failed", "error", "undefined")), None)}
    if bindings and not passed:
        out["bindings"] = sorted({f"{s['binding']['file']}:{s['binding']['line']}" for s in result.get("steps", [])
                                  if isinstance(s.get("binding"), dict)})
    return out


def _install_source_override(path: str, source: str) -> None:
    """Make the import system load ``source`` for the module file ``path``."""
    import importlib.abc
    import importlib.machinery

    class MutatedLoader(importlib.machinery.SourceFileLoader):
        def get_data(self, filename):
            if os.path.abspath(filename) == path:
                return source.encode("utf-8")
            if filename.endswith((".pyc", ".pyo")):
                raise OSError("no bytecode for mutated sources")
            return super().get_data(filename)

        def path_stats(self, filename):
            raise OSError("force a compile from source")

    class MutatedFinder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, target_path=None, target=None):
            spec = importlib.machinery.PathFinder.find_spec(fullname, target_path)
            if spec is not None and spec.origin and os.path.abspath(spec.origin) == path:
                spec.loader = MutatedLoader(fullname, spec.origin)
            return spec

    sys.meta_path.insert(0, MutatedFinder())


def _mutant_verdict(result: dict[str, Any], expected_units: int) -> dict[str, Any]:
    elapsed = round(float(result.get("elapsed", 0.0)), 4)
    if result.get("exit") == "timeout":
        return {"verdict": "timeout", "elapsed": elapsed}
    if result.get("swap_error"):
        return {"verdict": "fallback", "elapsed": elapsed, "detail": result["swap_error"][:300]}
    if "passed" not in result:  # the child died before reporting (crash, os._exit, signal)
        return {"verdict": "killed", "elapsed": elapsed, "detail": str(result.get("error", "crashed"))[:300]}
    if result.get("passed"):
        return {"verdict": "survived", "elapsed": elapsed}
    if not result.get("steps_ran"):
        return {"verdict": "infra_no_step", "elapsed": elapsed, "detail": result.get("first_failure")}
    verdict = {"verdict": "killed", "elapsed": elapsed, "detail": result.get("first_failure")}
    if "bindings" in result:
        verdict["bindings"] = result["bindings"]
    return verdict


class CodeSwapper:
    """Puts a mutant's code into the live function objects (in a forked child).

    Every live function whose code spans the mutated line is swapped: the mutated
    function, the functions around it, and closures made from it earlier (a factory
    that ran at import time made them) — all at once, before the mutant's code runs.
    """

    def __init__(self, root: str, functions: dict[tuple[str, int, str], list[Any]]) -> None:
        self.root = root
        self.functions = functions
        # one code object per file: its filename as the interpreter knows it, and the
        # module's __future__ flags (e.g. annotations), which the compiled chunk lacks
        self.samples: dict[str, Any] = {}
        self.generators: dict[str, list[int]] = {}  # path -> first lines of generator functions
        for (path, first_line, _), funcs in functions.items():
            self.samples.setdefault(path, funcs[0].__code__)
            if funcs[0].__code__.co_flags & _SUSPENDABLE:
                self.generators.setdefault(path, []).append(first_line)
        self.texts: dict[str, str] = {}

    def holds_generator(self, mutant: dict[str, Any]) -> bool:
        """Whether the mutant's function span holds a live generator (or coroutine)
        function: a generator object made from it keeps the old code even after the
        swap, and making one runs no line, so the clean run cannot say when it happened."""
        path = _abspath(self.root, mutant["file"])
        start = int(mutant.get("function_line") or mutant["line"])
        end = int(mutant.get("function_end") or mutant["end_line"])
        return any(start <= line <= end for line in self.generators.get(path, ()))

    def load(self, mutant: Mapping[str, Any]) -> None:
        """Read the mutant's file in the parent, so every child shares the text."""
        path = _abspath(self.root, mutant["file"])
        if path not in self.texts:
            with open(path, encoding="utf-8") as fh:
                self.texts[path] = fh.read()

    def swap(self, mutant: dict[str, Any]) -> str | None:
        """Swap the mutant in; an error text when it cannot be (the mutant falls back)."""
        swaps = self.prepare(mutant)
        if isinstance(swaps, str):
            return swaps
        apply_swaps(swaps)
        return None

    def prepare(self, mutant: Mapping[str, Any]) -> list[tuple[Any, Any]] | str:
        """The (function, mutated code) pairs that put the mutant in, compiled but not yet
        installed — or why it cannot be swapped. Compiling runs no code, so a process that
        must stay clean of the mutant (the evaluator's worker) can prepare it for a child."""
        self.load(mutant)
        path = _abspath(self.root, mutant["file"])
        mutated = apply_span(self.texts[path], mutant["line"], mutant["col"], mutant["end_line"],
                             mutant["end_col"], mutant["replacement"]).splitlines(keepends=True)
        chunk = _function_chunk(mutated, mutant)
        sample = self.samples.get(path)
        filename = sample.co_filename if sample is not None else path
        flags = (sample.co_flags & _FUTURE_FLAGS) if sample is not None else 0
        try:
            module_code = compile(chunk, filename, "exec", flags=flags, dont_inherit=True)
        except SyntaxError as exc:
            return f"does not compile: {exc}"
        swaps = []
        stack = [c for c in module_code.co_consts if hasattr(c, "co_qualname")]
        while stack:
            code = stack.pop()
            stack.extend(c for c in code.co_consts if hasattr(c, "co_qualname"))
            code_lines = [ln for _, _, ln in code.co_lines() if ln is not None]
            if not code_lines or not (code.co_firstlineno <= mutant["line"] <= max(code_lines)):
                continue
            for func in self.functions.get((path, code.co_firstlineno, code.co_qualname), []):
                live, mutated_free = func.__code__.co_freevars, code.co_freevars
                if live != mutated_free:
                    if len(mutated_free) < len(live) and live[:len(mutated_free)] == mutated_free:
                        # e.g. removing `super().__init__()` drops the __class__ cell: the
                        # mutated code never reads the extra cells, so declaring them keeps
                        # the function's closure valid without changing what it does
                        code = code.replace(co_freevars=live)
                    else:
                        return f"closure layout of {code.co_qualname} changes"
                swaps.append((func, code))
        if not swaps:
            return "no live function holds the mutated code"
        return swaps


def apply_swaps(swaps: list[tuple[Any, Any]]) -> None:
    """Install prepared code all at once, before the mutant's code can run."""
    for func, code in swaps:
        func.__code__ = code


def _stop_at_first_failure(runner: Any) -> None:
    """A mutant's run ends at its first failing scenario (``behave --stop``, as mutmut
    runs ``pytest -x``): the kill is decided there, and the remaining outline rows
    would only repeat the set-up (7 rows cost 7 times one)."""
    runner.config.stop = True


def _prune_to_selected(features: list[Any], wanted: set[int]) -> None:
    """Drop the scenarios a run does not select from the parsed model.

    behave walks every scenario of the file and sets up output capture even for the
    ones it skips (no hooks, no steps); on a 40-scenario file that is a fifth of a
    one-scenario run. Left untouched unless every wanted line is found.
    """
    from behave import model

    def selected(item: Any) -> bool:
        if isinstance(item, (model.Rule, model.ScenarioOutline)):
            return any(s.line in wanted for s in item.walk_scenarios()) if isinstance(item, model.Rule) \
                else any(s.line in wanted for s in item.scenarios)
        return item.line in wanted

    found = {s.line for feature in features for s in feature.walk_scenarios() if s.line in wanted}
    if found != wanted:
        return

    def prune(container: Any) -> None:
        container.run_items = [item for item in container.run_items if selected(item)]
        container.scenarios = [item for item in container.scenarios if selected(item)]
        if hasattr(container, "rules"):
            container.rules = [rule for rule in container.rules if selected(rule)]
        for item in container.run_items:
            if isinstance(item, model.Rule):
                prune(item)
            elif isinstance(item, model.ScenarioOutline):
                item._scenarios = [s for s in item.scenarios if s.line in wanted]

    for feature in features:
        prune(feature)


def _function_chunk(mutated: list[str], mutant: Mapping[str, Any]) -> str:
    """Source that compiles to the mutated function's code at its original line numbers.

    Only the function itself is compiled (the whole class would cost a few ms per
    mutant); a method is wrapped in stub ``class`` headers so its qualname and its
    ``__class__`` cell (zero-argument super()) come out as in the real class.
    """
    start, end = mutant["function_line"], mutant.get("function_end") or 0
    owners = mutant["function"].split(".")[:-1]
    if not end or "<locals>" in owners or start - 1 < len(owners):
        s, e = mutant["scope"]  # fall back to the whole module-level statement
        return "\n" * (s - 1) + "".join(mutated[s - 1: e])
    header = "".join(" " * depth + f"class {name}:\n" for depth, name in enumerate(owners))
    body = "".join(mutated[start - 1: end])
    if not owners:
        body = body.lstrip(" ") if not mutated[start - 1].startswith((" ", "\t")) else body
    return "\n" * (start - 1 - len(owners)) + header + body


def apply_span(text: str, line: int, col: int, end_line: int, end_col: int, replacement: str) -> str:
    lines = text.splitlines(keepends=True)
    before = "".join(lines[: line - 1]) + lines[line - 1][:col]
    after = lines[end_line - 1][end_col:] + "".join(lines[end_line:])
    return before + replacement + after


def _rel(root: str, filename: str) -> str:
    path = _abspath(root, filename)
    rel = os.path.relpath(path, root)
    return path if rel.startswith("..") else rel


def _step_def_ref(root: str, func, location) -> dict[str, Any]:
    code = getattr(func, "__code__", None)
    if code is None:  # async wrapper or callable object
        inner = getattr(func, "func", None) or getattr(func, "__wrapped__", None)
        code = getattr(inner, "__code__", None)
    filename = getattr(location, "filename", None) or (code.co_filename if code else "?")
    return {"file": _rel(root, filename),
            "line": int(getattr(location, "line", 0) or (code.co_firstlineno if code else 0)),
            "qualname": code.co_qualname if code is not None else repr(func)}


def _origin(root: str, exc: BaseException) -> dict[str, Any] | None:
    tb = exc.__traceback__
    last = None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    if last is None:
        return None
    code = last.tb_frame.f_code
    return {"file": _rel(root, code.co_filename), "line": last.tb_lineno, "function": code.co_qualname}


FAILURE_TEXT = 16 * 1024  # characters of a traceback or a stream a claim carries (the judge cuts again)


def _failure_record(root: str, exc: BaseException, runner: Any) -> dict[str, Any]:
    """The failing step's traceback (from its first frame under ``root``: behave's own frames
    that called the step say nothing about the test) and what the scenario printed so far
    (behave's capture), with ``root`` taken out of paths; cut to ``FAILURE_TEXT``. The test may
    have replaced anything used here: whatever goes wrong leaves the record without it."""
    record: dict[str, Any] = {}
    cut: dict[str, int] = {}
    try:
        lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
        kept: list[str | int] = []  # an int: that many frames of the runner left out there
        inside = False
        for line in lines:
            if line.startswith("Traceback (most recent call last)"):
                inside = False
            elif line.startswith('  File "') and not inside:
                path = line[len('  File "'):].split('"', 1)[0]
                if not _abspath(root, path).startswith(root.rstrip(os.sep) + os.sep):
                    if kept and isinstance(kept[-1], int):
                        kept[-1] += 1
                    else:
                        kept.append(1)
                    continue
                inside = True
            kept.append(line)
        text = "".join(f"  ({item} frames of the runner left out)\n" if isinstance(item, int) else item
                       for item in kept)
        record["traceback"], cut["traceback"] = _cut(text.replace(root.rstrip(os.sep) + os.sep, ""))
    except BaseException:  # noqa: BLE001, S110 - no traceback rather than no result
        pass
    try:
        controller = getattr(runner, "capture_controller", None)
        for name in ("stdout", "stderr"):
            buffer = getattr(controller, f"capture_{name}", None) if controller is not None else None
            buffer = buffer if buffer is not None else getattr(runner, f"{name}_capture", None)
            value = buffer.getvalue() if buffer is not None else None
            if isinstance(value, str) and value:
                record[name], cut[name] = _cut(value)
    except BaseException:  # noqa: BLE001, S110 - no output rather than no result
        pass
    record["cut"] = {name: n for name, n in cut.items() if n}
    return record


def _cut(text: str) -> tuple[str, int]:
    """At most ``FAILURE_TEXT`` characters, marker included (its start and its end, nearest the
    failure), and how many were left out."""
    if len(text) <= FAILURE_TEXT:
        return text, 0
    head, tail = FAILURE_TEXT // 4, FAILURE_TEXT - FAILURE_TEXT // 4 - 64
    left_out = len(text) - head - tail
    return f"{text[:head]}\n[… {left_out} characters cut …]\n{text[-tail:]}", left_out


def _behave_version() -> str:
    try:
        from behave.version import VERSION
        return VERSION
    except ImportError:
        return "unknown"


def main() -> None:
    serve_worker(Worker)


if __name__ == "__main__":
    main()
