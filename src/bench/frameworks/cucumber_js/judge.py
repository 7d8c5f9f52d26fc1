"""Judge a cucumber-js prediction: every run a new ``node`` process in its own sandbox.

Node has no fork, so there is no warm executor to defend here: each verdict run is the
reference kind (a fresh process, the mutant written to disk, a tree of its own, read-only,
no network but its own loopback, uid nobody). The trust rules of the behave evaluator that
still apply, apply:

- the verdict process never runs prediction code; it holds the kill list and sends runs
  in a shuffled order with null runs (the original code) mixed in;
- the instance's ground-truth step definitions are absent from the sandbox's tree (their
  statements removed from the step files), the prediction's files laid over it;
- a static screen of the prediction (``screen``) refuses what could observe or forge a
  verdict (processes, the module system, the inspector, source text of functions,
  production files read as data) → ``tampering``;
- a sample of the claimed kills (5) is reproduced in a second fresh run, every null run must pass;
  any disagreement → ``unstable``.

The clean run also records V8's coverage (``v8coverage``): its production lines give
``coverage_jaccard`` and, with the names the prediction's bound step definitions call, its
API calls (``interfaces``), measured as the builder measured the ground truth's.
"""

from __future__ import annotations

import hashlib
import random
import re
import shutil
import subprocess
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from bench.frameworks.cucumber_js.declarations import CallReader, ProductionDeclarations
from bench.frameworks.cucumber_js.interfaces import scenario_calls
from bench.frameworks.cucumber_js.language import production_files
from bench.frameworks.cucumber_js.runner import CucumberRun, compile_cache_for, link_tree, run_cucumber, step_files
from bench.frameworks.cucumber_js.testside import SOURCE_SUFFIXES, STEP_TYPES, TestSideJs
from bench.frameworks.cucumber_js.v8coverage import coverage_env, load_coverage, read_coverage
from bench.model import GoldTest, Instance, Outcome, Prediction
from bench.mutation.executor import load_manifest
from bench.verdict import Judgement

REPRODUCED_KILLS = 5  # claimed kills replayed in a second fresh process

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
    """The stage ladder of SPEC §3 from one clean run's messages."""
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


class ProjectJudge:
    """Judges one project's instances of a cucumber-js dataset."""

    traces = True  # judgements carry the prediction's coverage and API calls

    def __init__(self, framework: Any, dataset_root: Path, project: Any, gold: dict[str, GoldTest],
                 options: Any) -> None:
        self.framework = framework
        self.snapshot = dataset_root / project.snapshot
        self.project = project
        self.options = options
        self.modules = ensure_node_modules(self.snapshot)
        self.step_files = step_files(self.snapshot)
        self.side = TestSideJs(self.snapshot, self.step_files)
        self.step_dirs = sorted({str(PurePosixPath(f).parent) for f in self.step_files})
        self.infrastructure = set(self.side.infrastructure)
        self.mutants = load_manifest(dataset_root, project.name) if options.mutants else {}
        self.production = production_files(self.snapshot, list(project.production))
        self.declarations = ProductionDeclarations(self.snapshot, self.production)
        self.rng = random.Random(options.seed)
        self._cache_dir = Path(tempfile.mkdtemp(prefix="req2test-cjs-cache-"))
        trusted = self._cache_dir / "tree"  # the snapshot as built: no prediction code runs here
        link_tree(self.snapshot, trusted, None, self.modules)
        self.cache = compile_cache_for(self._cache_dir / "tsx", options.isolation)
        # one trusted dry run fills the compile cache and measures what loading the suite
        # covers (the builder took that out of the ground truth's coverage too)
        self.load_lines = load_coverage(trusted, project.features_dir, self._cache_dir / "load", set(self.production),
                                        timeout=options.timeout, isolation=options.isolation,
                                        compile_cache=self.cache).lines

    # ------------------------------------------------------------------ submission check
    def rejections(self, files: dict[str, str]) -> list[str]:
        from bench.evaluate import TestArea

        reasons = TestArea._layout_rejections(files)
        for raw in files:
            path = PurePosixPath(raw)
            if any(ord(c) < 32 or ord(c) == 127 for c in raw) or path.is_absolute() or ".." in path.parts \
                    or raw != path.as_posix() or raw in ("", "."):
                reasons.append(f"{raw!r}: not a plain relative path")
            elif not any(str(path).startswith(d + "/") for d in self.step_dirs):
                kind = "runner configuration" if path.name in self.framework.runner_config_files else \
                    "outside the test area"
                reasons.append(f"{raw}: {kind} (test code goes under {', '.join(d + '/' for d in self.step_dirs)})")
            elif path.suffix not in SOURCE_SUFFIXES:
                reasons.append(f"{raw}: not a JavaScript/TypeScript file")
            elif raw in self.infrastructure:
                reasons.append(f"{raw}: shared test infrastructure (hooks, registration) cannot be replaced")
        return reasons

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
        selection = [f"{req.feature_file}:{line}" for line in req.run_lines]
        runs = 0

        def run(mutant_id: str | None, tag: str, coverage: bool = False) -> CucumberRun:
            nonlocal runs
            runs += 1
            tree = base
            if mutant_id is not None:
                tree = tmp / f"tree-{tag}"
                link_tree(base, tree, self.framework.language.mutated_files(self.snapshot, self.mutants[mutant_id]),
                          self.modules)
            out = tmp / f"out-{tag}"
            result = run_cucumber(tree, selection, out, timeout=self.options.timeout,
                                  isolation=self.options.isolation, compile_cache=self.cache,
                                  env=coverage_env(out) if coverage else None)
            if tree is not base:
                shutil.rmtree(tree, ignore_errors=True)
            return result

        # the clean run is also the traced one (null runs without coverage must pass too, so a
        # test that behaves differently when traced is unstable, never rewarded)
        clean = run(None, "clean", coverage=True)
        outcome, detail = classify(clean, len(req.run_lines))
        if outcome is not Outcome.passed:
            return Judgement(outcome, detail, fresh_runs=runs, trace={})
        trace = self._trace(clean, base, tmp / "out-clean" / "v8")
        if not self.options.mutants or not gold.kills:
            return Judgement(Outcome.passed, fresh_runs=runs, trace=trace, confirmation={"clean_runs": 1})
        # the ground-truth kills and two null runs (the original code), shuffled
        plan: list[str | None] = [*gold.kills, None, None]
        self.rng.shuffle(plan)
        claimed: set[str] = set()
        timeouts = 0
        for n, mutant_id in enumerate(plan):
            result = run(mutant_id, f"m{n}")
            if mutant_id is None:
                if not result.passed:
                    return Judgement(Outcome.unstable, "a null run (the original code) did not pass",
                                     evidence=["null run failed: " + classify(result, len(req.run_lines))[1]],
                                     fresh_runs=runs)
            elif not result.passed:
                if not result.timed_out and not result.report.steps_ran():
                    # the runner never reached a step: not a detection, and not the test's doing
                    return Judgement(Outcome.infrastructure_failure,
                                     f"no step ran under mutant {mutant_id}: {_last_error(result.stderr)[:200]}",
                                     fresh_runs=runs)
                claimed.add(mutant_id)
                timeouts += int(result.timed_out)
        # a sample of the kills must reproduce in a new process (every run is already a fresh
        # process with nothing carried over, so a reproduction guards against flaky verdicts,
        # not against a warm executor; behave replays 5 kills fresh the same way)
        order = sorted(claimed)
        self.rng.shuffle(order)
        order = order[:REPRODUCED_KILLS]
        for n, mutant_id in enumerate(order):
            if run(mutant_id, f"r{n}").passed:
                return Judgement(Outcome.unstable, f"the kill of {mutant_id} did not reproduce",
                                 evidence=[f"kill of {mutant_id} did not reproduce"], fresh_runs=runs)
        return Judgement(Outcome.passed, kills=claimed, timeouts=timeouts, fresh_runs=runs, trace=trace,
                         confirmation={"clean_runs": 1, "null_runs": 2, "reproduced_kills": len(order)})

    def _trace(self, clean: CucumberRun, base: Path, coverage_dir: Path) -> dict[str, Any]:
        """The prediction's covered production lines and API calls, from its clean run."""
        coverage = read_coverage(coverage_dir, base, set(self.production)).without(self.load_lines)
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
        return {"coverage": coverage.as_lists(), "api": calls.api_keys}
