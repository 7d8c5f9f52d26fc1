"""Best-of-n selection: choose one of n generated tests for the same requirement.

- ``oracle``: the evaluator's verdicts (kill-complete, then pass, then mutant recall). An
  upper bound for reporting only: it needs the evaluator, which a harness does not have.
- ``static``: evidence in the code alone, no execution — steps bound, target interfaces
  exercised, fixtures of the view used, how strongly the Then steps check, hedging.
- ``consensus``: the medoid — the candidate most like the others in the production names it
  calls, the literal values it expects and the fixtures it uses (independent generations
  that agree are more likely right than the odd one out).
- ``judge``: a model reads the requirement, the target interfaces and the candidates and
  names the best; falls back to ``static`` when it cannot answer.

Every selector is deterministic given its inputs (judge: given the model's reply); ties
go to the lower candidate index. The step analysis here (which step definition each
effective step binds to, statically, with behave's own matchers) is shared with
``harness.strategies.variants``.
"""

from __future__ import annotations

import ast
import builtins
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel

from bench.frameworks.registry import get_framework
from bench.model import Instance, InstanceResult, Outcome, Prediction, Step
from bench.registry import Registry, UnknownName

SELECTORS = ("oracle", "static", "judge", "consensus")  # the built-in ones; ``REGISTRY.available()`` has all
ENTRY_POINT_GROUP = "req2test.selectors"

EMPTY_SCORE = -1000.0  # no test code at all
UNPARSABLE_SCORE = -900.0  # test code the runner could not even import


class Candidate(BaseModel):
    """One generated test implementation of the instance."""

    index: int  # 1-based candidate number
    prediction: Prediction


@dataclass
class SelectionContext:
    instance: Instance
    features_dir: str = "features"
    view_root: Path | None = None  # materialized view (project-root layout): fixtures and shared helpers
    model: Any = None  # harness.llm.Model, for the judge
    results: dict[int, InstanceResult] | None = None  # evaluator verdicts by candidate index, oracle only
    framework: str = "behave"  # the project's test framework: how the judge's prompt names things


class Selection(BaseModel):
    selector: str
    chosen: int
    scores: dict[int, float]
    reason: str


# Chooses one of the candidates (sorted by index, indices unique, at least one).
Selector = Callable[[list[Candidate], SelectionContext], Selection]


class UnknownSelector(UnknownName, ValueError):
    """No selector of that name; a ValueError too, as every other refusal of ``select``."""


# A third party adds one as ``[project.entry-points."req2test.selectors"] mine = "pkg.mod:select_mine"``.
REGISTRY: Registry[Selector] = Registry(
    "selector", None,
    {"oracle": "harness.strategies.selectors:_oracle", "static": "harness.strategies.selectors:_static",
     "judge": "harness.strategies.selectors:_judge", "consensus": "harness.strategies.selectors:_consensus"},
    ENTRY_POINT_GROUP, error=UnknownSelector)


def select(name: str, candidates: list[Candidate], context: SelectionContext) -> Selection:
    selector = REGISTRY.get(name)
    if not candidates:
        raise ValueError("no candidates to select from")
    indices = [c.index for c in candidates]
    if len(set(indices)) != len(indices):
        raise ValueError(f"candidate indices are not unique: {sorted(indices)}")
    return selector(sorted(candidates, key=lambda c: c.index), context)


def _best(scores: dict[int, float]) -> int:
    """Highest score; ties to the lower index."""
    return min(scores, key=lambda i: (-scores[i], i))


# =========================================================================== oracle
def _oracle(candidates: list[Candidate], context: SelectionContext) -> Selection:
    if context.results is None:
        raise ValueError("the oracle selector needs the evaluator's results for every candidate")
    scores: dict[int, float] = {}
    for cand in candidates:
        result = context.results.get(cand.index)
        if result is None:
            scores[cand.index] = -1.0
            continue
        # kill-complete dominates pass, which dominates recall (recall is in [0, 1])
        scores[cand.index] = (4.0 * result.kill_complete + 2.0 * (result.outcome == Outcome.passed)
                              + (result.mutant_recall or 0.0))
    chosen = _best(scores)
    result = context.results.get(chosen)
    verdict = "no result" if result is None else (
        f"{result.outcome.value}, kill_complete={result.kill_complete}, mutant_recall={result.mutant_recall}")
    missing = sorted(c.index for c in candidates if c.index not in context.results)
    note = f"; no result for candidate(s) {missing}" if missing else ""
    return Selection(selector="oracle", chosen=chosen, scores=scores,
                     reason=f"oracle: candidate {chosen} ({verdict}){note}")


# =========================================================================== step analysis
_STEP_WORDS = {"given": ("given",), "when": ("when",), "then": ("then",), "step": ("given", "when", "then")}


@dataclass(eq=False)
class StepDef:
    """One module-level step-definition function of a candidate."""

    file: str
    ordinal: int  # position among the module's top-level functions: the key rewriting tools use
    line: int  # line of its first step decorator (bench.testimpl's key)
    name: str
    node: ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(eq=False)
class Analysis:
    """What a candidate's code says about the instance's effective steps."""

    files: dict[str, ast.Module] = field(default_factory=dict)
    empty: bool = False
    unparsable: list[str] = field(default_factory=list)
    step_defs: list[StepDef] = field(default_factory=list)
    helpers: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = field(default_factory=dict)
    bindings: list[tuple[Step, list[StepDef]]] = field(default_factory=list)  # [] when a step is unbound

    @property
    def valid(self) -> bool:
        return not self.empty and not self.unparsable

    def bound(self, step_type: str) -> list[StepDef]:
        out: list[StepDef] = []
        for step, defs in self.bindings:
            if step.type == step_type:
                out.extend(d for d in defs if d not in out)
        return out

    def only(self, step_type: str) -> list[StepDef]:
        """Definitions bound under ``step_type`` and under no other type (as bench.testimpl.then_step_targets)."""
        others = [d for t in ("given", "when", "then") if t != step_type for d in self.bound(t)]
        return [d for d in self.bound(step_type) if d not in others]

    def reachable(self, defs: list[StepDef]) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        """The step functions plus the candidate's own helper functions they call, transitively."""
        out: list[ast.AST] = []
        seen: set[int] = set()
        todo: list[ast.AST] = [d.node for d in defs]
        while todo:
            node = todo.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            out.append(node)
            for sub in ast.walk(node):
                if isinstance(sub, ast.Call):
                    name = _call_name(sub)
                    todo.extend(self.helpers.get(name or "", []))
        return out  # type: ignore[return-value]


def analyze(files: dict[str, str], instance: Instance, features_dir: str) -> Analysis:
    """Parse the candidate's Python files and bind every effective step as behave would (first match)."""
    result = Analysis()
    base = PurePosixPath(features_dir)
    code = {p: t for p, t in sorted(files.items()) if p.endswith(".py") and base in PurePosixPath(p).parents}
    if not code or not any(t.strip() for t in code.values()):
        result.empty = True
        return result
    for path, text in code.items():
        try:
            result.files[path] = ast.parse(text)
        except (SyntaxError, ValueError):
            result.unparsable.append(path)
    if result.unparsable:
        return result
    registrations: list[tuple[str, Any, StepDef]] = []
    for path, tree in result.files.items():
        style = "parse"  # behave resets the matcher to the default before each step module
        ordinal = -1
        for stmt in tree.body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) \
                    and (_call_name(stmt.value) or "").endswith("use_step_matcher") and stmt.value.args \
                    and isinstance(stmt.value.args[0], ast.Constant):
                style = str(stmt.value.args[0].value)
            if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            ordinal += 1
            decorators = [_step_decorator(d) for d in stmt.decorator_list]
            found = [(d, dec) for d, dec in zip(decorators, stmt.decorator_list, strict=True) if d is not None]
            if not found:
                result.helpers.setdefault(stmt.name, []).append(stmt)
                continue
            sdef = StepDef(file=path, ordinal=ordinal, line=found[0][1].lineno, name=stmt.name, node=stmt)
            result.step_defs.append(sdef)
            # stacked decorators apply bottom-up, so the lowest registers first
            for (word, pattern), _ in reversed(found):
                matcher = _matcher(style, pattern)
                for kind in _STEP_WORDS[word]:
                    registrations.append((kind, matcher, sdef))
    for step in instance.requirement.effective_steps:
        defs: list[StepDef] = []
        for text in _expanded_texts(step, instance):
            match = next((sdef for kind, matcher, sdef in registrations if kind == step.type and matcher(text)), None)
            if match is None:
                defs = []
                break
            if match not in defs:
                defs.append(match)
        result.bindings.append((step, defs))
    return result


def _expanded_texts(step: Step, instance: Instance) -> list[str]:
    """The step's text for every Examples row (outline), or the text itself."""
    tables = instance.requirement.examples
    if step.background or not tables or "<" not in step.text:
        return [step.text]
    texts: list[str] = []
    for table in tables:
        for row in table.rows:
            text = step.text
            for name, value in zip(table.header, row, strict=False):
                text = text.replace(f"<{name}>", value)
            if text not in texts:
                texts.append(text)
    return texts or [step.text]


def _step_decorator(node: ast.expr) -> tuple[str, str] | None:
    if not isinstance(node, ast.Call) or not node.args:
        return None
    target = node.func
    word = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ""
    arg = node.args[0]
    if word.lower() not in _STEP_WORDS or not isinstance(arg, ast.Constant) or not isinstance(arg.value, str):
        return None
    return word.lower(), arg.value


def _matcher(style: str, pattern: str):
    from behave.matchers import CFParseMatcher, ParseMatcher, RegexMatcher

    cls = {"re": RegexMatcher, "cfparse": CFParseMatcher}.get(style, ParseMatcher)
    try:
        native = cls(_noop, pattern)
        native.match("")  # compiles lazily in some behave versions: fail here, not per step
    except Exception:  # noqa: BLE001 - custom types we cannot load statically: approximate below
        native = None
    if native is not None:
        def match(text: str) -> bool:
            try:
                return native.match(text) is not None
            except Exception:  # noqa: BLE001 - a converter that needs the project's registered types
                return _approximate(style, pattern, text)
        return match
    return lambda text: _approximate(style, pattern, text)


def _approximate(style: str, pattern: str, text: str) -> bool:
    if style == "re":
        try:
            return re.fullmatch(pattern, text) is not None
        except re.error:
            return False
    parts = re.split(r"\{[^{}]*\}", pattern)
    regex = "(.+?)".join(re.escape(p) for p in parts)
    return re.fullmatch(regex, text) is not None


def _noop(context: Any) -> None:  # behave matchers want a step function
    return None


def _call_name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _walk_functions(nodes: list[ast.FunctionDef | ast.AsyncFunctionDef]) -> list[ast.AST]:
    seen: set[int] = set()
    out: list[ast.AST] = []
    for fn in nodes:
        for stmt in fn.body:
            for sub in ast.walk(stmt):
                if id(sub) not in seen:
                    seen.add(id(sub))
                    out.append(sub)
    return out


def _body_is_trivial(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for stmt in fn.body:
        if isinstance(stmt, ast.Pass):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # docstring or ...
        return False
    return True


# =========================================================================== view evidence
@dataclass(frozen=True)
class ViewFacts:
    fixture_names: frozenset[str]  # file names, stems and directory names of the view's test data
    modules: frozenset[str]  # importable test-side modules the view keeps (shared helpers)


@lru_cache(maxsize=16)
def view_facts(view_root: str | None, features_dir: str) -> ViewFacts:
    if view_root is None:
        return ViewFacts(frozenset(), frozenset())
    base = Path(view_root) / features_dir
    names: set[str] = set()
    modules: set[str] = set()
    if base.is_dir():
        for path in sorted(base.rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts:
                continue
            if path.suffix == ".py":
                if path.stem not in ("environment", "__init__"):
                    modules.add(path.stem)
                continue
            if path.suffix == ".feature":
                continue
            names.update({path.name, path.stem})
            rel = path.parent.relative_to(base)
            names.update(p for p in rel.parts if p not in (".", ""))
    return ViewFacts(frozenset(n for n in names if len(n) > 2), frozenset(modules))


def _string_literals(nodes: list[ast.AST]) -> list[str]:
    return [n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _references_fixture(literal: str, facts: ViewFacts) -> str | None:
    if not facts.fixture_names:
        return None
    candidates = {literal, PurePosixPath(literal).name, PurePosixPath(literal).stem}
    candidates |= set(PurePosixPath(literal).parts)
    for name in sorted(candidates):
        if name in facts.fixture_names:
            return name
    return None


def _fixtures_used(analysis: Analysis, defs: list[StepDef], facts: ViewFacts) -> set[str]:
    nodes = _walk_functions(analysis.reachable(defs))
    used = {ref for lit in _string_literals(nodes) if (ref := _references_fixture(lit, facts))}
    # module-level constants the functions read (e.g. a helper's ``FIXTURES = Path(...) / "test_files"``)
    read = {n.id for n in nodes if isinstance(n, ast.Name)}
    for tree in analysis.files.values():
        for stmt in tree.body:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if any(isinstance(t, ast.Name) and t.id in read for t in targets):
                    used |= {ref for lit in _string_literals(list(ast.walk(stmt)))
                             if (ref := _references_fixture(lit, facts))}
    return used


def _view_modules_imported(analysis: Analysis, facts: ViewFacts) -> set[str]:
    own = {PurePosixPath(p).stem for p in analysis.files}
    imported: set[str] = set()
    for tree in analysis.files.values():
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                leaf = name.split(".")[-1]
                if leaf in facts.modules and leaf not in own:
                    imported.add(leaf)
    return imported


# =========================================================================== static
_DUNDER_SYNTAX: dict[str, type[ast.AST]] = {"__getitem__": ast.Subscript, "__setitem__": ast.Subscript,
                                             "__delitem__": ast.Delete, "__iter__": ast.For,
                                             "__contains__": ast.Compare, "__eq__": ast.Compare}
_WEAK_CALLS = {"isinstance": 0.5, "issubclass": 0.5, "hasattr": 0.4, "callable": 0.4, "all": 0.6, "any": 0.5}


def interface_names(instance: Instance) -> list[str]:
    """The names a test would write to use each target interface (class name for a constructor)."""
    names: list[str] = []
    for group in instance.target_interfaces:
        for decl in group.declarations:
            parts = decl.qualname.split(".")
            name = parts[-1]
            if (name == "__init__" or decl.kind == "constructor") and len(parts) > 1:
                name = parts[-2] if name == "__init__" else name
            if name not in names:
                names.append(name)
    return names


def _used_names(nodes: list[ast.AST]) -> set[str]:
    used: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Attribute):
            used.add(node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len":
            used.add("__len__")
        for dunder, syntax in _DUNDER_SYNTAX.items():
            if isinstance(node, syntax):
                used.add(dunder)
    return used


def _is_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _is_literal(node.operand)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_is_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _is_literal(k) and _is_literal(v) for k, v in zip(node.keys, node.values,
                                                                                      strict=True))
    return False


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def check_strength(test: ast.expr) -> float:
    """How much an asserted expression pins down: 1 = a concrete value or whole object, 0 = nothing."""
    if isinstance(test, ast.Constant):
        return 0.0
    if isinstance(test, ast.BoolOp):
        values = [check_strength(v) for v in test.values]
        if isinstance(test.op, ast.Or):
            if any(isinstance(v, ast.Constant) and v.value for v in test.values):
                return 0.0  # ``x or True``
            return min(values)
        return max(values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return 0.3
    if isinstance(test, ast.Compare):
        operands = [test.left, *test.comparators]
        if any(isinstance(op, (ast.IsNot, ast.NotEq)) for op in test.ops) and any(_is_none(o) for o in operands):
            return 0.25  # ``x is not None``
        if all(isinstance(op, (ast.Gt, ast.GtE, ast.NotEq)) for op in test.ops) \
                and any(isinstance(o, ast.Constant) and o.value == 0 for o in operands):
            return 0.4  # ``len(x) > 0``
        return 1.0
    if isinstance(test, ast.Call):
        return _WEAK_CALLS.get(_call_name(test) or "", 0.3)
    return 0.3  # truthiness of a name, attribute or subscript


def _guarded(nodes: list[ast.AST]) -> set[int]:
    """Nodes inside a ``try`` whose handler catches a failed assert and does not re-raise: they cannot fail."""
    out: set[int] = set()
    for node in nodes:
        if isinstance(node, ast.Try) and any(_catches_assertion(h) and not any(isinstance(s, ast.Raise)
                                                                               for s in ast.walk(h))
                                             for h in node.handlers):
            out.update(id(sub) for stmt in node.body for sub in ast.walk(stmt))
    return out


def _catches_assertion(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return handler.type is None or any(isinstance(k, ast.Name) and k.id in ("Exception", "BaseException",
                                                                             "AssertionError") for k in kinds)


def _checks(nodes: list[ast.AST], own_functions: set[str]) -> list[float]:
    strengths: list[float] = []
    guarded = _guarded(nodes)
    for node in nodes:
        if id(node) in guarded:
            continue
        if isinstance(node, ast.Assert):
            strengths.append(check_strength(node.test))
        elif isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id == "AssertionError":
                strengths.append(1.0)  # explicit failure under a condition
        elif isinstance(node, ast.Call):
            name = _call_name(node) or ""
            if name.lower().startswith(("assert", "expect")) and name not in own_functions:
                strengths.append(0.8)  # an assertion library (unittest, hamcrest...)
    return strengths


def _broad(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return handler.type is None or any(isinstance(k, ast.Name) and k.id in ("Exception", "BaseException")
                                       for k in kinds)


def _swallows(handler: ast.ExceptHandler) -> bool:
    return all(isinstance(s, (ast.Pass, ast.Continue)) or (isinstance(s, ast.Return) and s.value is None)
               or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)) for s in handler.body)


def hedges(analysis: Analysis, defs: list[StepDef]) -> list[str]:
    """Constructs that let a step pass whatever the product does."""
    found: list[str] = []
    for node in _walk_functions(analysis.reachable(defs)):
        if isinstance(node, ast.ExceptHandler):
            if _broad(node):
                found.append(f"line {node.lineno}: broad except")
            if _swallows(node):
                found.append(f"line {node.lineno}: handler swallows the error")
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) \
                and any(isinstance(v, ast.Constant) and v.value for v in node.values):
            found.append(f"line {node.lineno}: `or <true constant>`")
        elif isinstance(node, ast.Assert) and isinstance(node.test, ast.Constant) and node.test.value:
            found.append(f"line {node.lineno}: assert of a true constant")
        elif isinstance(node, ast.Call) and _call_name(node) == "suppress":
            found.append(f"line {node.lineno}: suppress()")
    for sdef in defs:
        last = sdef.node.body[-1] if sdef.node.body else None
        for node in ast.walk(sdef.node):
            if isinstance(node, ast.Return) and node is not last:
                found.append(f"line {node.lineno}: early return in step {sdef.name}")
    return found


@dataclass
class StaticScore:
    score: float
    detail: str
    components: dict[str, float] = field(default_factory=dict)


# Weights: a Then step that checks nothing costs more than anything else can earn back;
# binding comes next (an unbound step is a binding failure); then check strength.
W_BINDING, W_INTERFACES, W_FIXTURES, W_VIEW_HELPERS = 2.0, 1.5, 1.0, 0.5
W_THEN_STRENGTH, W_THEN_UNCHECKED, W_HEDGE, W_WHEN_EMPTY = 3.0, 4.0, 1.0, 1.0
MAX_HEDGES = 6


def static_score(files: dict[str, str], context: SelectionContext, analysis: Analysis | None = None) -> StaticScore:
    analysis = analysis or analyze(files, context.instance, context.features_dir)
    if analysis.empty:
        return StaticScore(EMPTY_SCORE, "no test code")
    if analysis.unparsable:
        return StaticScore(UNPARSABLE_SCORE, f"unparsable: {', '.join(analysis.unparsable)}")
    steps = analysis.bindings
    bound_steps = sum(1 for _, defs in steps if defs)
    binding = bound_steps / len(steps) if steps else 0.0
    all_defs = [d for t in ("given", "when", "then") for d in analysis.bound(t)]
    reach_nodes = _walk_functions(analysis.reachable(all_defs))
    own_functions = {d.name for d in analysis.step_defs} | set(analysis.helpers)

    wanted = [n for n in interface_names(context.instance) if not (n.startswith("__") and n not in _DUNDER_SYNTAX
                                                                 and n != "__len__")]
    used = _used_names(reach_nodes)
    interfaces = len([n for n in wanted if n in used]) / len(wanted) if wanted else 0.0

    facts = view_facts(str(context.view_root) if context.view_root else None, context.features_dir)
    fixtures = _fixtures_used(analysis, analysis.bound("given") + analysis.bound("when"), facts)
    fixture_score = 1.0 if fixtures else 0.0
    view_helpers = 1.0 if _view_modules_imported(analysis, facts) else 0.0

    then_steps = [defs for step, defs in steps if step.type == "then"]
    strengths: list[float] = []
    unchecked = 0
    for defs in then_steps:
        checks = _checks(_walk_functions(analysis.reachable(defs)), own_functions) if defs else []
        if not checks or max(checks) == 0.0:
            unchecked += 1
            strengths.append(0.0)
            continue
        # the strongest check says what is pinned down; more checks pin down more (capped)
        strengths.append(max(checks) + 0.1 * min(len([c for c in checks if c > 0]) - 1, 4))
    then_strength = sum(strengths) / len(strengths) if strengths else 0.0
    unchecked_frac = unchecked / len(then_steps) if then_steps else 0.0

    when_defs = analysis.bound("when")
    when_empty = sum(1 for d in when_defs if _body_is_trivial(d.node)) / len(when_defs) if when_defs else 0.0
    hedge_list = hedges(analysis, all_defs)

    components = {"binding": binding, "interfaces": interfaces, "fixtures": fixture_score,
                  "view_helpers": view_helpers, "then_strength": then_strength, "then_unchecked": unchecked_frac,
                  "when_empty": when_empty, "hedges": float(len(hedge_list))}
    score = (W_BINDING * binding + W_INTERFACES * interfaces + W_FIXTURES * fixture_score
             + W_VIEW_HELPERS * view_helpers + W_THEN_STRENGTH * then_strength - W_THEN_UNCHECKED * unchecked_frac
             - W_WHEN_EMPTY * when_empty - W_HEDGE * min(len(hedge_list), MAX_HEDGES))
    detail = (f"steps bound {bound_steps}/{len(steps)}, interfaces {interfaces:.2f} of {len(wanted)}, "
              f"fixtures {sorted(fixtures) if fixtures else 'none'}, then-checks {then_strength:.2f} "
              f"({unchecked}/{len(then_steps)} unchecked), hedges {len(hedge_list)}"
              + (f" ({hedge_list[0]}{', ...' if len(hedge_list) > 1 else ''})" if hedge_list else ""))
    return StaticScore(round(score, 6), detail, components)


def _static(candidates: list[Candidate], context: SelectionContext) -> Selection:
    results = {c.index: static_score(c.prediction.files, context) for c in candidates}
    scores = {i: r.score for i, r in results.items()}
    chosen = _best(scores)
    others = sorted((i for i in scores if i != chosen), key=lambda i: (-scores[i], i))
    runner_up = f"; next: candidate {others[0]} at {scores[others[0]]:.2f}" if others else ""
    return Selection(selector="static", chosen=chosen, scores=scores,
                     reason=f"static: candidate {chosen} scored {scores[chosen]:.2f} ({results[chosen].detail})"
                            f"{runner_up}")


# =========================================================================== consensus
_BUILTINS = frozenset(dir(builtins))


def consensus_features(files: dict[str, str], context: SelectionContext,
                       analysis: Analysis | None = None) -> set[str]:
    """Production names called, literal values expected in checks, fixtures used."""
    analysis = analysis or analyze(files, context.instance, context.features_dir)
    if not analysis.valid:
        return set()
    all_defs = [d for t in ("given", "when", "then") for d in analysis.bound(t)]
    own = {d.name for d in analysis.step_defs} | set(analysis.helpers)
    features: set[str] = set()
    for node in _walk_functions(analysis.reachable(all_defs)):
        if isinstance(node, ast.Call):
            name = _call_name(node)
            if name and name not in own and name not in _BUILTINS and name != "execute_steps":
                features.add(f"call:{name}")
        elif isinstance(node, ast.Attribute) and not (isinstance(node.value, ast.Name) and node.value.id == "context"):
            features.add(f"attr:{node.attr}")
    then_nodes = _walk_functions(analysis.reachable(analysis.bound("then")))
    guarded = _guarded(then_nodes)  # a swallowed assert expects nothing
    for node in then_nodes:
        if isinstance(node, ast.Assert) and id(node) not in guarded:
            for sub in ast.walk(node.test):
                if isinstance(sub, ast.Compare):  # the literal operands are the expected values
                    features |= {f"expect:{ast.unparse(o)}" for o in (sub.left, *sub.comparators) if _is_literal(o)}
    facts = view_facts(str(context.view_root) if context.view_root else None, context.features_dir)
    features |= {f"fixture:{f}" for f in _fixtures_used(analysis, all_defs, facts)}
    return features


def jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 0.0  # two empty tests agree on nothing worth having
    return len(a & b) / len(a | b)


def _consensus(candidates: list[Candidate], context: SelectionContext) -> Selection:
    analyses = {c.index: analyze(c.prediction.files, context.instance, context.features_dir) for c in candidates}
    valid = [c for c in candidates if analyses[c.index].valid]
    if len(valid) < 3:
        fallback = _static(candidates, context)
        return fallback.model_copy(update={
            "selector": "consensus",
            "reason": f"consensus: {len(valid)} usable candidate(s), fewer than 3 — fell back to {fallback.reason}"})
    features = {c.index: consensus_features(c.prediction.files, context, analyses[c.index]) for c in valid}
    scores: dict[int, float] = {c.index: -1.0 for c in candidates}
    for c in valid:
        others = [jaccard(features[c.index], features[o.index]) for o in valid if o.index != c.index]
        scores[c.index] = round(sum(others) / len(others), 6)
    top = max(scores.values())
    tied = [i for i, s in scores.items() if s == top]
    chosen = tied[0]
    tie_note = ""
    if len(tied) > 1:
        # agreement cannot tell them apart: prefer the one with the stronger static evidence
        static = {i: static_score(next(c for c in candidates if c.index == i).prediction.files, context,
                                  analyses[i]).score for i in tied}
        chosen = _best(static)
        tie_note = f"; tied with {[i for i in tied if i != chosen]}, broken by static score"
    return Selection(selector="consensus", chosen=chosen, scores=scores,
                     reason=f"consensus: candidate {chosen} is the medoid (mean Jaccard {top:.3f} over "
                            f"{len(features[chosen])} features){tie_note}")


# =========================================================================== judge
JUDGE_TEMPLATE = "judge.md.j2"
MAX_CANDIDATE_CHARS = 40_000  # per candidate in the prompt; longer ones are cut with a note


def judge_messages(candidates: list[Candidate], context: SelectionContext) -> list[dict[str, str]]:
    from harness.prompts import render

    shown = []
    for cand in candidates:
        files, budget = [], MAX_CANDIDATE_CHARS
        for path, text in sorted(cand.prediction.files.items()):
            if budget <= 0:
                files.append({"path": path, "text": "(omitted: candidate too long)"})
                continue
            cut = text if len(text) <= budget else text[:budget] + "\n# ... (cut: candidate too long)\n"
            budget -= len(text)
            files.append({"path": path, "text": cut})
        shown.append({"index": cand.index, "files": files})
    prompt = render(JUDGE_TEMPLATE, requirement=context.instance.requirement,
                    interfaces=context.instance.target_interfaces, candidates=shown,
                    features_dir=context.features_dir, terms=get_framework(context.framework).prompt_terms())
    return [{"role": "system", "content": "You review BDD test implementations and pick the best one. "
                                          "Answer with the JSON object asked for, nothing else."},
            {"role": "user", "content": prompt}]


def parse_judgement(text: str, valid: set[int]) -> int | None:
    """The candidate number a reply names: JSON {"best": N}, "Candidate N", or a bare number."""
    for match in re.finditer(r"\{[^{}]*\}", text, re.DOTALL):
        try:
            data = json.loads(match.group(0))
        except ValueError:
            continue
        if isinstance(data, dict):
            for key in ("best", "candidate", "choice", "answer"):
                value = data.get(key)
                if isinstance(value, str):
                    value = int(value) if value.strip().isdigit() else _first_number(value)
                if isinstance(value, int) and not isinstance(value, bool) and value in valid:
                    return value
    best = re.search(r"\bbest\b\W{0,3}(?:candidate\W{0,3})?(?:is\W{0,3})?(?:candidate\W{0,3})?#?(\d+)", text, re.IGNORECASE)
    if best and int(best.group(1)) in valid:
        return int(best.group(1))
    named = {int(n) for n in re.findall(r"\bcandidate\s*#?\s*(\d+)", text, re.IGNORECASE)}
    if len(named) == 1 and next(iter(named)) in valid:
        return next(iter(named))
    bare = re.fullmatch(r"\W*(\d+)\W*", text.strip())
    if bare and int(bare.group(1)) in valid:
        return int(bare.group(1))
    return None


def _first_number(text: str) -> int | None:
    match = re.search(r"\d+", text)
    return int(match.group(0)) if match else None


def _judge(candidates: list[Candidate], context: SelectionContext) -> Selection:
    from harness.llm import LimitReached, ProviderInterrupted

    static = _static(candidates, context)

    def fallback(why: str) -> Selection:
        return static.model_copy(update={"selector": "judge",
                                         "reason": f"judge: {why} — fell back to {static.reason}"})

    if context.model is None:
        return fallback("no model")
    try:
        reply = context.model.complete(judge_messages(candidates, context), tools=None)
    except LimitReached as exc:
        return fallback(f"model limit reached ({exc})")
    except ProviderInterrupted as exc:
        return fallback(f"provider interrupted ({str(exc)[:120]})")
    valid = {c.index for c in candidates}
    chosen = parse_judgement(reply.content or "", valid)
    if chosen is None:
        snippet = " ".join((reply.content or "").split())[:80]
        return fallback(f"unparseable reply {snippet!r}")
    scores = {i: (1.0 if i == chosen else 0.0) for i in sorted(valid)}
    return Selection(selector="judge", chosen=chosen, scores=scores,
                     reason=f"judge: the model chose candidate {chosen}")
