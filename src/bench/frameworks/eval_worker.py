"""The evaluator's sandboxed worker: it runs an untrusted test but never executes it itself.

Trust boundary (README "Threat model"): a prediction is code written by an agent that
optimises its score. This worker lives in a fresh sandbox per instance whose disk holds
only that instance's pristine workspace (prediction + shared infrastructure, no
ground-truth test file of any instance) and read-only production. It imports behave and
the production packages once (warm), then for every run forks a child that

1. drops every descriptor but its own result pipe (the worker's protocol is unreachable),
2. installs the runtime audit hook and takes the runner-integrity snapshot,
3. swaps the variant's code in — BEFORE any prediction code exists in the process, so an
   import-time snapshot of production code already sees the variant,
4. loads the hooks and step modules (here the prediction first runs), runs the
   selected scenarios and reports a *claim* on the pipe.

A ``batched`` request (the verdict process's reproduction batch only) runs several
variants per child instead: the first is swapped in before the test loads, each later one
swapped in after the previous one is swapped back out, behave's model reset in between. The
test keeps its state across those runs, so such a run only re-observes a kill that a
pristine child already showed.

The worker itself never loads a step module, so no prediction code ever runs in it:
between runs it kills stray processes, restores the workspace from its pristine copy and
empties /tmp, so each run starts from the same state. Verdict runs carry no tracer and
the same fork depth whether the variant is a mutant or a null (identical code); the
traced run that measures coverage is a separate run. Which variant is a real mutant, and
which mutants the ground truth kills, is known only outside, to the verdict process.

Standard library + behave only (it runs in the project's environment). JSON lines on the
original stdout; the requests and replies are typed in ``bench.frameworks.messages``
(``EvalInit`` → ``EvalInitReply``, ``TraceRequest`` → ``RunClaim``, ``RunsRequest`` →
``RunsReply``; ``{"op": "quit"}`` ends the worker), which the verdict process validates.
"""

from __future__ import annotations

import functools
import json
import os
import resource
import select
import shutil
import signal
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

from bench.frameworks import behave_worker as bw
from bench.frameworks import forking
from bench.frameworks.change_watch import ChangeWatch
from bench.frameworks.forking import kill_group, load_libc, read_until_closed
from bench.frameworks.messages import EvalInit, EvalInitReply, RunClaim, RunsReply, RunsRequest, TraceRequest

MAX_CLAIM_BYTES = 8 * 1024 * 1024
PR_SET_DUMPABLE = 4


class EvalWorker(bw.Worker):
    def __init__(self, proto_out) -> None:
        super().__init__(proto_out)
        self.pristine = ""
        self.fixed: list[str] = []  # read-only mounts inside the workspace (production)
        self.manifest: dict[str, tuple[int, int, int, int, int]] = {}
        self.functions: dict[tuple[str, int, str], list[Any]] = {}
        self.limits: dict[str, int] = {}
        self.prediction_files: set[str] = set()
        self.swapper: bw.CodeSwapper | None = None
        self.watch: ChangeWatch | None = None
        self.prepared: dict[str, list[tuple[Any, Any]] | str] = {}
        # Only inside a sandbox of our own (new pid namespace, private /tmp) may the worker
        # kill every other process and empty the scratch dirs; never on a host.
        self.isolated = False
        self.scratch: list[str] = []
        # runner changes production made while the warm worker imported it (untrusted production only)
        self.import_changes: list[str] = []

    # ------------------------------------------------------------------ init
    def init(self, req: EvalInit) -> EvalInitReply:  # type: ignore[override]
        _undumpable()  # a child of the same uid must not ptrace or read this process's memory
        before = set(sys.modules)
        # The reverse task's production is the prediction: what it changes in the runner while the
        # warm worker imports it must be seen, so the integrity baseline is taken before that import
        # (for trusted production the baseline is taken after it, in _prepare_screens).
        early = None
        if req.get("untrusted_production"):
            from bench.guard import integrity

            early = integrity.snapshot()
        # A cold worker imports what production depends on but is not production (lxml, the
        # standard library): a cold run then imports only production itself from disk.
        for name in req.get("preimport", []):
            try:
                __import__(name)
            except BaseException:  # noqa: BLE001 - the run child will report the same error
                pass
        reply = super().init(req)
        if early is not None:
            from bench.guard import integrity

            self.import_changes = list(integrity.changes(early))
        prefixes = tuple(os.path.abspath(d).rstrip(os.sep) + os.sep for d in self.production_dirs)
        reply["dependencies"] = sorted(
            name for name in set(sys.modules) - before
            if not (getattr(sys.modules[name], "__file__", None) or "").startswith(prefixes)
            and not name.startswith(("bench", "coverage")) and "." not in name.strip("_"))
        self.pristine = os.path.abspath(req["pristine"])
        self.fixed = [os.path.abspath(p) for p in req.get("fixed", [])]
        self.limits = {k: int(v) for k, v in (req.get("limits") or {}).items()}
        self.prediction_files = {os.path.abspath(p) for p in req.get("prediction_files", [])}
        self.isolated = bool(req.get("isolated"))
        self.scratch = [os.path.abspath(p) for p in req.get("scratch", [])]
        # directories bound into the sandbox that may lie inside a scratch dir (a checkout
        # under /tmp holding the bench package): clearing /tmp must step around them
        self.mounts = [os.path.abspath(p) for p in req.get("mounts", [])]
        self.functions = self._function_index() if self.import_packages else {}
        # Everything up to loading the test is ours and is done once, here: the runner's
        # configuration and paths, and the test's code compiled (compiling runs nothing).
        self.template, self.template_error = self._make_runner(self.features_dir, load=False)
        sources = _install_compile_cache(self.root, self.features_dir)
        _warm_step_patterns(sources)
        _warm_linecache(self.root, sources)
        self.screens = _prepare_screens(self)
        self.manifest = self._scan()
        self.watch = ChangeWatch(self.root, self.fixed)
        import gc
        gc.collect()
        gc.freeze()  # keep the warm heap out of later collections: fewer copy-on-write faults per fork
        reply["import_lines"] = {f: sorted(v) for f, v in self.import_lines.items()}
        reply.pop("import_time", None)
        return reply

    # --------------------------------------------------------------- hygiene
    def _scan(self) -> dict[str, tuple[int, int, int, int, int]]:
        """Every entry of the writable workspace with what a change would alter (ctime
        cannot be set back by the test, so content rewritten with an old mtime shows)."""
        out: dict[str, tuple[int, int, int, int, int]] = {}
        fixed = set(self.fixed)
        prefix = len(self.root) + 1
        stack = [self.root]
        while stack:
            directory = stack.pop()
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue
            for entry in entries:
                path = entry.path
                if path in fixed:
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                out[path[prefix:]] = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
                if entry.is_dir(follow_symlinks=False):
                    stack.append(path)
        return out

    def reset(self) -> dict[str, int]:
        """Back to the pristine state before a run: no stray process, the workspace as
        materialised, an empty /tmp. Returns what had to be undone (for the record)."""
        stats = {"killed": _kill_strays() if self.isolated else 0, "restored": 0, "removed": 0}
        forking.reap_all()
        # the watch answers "nothing changed" for one read; anything else (a stray process
        # that may still be dying, any event, no watch) pays for the full scan
        if not stats["killed"] and self.watch is not None and not self.watch.changed():
            self._clear_scratch()
            return stats
        current = self._scan()
        if current != self.manifest:
            for rel in sorted(set(current) - set(self.manifest), key=len):
                path = os.path.join(self.root, rel)
                if os.path.lexists(path):
                    _remove(path)
                    stats["removed"] += 1
            for rel in sorted(self.manifest, key=len):
                if current.get(rel) != self.manifest[rel]:
                    self._restore(rel)
                    stats["restored"] += 1
            self.manifest = self._scan()
            if self.watch is not None:
                self.watch.arm()  # our own restoring raised events; restored dirs are new inodes
        elif self.watch is not None:
            self.watch.changed()  # drain (events that changed nothing the manifest records)
        self._clear_scratch()
        return stats

    def _clear_scratch(self) -> None:
        for scratch in self.scratch:
            _clear(scratch, keep=[self.root, self.pristine, *self.mounts])
        os.makedirs(os.environ.get("HOME", "/tmp/home"), exist_ok=True)

    def _restore(self, rel: str) -> None:
        target = os.path.join(self.root, rel)
        source = os.path.join(self.pristine, rel)
        if os.path.lexists(target) and not (os.path.isdir(target) and not os.path.islink(target)
                                            and os.path.isdir(source)):
            _remove(target)
        if os.path.isdir(source):
            os.makedirs(target, exist_ok=True)
            shutil.copystat(source, target)
        elif os.path.lexists(source):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)

    # ------------------------------------------------------------------ runs
    def trace(self, req: TraceRequest) -> RunClaim:
        """The traced run: coverage and direct calls for the metrics, the ladder's stage.
        Its tracer makes it distinguishable, so it is never a verdict run."""
        self.reset()
        parsed = self._parse(req)
        return self._fork(lambda channel: self._child(req, None, channel, traced=True, parsed=parsed),
                          float(req["timeout"]))

    def _parse(self, req: dict[str, Any]) -> Any:
        """The selected scenarios' model, parsed here once per request (Gherkin is data, not
        test code); every run child gets its own copy-on-write copy."""
        from behave.model_core import FileLocation
        from behave.runner_util import parse_features
        feature = os.path.join(self.root, req["feature"])
        lines = [int(x) for x in req["lines"]]
        try:
            parsed = parse_features([FileLocation(feature, line) for line in lines])
        except BaseException:  # noqa: BLE001 - the child reports the same error in its run
            return None
        bw._prune_to_selected(parsed, set(lines))
        return parsed

    def runs(self, req: RunsRequest) -> RunsReply:
        """Verdict runs in the order given (the verdict process shuffled them).

        The variant's code is compiled here, in the worker, where no prediction code ever
        runs (compiling executes nothing) — and while the previous run's child is busy, so
        on a second core it costs no wall time. The child only installs it."""
        out: dict[str, Any] = {}
        resets: dict[str, int] = {"killed": 0, "restored": 0, "removed": 0}
        parsed = self._parse(req)
        variants = list(req["variants"])
        if req.get("batched"):
            return self._batched_runs(req, variants, parsed)
        upcoming = self._prepare(variants[0].get("mutant")) if variants else None
        for index, variant in enumerate(variants):
            for key, value in self.reset().items():
                resets[key] += value
            prepared = upcoming
            started, pid, read_fd = self._spawn(
                lambda channel: self._child(req, prepared, channel, traced=False, parsed=parsed))
            if index + 1 < len(variants):
                upcoming = self._prepare(variants[index + 1].get("mutant"))
            out[variant["token"]] = _collect(pid, read_fd, started, float(req["limit"]))
        for key, value in self.reset().items():
            resets[key] += value
        return {"runs": out, "resets": resets}

    def _batched_runs(self, req: RunsRequest, variants: list[Any], parsed: Any) -> RunsReply:
        """Several variants per child: each swapped in, run, and swapped back out.

        The test keeps whatever it learned in earlier runs of the same child, so such a run
        never stands alone: it re-observes what a pristine child already showed (a
        reproduction). A run that times out or takes its child down ends that child; the
        next variant starts a new one from a reset workspace."""
        out: dict[str, Any] = {}
        resets: dict[str, int] = {"killed": 0, "restored": 0, "removed": 0}
        prepared = [self._prepare(v.get("mutant")) for v in variants]
        limit = float(req["limit"])
        first = 0
        while first < len(variants):
            for key, value in self.reset().items():
                resets[key] += value
            started, pid, read_fd = self._spawn(functools.partial(self._batch_child, req, prepared[first:], parsed))
            claims = _collect_batch(pid, read_fd, started, limit, len(variants) - first)
            for offset, claim in enumerate(claims):
                out[variants[first + offset]["token"]] = claim
            first += len(claims)
        for key, value in self.reset().items():
            resets[key] += value
        return {"runs": out, "resets": resets}

    def _batch_child(self, req: dict[str, Any], prepared: list[Any], parsed: Any,
                     channel: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """In the forked child: the variants in turn, one ``run`` record each."""
        from behave.model_core import FileLocation
        from behave.runner_util import parse_features

        screen = _install_screens(self, channel)
        feature = os.path.join(self.root, req["feature"])
        lines = [int(x) for x in req["lines"]]
        runner, load_error, loaded = None, None, False
        for number, swaps in enumerate(prepared):
            if isinstance(swaps, str):
                channel({"k": "run", "n": number, "swap_error": swaps})
                continue
            originals = [(func, func.__code__) for func, _ in swaps or []]
            if swaps:
                bw.apply_swaps(swaps)
            if not loaded:  # the first variant is in before any prediction code exists
                runner, load_error = self._load_test()
                loaded = True
                if runner is not None and not load_error:
                    bw._stop_at_first_failure(runner)
            if load_error or runner is None:
                screen.finish()
                channel({"k": "run", "n": number, "exit": "ok", "load_error": load_error or "no runner"})
            else:
                # behave keeps a run's statuses in the model: back to new-born before each
                # later run (reparsing costs more than a run here, with the audit hook on)
                if parsed is None:
                    parsed = parse_features([FileLocation(feature, line) for line in lines])
                    bw._prune_to_selected(parsed, set(lines))
                elif number:
                    for parsed_feature in parsed:
                        parsed_feature.reset()
                recorder = bw.RunRecorder(self.root, self.features_dir, self.production_dirs, self.hook_files,
                                          trace=False, prod_root=self.root)
                recorder.end_at_decision = False  # after_all runs: the next run starts from its teardown
                result = recorder.run(runner, feature, lines, parsed)
                for name in recorder.runner_patched:
                    channel({"k": "finding", "kind": "runner_internals", "screen": "runtime", "path": "", "line": 0,
                             "evidence": f"{name} replaced during the run"})
                screen.finish()
                channel({"k": "run", "n": number, **bw._summarize_run(result, len(lines))})
            bw.apply_swaps(originals)
        return {"batch": len(prepared)}

    def _prepare(self, mutant: dict[str, Any] | None) -> list[tuple[Any, Any]] | str | None:
        """The variant's swaps, compiled once per distinct variant (a reproduction batch and
        the null variants reuse them): None for no swap, an error text for a fallback."""
        if mutant is None:
            return None
        key = json.dumps(mutant, sort_keys=True)
        if key not in self.prepared:
            if self.swapper is None:
                self.swapper = bw.CodeSwapper(self.root, self.functions)
            try:
                self.prepared[key] = self.swapper.prepare(mutant)
            except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
                self.prepared[key] = f"cannot prepare the variant: {type(exc).__name__}: {exc}"
        return self.prepared[key]

    def _fork(self, body: Callable[[Callable[[dict[str, Any]], None]], dict[str, Any]],
              timeout: float) -> dict[str, Any]:
        started, pid, read_fd = self._spawn(body)
        return _collect(pid, read_fd, started, timeout)

    def _spawn(self, body: Callable[[Callable[[dict[str, Any]], None]], dict[str, Any]]) -> tuple[float, int, int]:
        read_fd, write_fd = os.pipe()
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                _become_run_child(write_fd, self.limits)
                channel = _channel(write_fd)
                channel({"k": "result", **body(channel)})
            except BaseException as exc:  # noqa: BLE001 - the child must never return into the worker loop
                code = 1
                try:
                    _channel(write_fd)({"k": "error", "error": f"{type(exc).__name__}: {exc}"[:2000]})
                except BaseException:  # noqa: BLE001
                    pass
            # End of the claim now: the worker reads EOF without waiting for this process's
            # memory to be torn down (exit unmaps before it closes descriptors)
            try:
                os.close(write_fd)
            except OSError:
                pass
            os._exit(code)
        os.close(write_fd)
        return started, pid, read_fd

    def _child(self, req: dict[str, Any], prepared: list[tuple[Any, Any]] | str | None,
               channel: Callable[[dict[str, Any]], None], traced: bool, parsed: Any = None) -> dict[str, Any]:
        """In the forked child. Everything up to loading the step modules is ours."""
        screen = _install_screens(self, channel)
        if isinstance(prepared, str):
            return {"swap_error": prepared}
        if prepared is not None:
            bw.apply_swaps(prepared)
        del prepared
        runner, load_error = self._load_test()  # prediction code runs from here
        if load_error or runner is None:
            screen.finish()
            return {"exit": "ok", "load_error": load_error or "no runner"}
        feature = os.path.join(self.root, req["feature"])
        lines = [int(x) for x in req["lines"]]
        if parsed is None:
            from behave.model_core import FileLocation
            from behave.runner_util import parse_features
            parsed = parse_features([FileLocation(feature, line) for line in lines])
            bw._prune_to_selected(parsed, set(lines))
        if traced:
            from behave.step_registry import registry
            unbound = sorted({f"{step.line}: {step.name}" for feat in parsed for scenario in feat.walk_scenarios()
                              if scenario.line in lines for step in scenario.all_steps
                              if registry.find_match(step) is None})
        else:
            bw._stop_at_first_failure(runner)
        recorder = bw.RunRecorder(self.root, self.features_dir, self.production_dirs, self.hook_files,
                                  trace=traced, prod_root=self.root)
        result = recorder.run(runner, feature, lines, parsed)
        for name in recorder.runner_patched:
            channel({"k": "finding", "kind": "runner_internals", "screen": "runtime", "path": "", "line": 0,
                     "evidence": f"{name} replaced during the run"})
        screen.finish()
        if traced:
            result["unbound"] = unbound
            return result
        return bw._summarize_run(result, len(lines))

    def _load_test(self) -> tuple[Any, str | None]:
        """Load hooks and step modules into the prepared runner (in the run child)."""
        runner = self.template
        if self.template_error or runner is None:
            return runner, self.template_error
        try:
            runner.load_hooks()
            runner.load_step_definitions()
        except BaseException as exc:  # noqa: BLE001 - a broken test is data
            return runner, f"{type(exc).__name__}: {exc}\n" + traceback.format_exc(limit=8)
        return runner, None

    # ------------------------------------------------------------------ loop
    def ops(self) -> dict[str, Any]:
        """Only these: the build's ops would load the test into this worker."""
        return {"init": self.init, "trace": self.trace, "runs": self.runs}


# ----------------------------------------------------------------------------- the child
def _undumpable() -> None:
    if forking._LIBC is not None:
        forking._LIBC.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def _become_run_child(write_fd: int, limits: dict[str, int]) -> None:
    """Own process group, dies with the worker, nothing inherited but its result pipe."""
    os.setpgid(0, 0)
    libc = forking._LIBC
    if libc is not None:
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    keep = sorted({0, 1, 2, write_fd})
    previous = 2
    for fd in keep[3:]:
        os.closerange(previous + 1, fd)
        previous = fd
    os.closerange(previous + 1, 1 << 16)
    import gc
    gc.disable()  # the collector would only touch (and copy) the worker's pages
    for name, value in limits.items():
        which = {"fsize": resource.RLIMIT_FSIZE, "as": resource.RLIMIT_AS, "nofile": resource.RLIMIT_NOFILE,
                 "core": resource.RLIMIT_CORE}.get(name)
        if which is not None:
            resource.setrlimit(which, (value, value))


def _channel(fd: int) -> Callable[[dict[str, Any]], None]:
    """Write one JSON line to this run's pipe at once (bound now: later patches of os or
    json by the test do not change what already went out)."""
    write, dumps = os.write, json.dumps

    def emit(record: dict[str, Any]) -> None:
        data = (dumps(record, default=str) + "\n").encode("utf-8", "replace")
        view = memoryview(data)
        while view:
            view = view[write(fd, view):]
    return emit


def _prepare_screens(worker: EvalWorker) -> Any:
    """Build the runtime audit hook and take the runner-integrity snapshot in the worker,
    once (bench.guard): each run child only activates them, before the test loads."""
    from bench.guard import audit_hook, integrity

    prepared = audit_hook.prepare(prediction_files=set(worker.prediction_files),
                                  production_dirs=worker.production_dirs, workspace_root=worker.root,
                                  writable_dirs=[worker.root, *worker.scratch, "/dev/null"], block=True)
    return prepared, integrity.snapshot()


def _install_screens(worker: EvalWorker, channel: Callable[[dict[str, Any]], None]) -> Any:
    """In the run child: findings go straight to this run's channel from now on."""
    from bench.guard import integrity

    prepared, snap = worker.screens
    prepared.activate(lambda finding: channel({"k": "finding", **finding}))

    class _Screen:
        def finish(self) -> None:
            for change in worker.import_changes:
                channel({"k": "finding", "kind": "runner_internals", "screen": "runtime", "path": "",
                         "line": 0, "evidence": f"production changed the runner while it imported: {change}"})
            for change in integrity.changes(snap):
                channel({"k": "finding", "kind": "runner_internals", "screen": "runtime", "path": "",
                         "line": 0, "evidence": change})
    return _Screen()


def _collect(pid: int, read_fd: int, started: float, timeout: float) -> RunClaim:
    """The run's claim: every JSON line the child wrote (findings stream in as they happen)."""
    raw, timed_out = read_until_closed(read_fd, started + timeout, MAX_CLAIM_BYTES)
    size = len(raw)
    os.close(read_fd)
    kill_group(pid)  # a killed process runs no more code: its teardown need not be waited for
    status = 0
    if b'{"k": "result"' not in raw:  # nothing reported: the exit status says why
        try:
            _, status = os.waitpid(pid, 0)  # the exit status says why nothing was reported
        except ChildProcessError:
            status = 0
    else:
        forking.defer_reap(pid)
    forking.reap_finished()
    elapsed = round(time.monotonic() - started, 4)
    findings, results, errors, garbled = [], [], [], 0
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        record = _channel_record(line)
        if record is None:
            garbled += 1
        elif record.get("k") == "finding":
            findings.append(record)
        elif record.get("k") == "result":
            results.append(record)
        elif record.get("k") == "error":
            errors.append(str(record.get("error", ""))[:2000])
        else:
            garbled += 1
    out: dict[str, Any] = {"elapsed": elapsed, "findings": findings, "garbled": garbled,
                           "results": len(results), "oversized": size > MAX_CLAIM_BYTES}
    if timed_out:
        out["exit"] = "timeout"
    elif results:
        out["exit"] = "ok"
        out["result"] = results[-1]
    else:
        out["exit"] = "crashed"
        out["error"] = errors[0] if errors else forking.describe_wait_status(status)
    return out


def _channel_record(line: bytes) -> dict[str, Any] | None:
    """One line of a run's channel as a JSON object; None when it is not one (garbled)."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _collect_batch(pid: int, read_fd: int, started: float, limit: float, count: int) -> list[RunClaim]:
    """The claims of a batch child's runs, in order, as its ``run`` records arrive: each run
    has ``limit`` seconds from the end of the one before. A run that overruns, or a child
    that ends before reporting one, ends the batch there (that run's claim says why)."""
    claims: list[RunClaim] = []
    buffer = b""
    findings: list[dict[str, Any]] = []
    garbled = 0
    size = 0
    run_started = started
    ended = timed_out = False
    errors: list[str] = []
    oversized = False
    while len(claims) < count and not ended:
        remaining = run_started + limit - time.monotonic()
        if remaining <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([read_fd], [], [], min(remaining, 1.0))
        if not ready:
            continue
        chunk = os.read(read_fd, 1 << 20)
        if not chunk:
            ended = True
        buffer += chunk
        size += len(chunk)  # since the last run record: a run that floods its channel ends the batch
        if size > MAX_CLAIM_BYTES:
            ended = oversized = True
        *complete, buffer = buffer.split(b"\n")
        for line in complete:
            if not line.strip():
                continue
            record = _channel_record(line)
            if record is None:
                garbled += 1
            elif record.get("k") == "finding":
                findings.append(record)
            elif record.get("k") == "run" and record.get("n") == len(claims) and len(claims) < count:
                now = time.monotonic()
                result = {k: v for k, v in record.items() if k not in ("k", "n")}
                claims.append({"elapsed": round(now - run_started, 4), "findings": findings, "garbled": garbled,
                               "results": 1, "oversized": False, "exit": "ok", "result": result})
                findings, garbled, run_started, size = [], 0, now, len(buffer)
            elif record.get("k") == "error":
                errors.append(str(record.get("error", ""))[:2000])
            elif record.get("k") != "result":  # the child's closing record
                garbled += 1
    os.close(read_fd)
    kill_group(pid)
    if len(claims) < count:  # the run in progress ended the batch
        status = 0
        if not timed_out:
            try:
                _, status = os.waitpid(pid, 0)
            except ChildProcessError:
                status = 0
        else:
            forking.defer_reap(pid)
        claim: RunClaim = {"elapsed": round(time.monotonic() - run_started, 4), "findings": findings,
                           "garbled": garbled, "results": 0, "oversized": oversized,
                           "exit": "timeout" if timed_out else "crashed"}
        if not timed_out:
            claim["error"] = errors[0] if errors else forking.describe_wait_status(status)
        claims.append(claim)
    else:
        forking.defer_reap(pid)
    forking.reap_finished()
    return claims


def _kill_strays() -> int:
    """Kill every process of the sandbox's pid namespace but init, this worker and its
    ancestors (a test that double-forked a daemon out of its group is still in here)."""
    forking.reap_finished()
    mine = os.getpid()
    keep = {1, mine, os.getppid(), *forking.unreaped()}  # run children already killed, not yet reaped
    killed = 0
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return 0
    for pid in pids:
        if pid in keep:
            continue
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except (ProcessLookupError, PermissionError):
            continue
    for _ in range(killed):
        try:
            os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
    return killed


def _install_compile_cache(root: str, features_dir: str) -> dict[str, bytes]:
    """behave execs hook and step files from source on every load; compile each once in
    the worker (same file name behave would give it) and reuse the code while the file's
    bytes are unchanged."""
    from behave import runner as behave_runner
    from behave import runner_util

    cache: dict[str, tuple[bytes, Any]] = {}
    for dirpath, _, filenames in os.walk(features_dir):
        for name in filenames:
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                try:
                    with open(path, "rb") as fh:
                        data = fh.read()
                    cache[path] = (data, compile(data, os.path.relpath(path, root), "exec", dont_inherit=True))
                except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
                    continue  # behave's own exec reports it in the run

    original = runner_util.exec_file

    def exec_file(filename, globals_=None, locals_=None):
        entry = cache.get(os.path.abspath(filename))
        if entry is None or os.getcwd() != root:
            return original(filename, globals_, locals_)
        with open(filename, "rb") as fh:
            if fh.read() != entry[0]:
                return original(filename, globals_, locals_)
        if globals_ is None:
            globals_ = {}
        if locals_ is None:
            locals_ = globals_
        locals_["__file__"] = filename
        exec(entry[1], globals_, locals_)  # noqa: S102 - exactly what behave's exec_file does

    runner_util.exec_file = exec_file
    behave_runner.exec_file = exec_file
    return {path: data for path, (data, _) in cache.items()}


STEP_DECORATORS = {"given", "when", "then", "step"}
MATCHER_SWITCHES = {"use_step_matcher", "step_matcher"}


def _warm_step_patterns(sources: dict[str, bytes]) -> int:
    """Compile the regular expressions of the step patterns once, here.

    Every run child registers the test's step definitions anew, and behave compiles each
    pattern's regular expression as it registers it (a third of loading a test). The
    patterns are string literals in the step files: read them with ``ast`` (nothing of
    the test runs), build the same matcher behave would (default type registry) and
    compile it, which leaves the expression in ``re``'s cache that every child inherits.
    A pattern we read wrongly only misses the cache."""
    import ast

    from behave import matchers

    classes = matchers.get_matcher_factory().step_matcher_class_mapping
    warmed = 0
    for data in sources.values():
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        calls = sorted((node for node in ast.walk(tree) if isinstance(node, ast.Call) and node.args
                        and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)),
                       key=lambda node: (node.lineno, node.col_offset))
        current = matchers.get_matcher_factory().default_matcher
        for call in calls:
            name = call.func.id if isinstance(call.func, ast.Name) else \
                call.func.attr if isinstance(call.func, ast.Attribute) else ""
            text = call.args[0].value
            if name in MATCHER_SWITCHES:
                current = classes.get(text, current)
            elif name.lower() in STEP_DECORATORS and warmed < 400:  # re's cache holds 512
                try:
                    current(_no_step, text).compile()
                    warmed += 1
                except Exception:  # noqa: BLE001 - behave reports a bad pattern in the run
                    continue
    return warmed


def _warm_linecache(root: str, sources: dict[str, bytes]) -> None:
    """Read, once, the source lines that behave's ``Context`` asks for on every attribute
    a step sets (it keeps the setter's stack): the step files under the names their code
    carries, behave's own modules and ours. ``linecache.checkcache`` still rereads a file
    that changed on disk, so a child never sees stale lines."""
    import linecache

    names = [os.path.relpath(path, root) for path in sources]
    for module in list(sys.modules.values()):
        name = getattr(module, "__name__", "") or ""
        file = getattr(module, "__file__", None)
        if file and file.endswith(".py") and name.split(".")[0] in ("behave", "bench", "traceback", "runpy"):
            names.append(file)
    for name in names:
        try:
            linecache.getlines(name)
        except Exception:  # noqa: BLE001 - a line we could not read is read in the run
            continue


def _no_step(context: Any, *args: Any, **kwargs: Any) -> None:
    """Stands in for a step function while a pattern is compiled (never called)."""


def _clear(directory: str, keep: list[str]) -> None:
    """Empty ``directory`` except the way down to ``keep`` (the workspace may be mounted
    inside the sandbox's /tmp: clearing must never descend into it)."""
    if not os.path.isdir(directory) or os.path.islink(directory):
        return
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if any(k == path for k in keep):
            continue
        if any(k.startswith(path + os.sep) for k in keep):
            _clear(path, keep)
        else:
            _remove(path)


def _remove(path: str) -> None:
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
            if os.path.lexists(path):  # a read-only dir the test made: open it up first
                for dirpath, dirnames, _ in os.walk(path):
                    for d in dirnames:
                        os.chmod(os.path.join(dirpath, d), 0o700)
                os.chmod(path, 0o700)
                shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except OSError:
        pass


def main() -> None:
    load_libc()
    proto_out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # project output goes to stderr, never into the protocol
    sys.stdout = sys.stderr
    EvalWorker(proto_out).serve(sys.stdin)


if __name__ == "__main__":
    main()
