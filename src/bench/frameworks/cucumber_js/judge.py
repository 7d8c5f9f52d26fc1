"""Judge a cucumber-js prediction: every run a new ``node`` process in its own sandbox.

Node has no fork, so there is no warm executor to defend here: each verdict run is the
reference kind (a fresh process, the mutant written to disk, a tree of its own, read-only,
no network but its own loopback, uid nobody). The trust rules of the behave evaluator that
still apply, apply:

- the verdict process never runs prediction code; it holds the kill list and sends runs
  in a shuffled order with equivalent variants mixed in;
- the instance's ground-truth step definitions are absent from the sandbox's tree (their
  statements removed from the step files), the prediction's files laid over it;
- a static screen of the prediction (``screen``) refuses what could observe or forge a
  verdict (processes, the module system, the inspector, source text of functions,
  production files read as data) → ``tampering``;
- kills that cannot be forged by construction, not by more screening (issue 25):

  * production is a behaviour-preserving rewrite new to each judge session (``diversify``:
    fresh declarations in every function body, no line moved), so a test comparing
    production's text (``fn.toString()``, the file, a hash) with a copy of the shipped source
    fails its own clean run; every run's tree gets every production file written afresh
    with one timestamp, so the clean run's files look like a mutant run's on disk;
  * where null runs stood, equivalent variants (``equivalents``: real mutation sites of
    Stryker's operator families rewritten without a change of behaviour) go through exactly
    the path of a mutant; a test that fails one again beside passing unchanged production
    tells code apart, not behaviour → ``tampering``; one that does not reproduce → ``unstable``;
  * every verdict run is guarded (``runner.guard_args``): Node's permission model refuses
    child processes, worker threads, addons, WASI, the inspector, reads outside the run's
    tree, packages and scratch, and writes outside the scratch; the message report comes
    through a pipe read while the run goes, so it cannot be rewritten after the fact, and a
    stream the formatter could not have written (``messages.report_problems``) → ``tampering``;
- a sample of the claimed kills (5) is reproduced in a second fresh run; any disagreement
  → ``unstable``.

The traced run records V8's coverage (``v8coverage``): its production lines give
``coverage_jaccard`` and, with the names the prediction's bound step definitions call, its
API calls (``interfaces``), measured as the builder measured the ground truth's. Node 20
writes no coverage under the permission model, so the traced run is the one run that is not
guarded; it decides nothing but the trace and which kills wait, and must pass like the guarded
clean run. When more than 8 kills lie on lines it never ran, 8 of them run with the others first
and the rest only if one of those fails (``schemata_stage.kill_plan``): an empty test costs a
dozen processes, not one per kill, and a test that behaves differently unguarded only loses kills.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import shutil
import subprocess
import tempfile
import threading
import weakref
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from bench import stopping
from bench.builder.schemata_stage import kill_plan
from bench.cores import cores
from bench.frameworks.cucumber_js import runner
from bench.frameworks.cucumber_js.declarations import CallReader, ProductionDeclarations
from bench.frameworks.cucumber_js.diversify import DiversifiedFile, apply_mutant, diversify_source
from bench.frameworks.cucumber_js.equivalents import equivalent_variants
from bench.frameworks.cucumber_js.failure import clean_run_failure
from bench.frameworks.cucumber_js.framework import fresh_verdict
from bench.frameworks.cucumber_js.interfaces import scenario_calls
from bench.frameworks.cucumber_js.language import production_files
from bench.frameworks.cucumber_js.runner import (
    CucumberRun,
    compile_cache_for,
    link_tree,
    precompile,
    run_cucumber,
    step_files,
    transpiler_modules,
)
from bench.frameworks.cucumber_js.testside import SOURCE_SUFFIXES, STEP_TYPES, TestSideJs
from bench.frameworks.cucumber_js.v8coverage import RunCoverage, coverage_env, load_coverage, read_coverage
from bench.judging import (
    EQUIVALENT_PREFIX,
    RETRY_BUDGET,
    Judge,
    JudgeContext,
    Judgement,
    RetryDecision,
    RunTrace,
    RunVerdict,
    UnsupportedByFramework,
    decide_retries,
    equivalent_count,
    retry_plan,
    spread_among,
)
from bench.model import GoldTest, Instance, Mutant, Outcome, Prediction
from bench.mutation.diversify import session_seed
from bench.mutation.executor import load_manifest
from bench.mutation.positions import PositionMap

if TYPE_CHECKING:
    from bench.frameworks.cucumber_js.framework import CucumberJsFramework

REPRODUCED_KILLS = 5  # claimed kills replayed in a second fresh process
SESSION_MTIME = 1_700_000_000  # every production file of every run's tree carries this mtime

# what a test has no business doing, and what it would need to tell a mutant from the original
SCREEN = [
    (re.compile(r"child_process|worker_threads|node:cluster|\bcluster\b\s*['\"]"), "starts processes or threads"),
    (re.compile(r"""require\s*\(\s*['"](?:node:)?(?:vm|inspector|v8|module|repl|trace_events|async_hooks)['"]"""
                r"""|from\s+['"](?:node:)?(?:vm|inspector|v8|module|repl|trace_events|async_hooks)['"]"""),
     "loads a runtime-introspection module"),
    (re.compile(r"process\s*\.\s*(?:binding|_linkedBinding|dlopen|env|kill|exit|abort|on|once|chdir|"
                r"mainModule|stdout\s*\.\s*write|_rawDebug)"), "reaches into the process"),
    (re.compile(r"require\s*\.\s*(?:cache|extensions|resolve\s*\.\s*paths)|module\s*\.\s*(?:constructor|parent|"
                r"children)|Module\s*\._"), "reaches into the module system"),
    # (``fn.toString()`` cannot be told from ``buffer.toString()`` statically; the prototype
    # and the constructor can)
    (re.compile(r"Function\s*\.\s*prototype|toSource|\bFunction\s*\(|\.constructor\s*\("),
     "reads or builds function source text"),
    (re.compile(r"__stryker|globalThis\s*\[|global\s*\[|Reflect\s*\.\s*(?:ownKeys|getOwnPropertyDescriptor)\s*\("
                r"\s*(?:global|globalThis)"), "inspects the global object"),
    (re.compile(r"\beval\s*\("), "evaluates built code"),
]


# names a step definition has no use for, that reach what could observe a verdict
FORBIDDEN_NAMES = {"process": "reaches into the process", "globalThis": "inspects the global object",
                   "global": "inspects the global object", "Reflect": "uses reflection on objects",
                   "eval": "evaluates built code", "Function": "builds functions from text",
                   "WebAssembly": "loads WebAssembly", "__stryker__": "inspects the global object"}
FORBIDDEN_MODULES = {"child_process", "worker_threads", "cluster", "vm", "inspector", "v8", "module", "repl",
                     "trace_events", "async_hooks", "perf_hooks", "wasi", "dgram", "net", "tls", "http2"}


def _syntax_findings(path: str, text: str) -> list[str]:
    """What the syntax tree shows (names outside strings and comments, computed requires)."""
    from bench.frameworks.cucumber_js.testside import js_parser

    tree = js_parser(path.endswith((".ts", ".cts", ".mts")))
    root = tree.parse(text.encode("utf-8")).root_node
    findings: list[str] = []
    stack = [root]
    while stack:
        node = stack.pop()
        kind = node.type
        if kind in ("identifier", "shorthand_property_identifier") and node.text.decode() in FORBIDDEN_NAMES:
            findings.append(f"{path}:{node.start_point[0] + 1}: {FORBIDDEN_NAMES[node.text.decode()]} "
                            f"({node.text.decode()!r})")
        elif kind == "property_identifier" and node.text.decode() in ("constructor", "__proto__", "caller",
                                                                       "callee", "mainModule"):
            # ``x instanceof y.constructor`` is ordinary; calling it, or reaching through it
            # (``f.constructor.constructor('return process')``), is how code escapes a screen
            member = node.parent
            beyond = member.parent if member is not None else None
            through = beyond is not None and (beyond.type == "call_expression" or (
                beyond.type in ("member_expression", "subscript_expression")
                and beyond.child_by_field_name("object") == member))
            if node.text.decode() != "constructor" or through:
                findings.append(f"{path}:{node.start_point[0] + 1}: reaches into object internals "
                                f"({node.text.decode()!r})")
        elif kind == "call_expression":
            function = node.child_by_field_name("function")
            arguments = node.child_by_field_name("arguments")
            name = function.text.decode() if function is not None else ""
            if name in ("require", "import") or (function is not None and function.type == "import"):
                first = arguments.named_children[0] if arguments is not None and arguments.named_children else None
                if first is None or first.type != "string":
                    findings.append(f"{path}:{node.start_point[0] + 1}: loads a module by a computed name")
                elif first.text.decode()[1:-1].removeprefix("node:").split("/")[0] in FORBIDDEN_MODULES:
                    findings.append(f"{path}:{node.start_point[0] + 1}: loads a runtime-introspection or "
                                    f"process module ({first.text.decode()})")
        elif kind == "import_statement":
            source = node.child_by_field_name("source")
            if source is not None and source.text.decode()[1:-1].removeprefix("node:").split("/")[0] in FORBIDDEN_MODULES:
                findings.append(f"{path}:{node.start_point[0] + 1}: loads a runtime-introspection or process "
                                f"module ({source.text.decode()})")
        stack.extend(node.children)
    return findings


def screen(files: dict[str, str], production: list[str]) -> list[str]:
    """Findings of the static screen (empty: nothing found)."""
    findings = []
    for path, text in sorted(files.items()):
        findings += _syntax_findings(path, text)
    production_refs = re.compile("|".join(re.escape(p.rstrip("/") + "/") for p in production) or r"$^")
    for path, text in sorted(files.items()):
        for pattern, why in SCREEN:
            match = pattern.search(text)
            if match:
                findings.append(f"{path}: {why} ({match.group(0)[:60]!r})")
        for match in re.finditer(r"(?:readFile|readFileSync|createReadStream|openSync|open)\s*\(([^)]{0,200})",
                                 text):
            if production_refs.search(match.group(1)) or "__dirname" in match.group(1) and ".." in match.group(1):
                findings.append(f"{path}: reads a file near the production code as data ({match.group(0)[:60]!r})")
    return findings


def ensure_node_modules(snapshot: Path, cache: Path | None = None) -> Path:
    """node_modules for a dataset's snapshot: ``npm ci --ignore-scripts`` from its lockfile,
    once per lockfile (a dataset never ships 400 MB of packages)."""
    lock = snapshot / "package-lock.json"
    if not lock.is_file():
        raise RuntimeError(f"{snapshot} has no package-lock.json to install its packages from")
    digest = hashlib.sha256(lock.read_bytes() + (snapshot / "package.json").read_bytes()).hexdigest()[:16]
    root = (cache or Path.home() / ".cache" / "req2test" / "node_modules") / digest
    modules = root / "node_modules"
    if (root / ".complete").is_file():
        return modules
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    shutil.copy2(snapshot / "package.json", root / "package.json")
    shutil.copy2(lock, root / "package-lock.json")
    proc = subprocess.run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=root,
                          capture_output=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError("npm ci failed: " + proc.stderr.decode(errors="replace").strip().splitlines()[-1:][0])
    (root / ".complete").write_text("ok\n")
    return modules


def classify(run: CucumberRun, expected_rows: int) -> tuple[Outcome, str]:
    """The stage ladder (docs/evaluation.md#outcomes-the-first-failing-stage) from one clean run's messages."""
    report = run.report
    if run.timed_out:
        return Outcome.execution_failure, "timeout"
    if not report.pickles:
        if "Error" in run.stderr or report.run_hook_failures:
            return Outcome.build_failure, (report.run_hook_failures or [_last_error(run.stderr)])[0][:300]
        return Outcome.execution_failure, "no scenario ran"
    for pickle in report.pickles:
        for step in pickle.steps:
            if step.status in ("UNDEFINED", "AMBIGUOUS", "PENDING"):
                return Outcome.binding_failure, f"{step.status.lower()} step: {step.text}"
    for pickle in report.pickles:
        for step in pickle.steps:
            if step.status == "FAILED":
                assertion = "AssertionError" in step.exception_type or step.message.startswith("AssertionError")
                outcome = Outcome.assertion_failure if assertion else Outcome.execution_failure
                return outcome, f"{step.text}: {step.message.strip()[:240]}"
        if pickle.hook_failures:
            return Outcome.execution_failure, f"hook: {pickle.hook_failures[0][:240]}"
    if len(report.pickles) != expected_rows or not run.passed:
        return Outcome.execution_failure, f"ran {len(report.pickles)} of {expected_rows} rows, exit {run.exit_code}"
    return Outcome.passed, ""


def _last_error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if "Error" in line]
    return lines[0].strip() if lines else stderr.strip()[-200:]


class CucumberJsJudge(Judge):
    """Judges one project's instances of a cucumber-js dataset."""

    traces = True  # judgements carry the prediction's coverage and API calls
    failures_scored_by_gold = True

    def __init__(self, framework: CucumberJsFramework, context: JudgeContext) -> None:
        if context.snapshot is not None:
            raise UnsupportedByFramework("judging on a predicted production (the reverse task) is not implemented "
                                         "for cucumber-js projects")
        dataset_root, project, options = context.dataset_root, context.project, context.options
        self.framework = framework
        self.snapshot = dataset_root / project.snapshot
        self.project = project
        self.options = options
        area = framework.test_area(self.snapshot, project.features_dir)
        self.area = replace(area, authored_dirs=(context.authored_dir,)) if context.authored_dir else area
        self.modules = ensure_node_modules(self.snapshot)
        self.step_files = step_files(self.snapshot)
        self.side = TestSideJs(self.snapshot, self.step_files)
        self.step_dirs = sorted({str(PurePosixPath(f).parent) for f in self.step_files})
        self.infrastructure = set(self.side.infrastructure)
        self.mutants = load_manifest(dataset_root, project.name) if options.mutants else {}
        self.production = production_files(self.snapshot, list(project.production))
        self.declarations = ProductionDeclarations(self.snapshot, self.production)
        self.rng = random.Random(options.seed)
        # this session's production: a behaviour-preserving rewrite with a seed of its own
        self.shipped: dict[str, str] = {}
        for rel in self.production:
            try:
                self.shipped[rel] = (self.snapshot / rel).read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                continue  # left as shipped (a mutant of it applies to the shipped text)
        self.diversified = getattr(options, "diversify", True)
        seed = session_seed(options.seed) if self.diversified else 0
        self.rewritten: dict[str, DiversifiedFile] = {
            rel: diversify_source(rel, text, seed) if self.diversified else DiversifiedFile(text, PositionMap())
            for rel, text in self.shipped.items()}
        self.equivalents: dict[str, list[Mutant]] = {
            rel: [m.model_copy(update={"id": EQUIVALENT_PREFIX + m.id}) for m in equivalent_variants(rel, text)]
            for rel, text in self.shipped.items()}
        self._cache_dir = Path(tempfile.mkdtemp(prefix="req2test-cjs-cache-"))
        weakref.finalize(self, shutil.rmtree, self._cache_dir, True)
        trusted = self._cache_dir / "tree"  # the snapshot as judged: no prediction code runs here
        link_tree(self.snapshot, trusted, self.production_files(None), self.modules)
        # the transpiler the profile registers (tsx): a guarded run cannot start its compiler,
        # so a trusted process compiles ahead what the runs will load (``precompile``)
        self.require = transpiler_modules(self.snapshot)
        self.cache = compile_cache_for(self._cache_dir / "tsx", options.isolation)
        if self.cache is None and self.require:  # without bubblewrap: tsx's own directory name
            self.cache = self._cache_dir / "tsx" / f"tsx-{os.getuid()}"
        # one trusted dry run fills the compile cache and measures what loading the suite
        # covers (the builder took that out of the ground truth's coverage too)
        self.load_lines = load_coverage(trusted, project.features_dir, self._cache_dir / "load", set(self.production),
                                        timeout=options.timeout, isolation=options.isolation,
                                        compile_cache=self.cache).lines
        self.guard, self.guard_label = self._guard_check(trusted, project.features_dir)
        self.slots = self._run_slots()

    def _run_slots(self) -> int:
        """How many verdict runs of one judgement go at once: ``run_slots``, or the cores this
        judgement's share of the evaluation's workers leaves (2 cores, 1 worker: 2). Each run is
        still a fresh process in a sandbox of its own; only their wall time overlaps. One at a
        time where the runs could not share the compile cache: it is keyed by the tree's path,
        which only bubblewrap makes the same (``/project``) for trees at different host paths."""
        wanted = self.options.run_slots or max(1, cores() // max(1, self.options.workers))
        if wanted > 1 and self.require and self.options.isolation != "bwrap":
            return 1
        return max(1, wanted)

    def _guard_check(self, trusted: Path, features_dir: str) -> tuple[bool, str]:
        """Whether the suite loads under Node's permission model (a dry run of the trusted
        tree, guarded): a project whose transpiler needs a worker thread, a child process or
        a native addon at run time (ESM loader hooks, esbuild-register, swc) cannot, and is
        judged unguarded — its judgements say so (``confirmation.guard``)."""
        if getattr(self.options, "guard", True) is False:
            return False, "off"
        if self.require:
            precompile(trusted, {rel: d.text for rel, d in self.rewritten.items()}.items(), self.require,
                       self._cache_dir / "precompile", isolation=self.options.isolation, compile_cache=self.cache,
                       timeout=self.options.timeout)
        # trusted runs of the snapshot as built (ground truth included, no prediction code), like
        # load_coverage's: through the runner module, not this module's name for verdict runs
        # ... and this one fills the compile cache as a run without coverage loads the suite: tsx
        # keys its cache by the transform's options too, and the coverage run's (source maps on
        # for NODE_V8_COVERAGE) serve no other run, so every file outside the precompiled
        # production (steps, the rest of the package) was missing for the guarded runs, which
        # cannot start the compiler: js-algorand-sdk never loaded guarded
        plain = runner.run_cucumber(trusted, [features_dir], self._cache_dir / "dry-plain",
                                    timeout=self.options.timeout, isolation=self.options.isolation,
                                    extra_args=["--dry-run"], compile_cache=self.cache,
                                    writable_cache=self.cache is not None)
        guarded = runner.run_cucumber(trusted, [features_dir], self._cache_dir / "dry-guarded",
                                      timeout=self.options.timeout, isolation=self.options.isolation,
                                      extra_args=["--dry-run"], compile_cache=self.cache, guard=True)
        if guarded.exit_code == plain.exit_code and len(guarded.report.pickles) == len(plain.report.pickles) \
                and not guarded.problems:
            return True, "node-permission"
        return False, "off: the suite does not load under Node's permission model (" + \
            (_last_error(guarded.stderr) or "; ".join(guarded.problems))[:200] + ")"

    def production_files(self, variant: Mutant | None) -> dict[str, bytes]:
        """Every production file of a run's tree, this session's rewrite, ``variant`` (a mutant
        or an equivalent variant, positions of the shipped file) applied to its file."""
        files = {rel: d.text.encode("utf-8") for rel, d in self.rewritten.items()}
        if variant is not None:
            if variant.file in self.rewritten:
                rewritten = self.rewritten[variant.file]
                files[variant.file] = apply_mutant(self.shipped[variant.file], rewritten.text, rewritten.positions,
                                                   variant).encode("utf-8")
            else:
                files.update(self.framework.language.mutated_files(self.snapshot, variant))
        return files

    # ------------------------------------------------------------------ submission check
    def rejections(self, files: dict[str, str]) -> list[str]:
        return self.area.rejections(files)

    def unusable(self, files: dict[str, str]) -> str | None:
        return None if any(content.strip() for content in files.values()) else "no usable test code (no non-empty file)"

    # ------------------------------------------------------------------ verdict
    def judge(self, inst: Instance, prediction: Prediction, gold: GoldTest) -> Judgement:
        findings = screen(prediction.files, list(self.project.production))
        if findings:
            return Judgement(Outcome.tampering, findings[0], evidence=findings)
        with tempfile.TemporaryDirectory(prefix="req2test-cjs-") as tmp:
            return self._judge(inst, prediction, gold, Path(tmp))

    def _judge(self, inst: Instance, prediction: Prediction, gold: GoldTest, tmp: Path) -> Judgement:
        gold_sites = {(d.file, d.line) for d in gold.step_definitions}
        removed = [s for s in self.side.sites if (s.file, s.line) in gold_sites]
        replaced = self.side.files_without(removed)
        replaced.update({path: text.encode("utf-8") for path, text in prediction.files.items()})
        base = tmp / "base"
        link_tree(self.snapshot, base, replaced, self.modules)
        req = inst.requirement
        expected = len(req.run_lines)
        selection = [f"{req.feature_file}:{line}" for line in req.run_lines]
        counted = {"runs": 0}
        count_lock = threading.Lock()
        traced_coverage: list[RunCoverage] = []
        # one tree per run slot; under bubblewrap every tree is mounted at /project, so the compile
        # cache (keyed by path) serves them all, and with one slot it is always the same path
        free_trees: list[Path] = [tmp / f"run{slot}" for slot in range(self.slots)]
        trees_lock = threading.Lock()

        def materialise(tree: Path, variant: Mutant | None) -> None:
            """The run's tree: every production file written afresh (the variant's applied),
            all under one timestamp, so a clean run's files look like a mutant run's."""
            shutil.rmtree(tree, ignore_errors=True)
            files = self.production_files(variant)
            link_tree(base, tree, files, self.modules)
            for rel in files:
                os.utime(tree / rel, (SESSION_MTIME, SESSION_MTIME))

        def run(variant: Mutant | None, tag: str, *, traced: bool = False, budget: float = 1.0,
                fail_fast: bool = False) -> CucumberRun:
            """One run of the instance's rows: guarded unless traced. ``fail_fast`` (every run but
            the clean and the traced one): the first failing row decides, the rest are skipped."""
            stopping.check()
            with count_lock:
                counted["runs"] += 1
            with trees_lock:
                tree = free_trees.pop()
            try:
                materialise(tree, variant)
                out = tmp / f"out-{tag}"
                result = run_cucumber(tree, selection, out, timeout=self.options.timeout * budget,
                                      isolation=self.options.isolation, compile_cache=self.cache,
                                      env=coverage_env(out) if traced else None, guard=self.guard and not traced,
                                      fail_fast=fail_fast)
                if traced:  # its coverage is read against its tree's files
                    traced_coverage.append(read_coverage(out / "v8", tree, set(self.production)))
                shutil.rmtree(out, ignore_errors=True)
                return result
            finally:
                shutil.rmtree(tree, ignore_errors=True)
                with trees_lock:
                    free_trees.append(tree)

        def run_all(jobs: list[tuple[Mutant | None, str]], **kwargs: Any) -> Iterator[tuple[Mutant | None, CucumberRun]]:
            """``run`` of each job, ``self.slots`` at a time, yielded in the jobs' order; a caller
            that stops early (a forged report) leaves the queued jobs unrun."""
            if self.slots == 1:
                for variant, tag in jobs:
                    yield variant, run(variant, tag, **kwargs)
                return
            with stopping.StoppablePool(max_workers=self.slots) as pool:
                futures = [pool.submit(run, variant, tag, **kwargs) for variant, tag in jobs]
                try:
                    for (variant, _), future in zip(jobs, futures, strict=True):
                        yield variant, stopping.result(future)
                finally:
                    for future in futures:
                        future.cancel()

        def compile_ahead(variants: list[Mutant | None], tag: str) -> None:
            """What the guarded runs will load, compiled into the cache by a trusted process
            (a guarded run cannot start the transpiler's helpers): the prediction's files,
            production, each variant's file."""
            if not self.guard or not self.require:
                return
            tree = free_trees[0]
            materialise(tree, None)
            items = [(rel, text) for rel, text in prediction.files.items() if rel.endswith(SOURCE_SUFFIXES)]
            items += [(rel, d.text) for rel, d in self.rewritten.items()]
            for variant in variants:
                if variant is not None and variant.file in self.rewritten:
                    items.append((variant.file, self.production_files(variant)[variant.file].decode("utf-8")))
            precompile(tree, items, self.require, tmp / f"precompile-{tag}", isolation=self.options.isolation,
                       compile_cache=self.cache, timeout=self.options.timeout)
            shutil.rmtree(tree, ignore_errors=True)

        def forged(result: CucumberRun, what: str) -> Judgement | None:
            if not result.problems:
                return None
            return Judgement(Outcome.tampering, f"the message report of {what} was written outside cucumber-js's "
                             f"formatter: {result.problems[0]}",
                             evidence=[f"{what}: {p}" for p in result.problems], fresh_runs=counted["runs"])

        # the clean run decides the outcome, guarded like every verdict run; the traced run
        # (coverage needs Node without its permission model) must pass too
        compile_ahead([], "clean")
        # with two slots the traced run goes beside the clean one (wasted only when the clean run fails)
        traced_early: CucumberRun | None = None
        if self.slots == 1:
            clean = run(None, "clean")
        else:
            with stopping.StoppablePool(max_workers=2) as pool:
                clean_future = pool.submit(run, None, "clean")
                traced_future = pool.submit(run, None, "traced", traced=True)
                clean, traced_early = stopping.result(clean_future), stopping.result(traced_future)
        if (verdict := forged(clean, "the clean run")) is not None:
            return verdict
        outcome, detail = classify(clean, expected)
        if outcome is not Outcome.passed:  # the clean run's own failure (no mutant ran yet)
            return Judgement(outcome, detail, fresh_runs=counted["runs"],
                             failure=clean_run_failure(clean, [*(str(t) for t in free_trees),
                                                               runner.PROJECT_MOUNT, str(tmp)]))
        traced = traced_early if traced_early is not None else run(None, "traced", traced=True)
        if not traced.passed:
            return Judgement(Outcome.unstable, "the traced run did not pass while the guarded clean run did",
                             evidence=["traced run failed: " + classify(traced, expected)[1]],
                             fresh_runs=counted["runs"])
        coverage = traced_coverage[0]
        trace = self._trace(traced, base, coverage.without(self.load_lines))
        confirmation: dict[str, Any] = {"clean_runs": 1, "traced_runs": 1, "guard": self.guard_label,
                                        "diversified": self.diversified}
        if not self.options.mutants or not gold.kills:
            return Judgement(Outcome.passed, fresh_runs=counted["runs"], trace=trace, confirmation=confirmation)
        # the ground-truth kills the traced run reached (and a sample of the others: kill_plan)
        # and the equivalent variants (one early, one late), shuffled
        schedule = kill_plan([m for m in gold.kills if m in self.mutants], {0: coverage.lines}, self.mutants, self.rng)
        kills = [self.mutants[m] for m in schedule.now]
        variants = self._variants(kills, coverage)
        plan: list[Mutant | None] = list(kills)
        self.rng.shuffle(plan)
        spread_among(plan, variants, self.rng)
        compile_ahead(plan, "plan")
        claimed: set[str] = set()
        timeouts = 0
        failed_variants: list[tuple[Mutant | None, CucumberRun]] = []
        stepless: list[Mutant] = []

        def judged(batch: list[Mutant | None], tag: str) -> Judgement | None:
            nonlocal timeouts
            for n, (variant, result) in enumerate(run_all([(v, f"{tag}{n}") for n, v in enumerate(batch)],
                                                          fail_fast=True)):
                if (verdict := forged(result, f"verdict run {n + 1}")) is not None:
                    return verdict
                if variant is None or variant.id.startswith(EQUIVALENT_PREFIX):
                    if not result.passed:
                        failed_variants.append((variant, result))
                elif not result.passed:
                    if not result.timed_out and not result.report.steps_ran():
                        stepless.append(variant)
                        continue
                    claimed.add(variant.id)
                    timeouts += int(result.timed_out)
            return None

        if (verdict := judged(plan, "m")) is not None:
            return verdict
        held = schedule.rest(claimed)
        if held:
            batch: list[Mutant | None] = [self.mutants[m] for m in held]
            compile_ahead(batch, "held")
            if (verdict := judged(batch, "h")) is not None:
                return verdict
        confirmation.update({"clean_runs": 1 + len(variants), "equivalent_variants": len(variants),
                             **schedule.record(held)})
        if failed_variants:
            verdict = self._failed_variants(failed_variants, run_all, expected)
            if verdict is not None:
                verdict.fresh_runs = counted["runs"]
                return verdict
            confirmation["clean_reruns"] = len(failed_variants)
        if stepless:
            # the runner never reached a step: not a detection, and not the test's doing —
            # if it shows again beside a passing run of unchanged production
            mutant = stepless[0]
            (_, again), (_, control) = run_all([(mutant, "s0"), (None, "s1")])
            for result, what in ((again, "a confirmation run"), (control, "a control run")):
                if (verdict := forged(result, what)) is not None:
                    return verdict
            if not again.passed and not again.timed_out and not again.report.steps_ran() and control.passed:
                return Judgement(Outcome.infrastructure_failure,
                                 f"no step ran under mutant {mutant.id}: {_last_error(again.stderr)[:200]}",
                                 fresh_runs=counted["runs"])
            then = "passed" if again.passed else "failed"
            production = "passed" if control.passed else "failed"
            return Judgement(Outcome.unstable, f"no step ran under mutant {mutant.id}, and the confirmation disagreed",
                             evidence=[f"mutant {mutant.id}: no step ran, then {then}; unchanged production {production}"],
                             fresh_runs=counted["runs"])
        # a sample of the kills must reproduce in a new process (every run is already a fresh
        # process with nothing carried over, so a reproduction guards against flaky verdicts,
        # not against a warm executor; behave replays 5 kills fresh the same way)
        order = sorted(claimed)
        self.rng.shuffle(order)
        order = order[:REPRODUCED_KILLS]
        replays = run_all([(self.mutants[mutant_id], f"r{n}") for n, mutant_id in enumerate(order)], fail_fast=True)
        for n, (mutant_id, (_, again)) in enumerate(zip(order, replays)):
            if (verdict := forged(again, f"reproduction {n + 1}")) is not None:
                return verdict
            if again.passed:
                return Judgement(Outcome.unstable, f"the kill of {mutant_id} did not reproduce",
                                 evidence=[f"kill of {mutant_id} did not reproduce"], fresh_runs=counted["runs"])
        confirmation["reproduced_kills"] = len(order)
        return Judgement(Outcome.passed, kills=claimed, timeouts=timeouts, fresh_runs=counted["runs"], trace=trace,
                         confirmation=confirmation)

    def _variants(self, kills: list[Mutant], coverage: RunCoverage) -> list[Mutant | None]:
        """Equivalent variants for one judgement (``equivalent_count``): half of them, where
        there are such sites, in the functions of the ground-truth kills on lines the clean run
        covered, the rest on other covered lines, then anywhere; None (unchanged production,
        through the same path) only where production has no site at all."""
        wanted = equivalent_count(len(kills))
        candidates = [e for rel in sorted(self.equivalents) for e in self.equivalents[rel]]
        if not candidates:
            return [None] * wanted
        scopes: set[tuple[str, int]] = set()
        for mutant in kills:
            around = [d for d in self.declarations.by_file.get(mutant.file, [])
                      if d.line <= mutant.line <= d.body_end]
            first, last = (min(d.line for d in around), max(d.body_end for d in around)) if around else \
                (mutant.line, mutant.end_line)
            scopes.update((mutant.file, line) for line in range(first, last + 1))
        covered = [e for e in candidates if coverage.lines.get(e.file, set()).intersection(range(e.line, e.end_line + 1))]
        near = [e for e in covered if (e.file, e.line) in scopes]
        chosen: list[Mutant | None] = []
        for pool, share in ((near, (wanted + 1) // 2), (covered, wanted), (candidates, wanted)):
            fresh = [e for e in pool if e not in chosen]
            take = min(len(fresh), share - len(chosen))
            if take > 0:
                chosen += self.rng.sample(fresh, take)
        while len(chosen) < wanted:
            chosen.append(self.rng.choice(candidates))
        return chosen

    def _failed_variants(self, failed: list[tuple[Mutant | None, CucumberRun]], run_all: Any,
                         expected: int) -> Judgement | None:
        """Decide failed equivalent variants before concluding anything, as every judge does
        (``bench.judging.retry_plan``): each (at most 3) runs twice more with a budget four times
        as large, beside four runs of unchanged production, shuffled.

        - everything passes now: the failure was the machine's (a timeout under load), not the
          test's: None, the batch stands;
        - a variant fails every retry, not by a timeout, while unchanged production passes: the
          test tells code apart, not behaviour → tampering;
        - anything else: a flaky test → unstable."""
        plan = retry_plan(len(failed), self.rng)
        jobs = [(failed[index][0] if index is not None else None, f"e{n}") for n, index in enumerate(plan)]
        verdicts: list[RunVerdict] = []
        retried: dict[int, CucumberRun] = {}
        for index, (_, result) in zip(plan, run_all(jobs, budget=RETRY_BUDGET, fail_fast=True), strict=True):
            if result.problems:
                return Judgement(Outcome.tampering, "the message report of a confirmation run was written outside "
                                 f"cucumber-js's formatter: {result.problems[0]}", evidence=list(result.problems))
            verdicts.append(fresh_verdict(result, result.elapsed).verdict)
            if index is not None and not result.passed:
                retried[index] = result
        decision, again = decide_retries(plan, verdicts, len(failed), any(not r.timed_out for _, r in failed))
        if decision is RetryDecision.tampering:
            return Judgement(Outcome.tampering,
                             "the test failed a behaviour-preserving variant of production on every retry while "
                             "unchanged production passed: it tells code apart, not behaviour",
                             evidence=[_variant_evidence(failed[i][0], retried[i], expected) for i in again])
        if decision is RetryDecision.transient:
            return None
        return Judgement(Outcome.unstable, "an equivalent variant (behaviour unchanged) failed, and not reproducibly",
                         evidence=[_variant_evidence(v, r, expected) for v, r in failed])

    def _trace(self, clean: CucumberRun, base: Path, coverage: RunCoverage) -> RunTrace:
        """The prediction's covered production lines and API calls, from its traced run."""
        side = TestSideJs(base, step_files(base))
        sites = []
        for pickle in clean.report.pickles:
            for step in pickle.steps:
                for definition_id in step.definition_ids[:1]:
                    info = clean.report.definitions.get(definition_id)
                    site = side.site_for(info.pattern, step.step_type, info.uri, info.line) if info else None
                    if site is not None:
                        sites.append((site, STEP_TYPES.get(step.step_type, "given")))
        calls = scenario_calls(self.declarations, self.declarations.ran(coverage.functions), CallReader(base), sites)
        return RunTrace(coverage=coverage.as_lists(), api=[str(k) for k in calls.api_keys])


def _variant_evidence(variant: Mutant | None, result: CucumberRun, expected: int) -> str:
    where = "unchanged production" if variant is None else \
        f"{variant.file}:{variant.line} ({variant.operator}: {variant.original!r} -> {variant.replacement!r})"
    return f"equivalent variant {where} failed: {classify(result, expected)[1] or 'not passed'}"
