"""Suite mode's documentation ablation (TestSuiteBench §3.2: developer documentation instead of
the specification).

The agent is not shown the feature file. It gets the **documentation of the feature's target
interfaces** — every production declaration the feature's scenarios are reached through (the
instances' ``target_interfaces``, already agent-visible in the normal task), with its signature
and docstring read from the real sources, and the docstring of its class — and writes its *own*
scenarios: feature files under ``<features_dir>/authored/`` (new files only: an existing feature
file is never replaced, so nothing the agent writes can shadow a reference one) plus their step
definitions.

Judging: each authored scenario becomes a synthetic instance (the feature file and line the agent
wrote) judged by the same verdict process as a reference scenario (sandbox, screens, clean runs
cross-checked, kills reproduced and replayed), the suite's requirement-targeted mutants as the
kills that count. Validity is over the authored scenarios; the mutation score is over the *same*
targets as the specification arm's, so the two arms are directly comparable; size = authored /
reference scenarios. At most ``max(10, 3 × the reference's)`` runnable units (scenarios, or outline
rows) are judged; the rest count as generated and failing, so flooding a suite cannot pay.
"""

from __future__ import annotations

import ast
import time
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import Field

from bench import stopping
from bench.dataset import Dataset
from bench.evaluate import EvaluateOptions
from bench.gherkin_reader import parse_feature
from bench.model import Frozen, GenerationMetadata, GoldTest, Outcome, Prediction, Requirement
from bench.progress import Progress
from bench.suite.evaluate import (
    JUDGE_CLEAN_RUNS,
    ScenarioVerdict,
    SuiteResult,
    _judge_scenario,
    journaled_suite_run,
    suite_judges,
    summarize_suites,
)
from bench.suite.instances import SuiteInstance
from bench.suite.metrics import mutation_score, suite_size, validity_of, word_count

AUTHORED = "authored"
MIN_JUDGED = 10
JUDGED_PER_REFERENCE = 3


def authored_dir(features_dir: str) -> str:
    """Where the agent's own feature files go."""
    return f"{features_dir.rstrip('/')}/{AUTHORED}"


def judged_cap(reference_units: int) -> int:
    """Runnable units (scenarios, outline rows) of authored scenarios judged per suite, from the
    reference's runnable units: the developers' own feature always fits."""
    return max(MIN_JUDGED, JUDGED_PER_REFERENCE * reference_units)


def reference_units(dataset: Dataset, suite: SuiteInstance) -> int:
    return sum(len(dataset.instance(s).requirement.run_lines) for s in suite.scenarios)


# ----------------------------------------------------------------------------- documentation
class DocumentedDeclaration(Frozen):
    key: str = Field(description="FILE:QUALNAME")
    signature: str
    docstring: str = ""


class DocumentedType(Frozen):
    declaring_type: str
    file: str
    docstring: str = Field("", description="the class's docstring (empty for module functions)")
    declarations: list[DocumentedDeclaration]


class SuiteDocumentation(Frozen):
    """What the documentation arm reads instead of the feature file."""

    suite_id: str
    types: list[DocumentedType]
    text: str = Field(description="the page the agent is given")
    words: int = Field(description="its length in words (the specification length of this arm)")


def suite_documentation(dataset: Dataset, suite: SuiteInstance) -> SuiteDocumentation:
    """The documentation page of one suite (deterministic: same dataset, same page)."""
    snapshot = dataset.root / dataset.project(suite.project).snapshot
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for instance_id in suite.scenarios:
        for group in dataset.instance(instance_id).target_interfaces:
            entry = groups.setdefault((group.file, group.declaring_type), {})
            for declaration in group.declarations:
                entry.setdefault(declaration.qualname, declaration)
    types: list[DocumentedType] = []
    for (file, declaring_type), declarations in sorted(groups.items()):
        docs = _docstrings(snapshot / file)
        owner = next(iter(declarations)).rpartition(".")[0] if declarations else ""
        documented = [DocumentedDeclaration(key=f"{file}:{name}", signature=" ".join(d.signature.split()),
                                            docstring=docs.get(name, ""))
                      for name, d in sorted(declarations.items(), key=lambda item: item[1].line)]
        types.append(DocumentedType(declaring_type=declaring_type, file=file, docstring=docs.get(owner, "") if owner
                                    else "", declarations=documented))
    text = _render(types)
    return SuiteDocumentation(suite_id=suite.id, types=types, text=text, words=word_count(text))


def _render(types: list[DocumentedType]) -> str:
    if not types:
        return "No production interface is documented for this feature.\n"
    parts: list[str] = []
    for kind in types:
        parts.append(f"## `{kind.declaring_type}` ({kind.file})\n")
        if kind.docstring:
            parts.append(kind.docstring.strip() + "\n")
        for declaration in kind.declarations:
            parts.append(f"### `{declaration.signature}`\n")
            parts.append((declaration.docstring.strip() or "(no docstring)") + "\n")
    return "\n".join(parts)


@lru_cache(maxsize=256)
def _docstrings(path: Path) -> dict[str, str]:
    """Qualified name → docstring of every class and function of a source file (the real one:
    the evaluator's copy, never a view)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return {}
    found: dict[str, str] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                found.setdefault(name, ast.get_docstring(child) or "")
                visit(child, f"{name}.")

    visit(tree, "")
    return found


# ----------------------------------------------------------------------------- authored scenarios
def authored_requirements(files: dict[str, str], area: str) -> tuple[list[Requirement], list[str]]:
    """The scenarios of the prediction's feature files under ``area`` (parsed, never run, in the
    evaluator), in path and line order, and why a file yields none."""
    base = PurePosixPath(area)
    requirements: list[Requirement] = []
    problems: list[str] = []
    for path in sorted(files):
        if not path.endswith(".feature") or base not in PurePosixPath(path).parents:
            continue
        parsed = parse_feature(path, files[path])
        if parsed.problem is not None:
            problems.append(f"{path}: {parsed.problem} ({parsed.detail})"[:300])
        requirements.extend(sorted(parsed.requirements, key=lambda r: r.scenario_line))
    return requirements, problems


def authored_id(suite_id: str, requirement: Requirement) -> str:
    return f"{suite_id}::{requirement.feature_file}:{requirement.scenario_line}"


def split_at_cap(requirements: list[Requirement], cap: int) -> tuple[list[Requirement], list[Requirement]]:
    """(judged, over the cap): runnable units (a scenario, or each outline row) are counted in order."""
    judged: list[Requirement] = []
    used = 0
    for position, requirement in enumerate(requirements):
        units = len(requirement.run_lines)
        if used + units > cap:
            return judged, requirements[position:]
        judged.append(requirement)
        used += units
    return judged, []


# ----------------------------------------------------------------------------- judging
def evaluate_authored(dataset_dir: Path, predictions_path: Path, run_dir: Path,
                      options: EvaluateOptions | None = None, suites: list[str] | None = None,
                      progress: Progress | None = None) -> dict[str, Any]:
    """Judge every suite's authored scenarios; ``authored_results.jsonl`` (a journal: an interrupted
    run resumes) and ``authored_summary.json`` in ``run_dir``; returns the summary."""
    def judge(dataset: Dataset, todo: list[SuiteInstance], predictions: dict[str, Prediction],
              problems: dict[str, str], options: EvaluateOptions, append: Any) -> None:
        judge_authored_suites(dataset, todo, predictions, problems, options, append, progress)

    return journaled_suite_run("authored", SuiteResult, judge, summarize_authored, dataset_dir, predictions_path,
                               run_dir, options or EvaluateOptions(), suites, progress)


def judge_authored_suites(dataset: Dataset, todo: list[SuiteInstance], predictions: dict[str, Prediction],
                          problems: dict[str, str], options: EvaluateOptions, done: Any, progress: Progress | None = None) -> None:
    """Judge each suite's authored scenarios (``options.workers`` at a time); ``done`` receives each
    finished SuiteResult. Progress advances by the suite's reference scenario count."""
    with suite_judges(dataset, options, "authored", authored=authored_dir) as judges:
        for suite in todo:
            started = time.monotonic()
            area = authored_dir(dataset.project(suite.project).features_dir)
            prediction, problem = judges.admit(suite, predictions, problems)
            requirements: list[Requirement] = []
            notes: list[str] = []
            if problem is None and prediction is not None:
                requirements, notes = authored_requirements(prediction.files, area)
                if not requirements:
                    problem = f"no authored scenario (feature files go under {area}/)" + (
                        f": {notes[0]}" if notes else "")
            verdicts: list[ScenarioVerdict] = []
            if problem is None and prediction is not None:
                cap = judged_cap(reference_units(dataset, suite))
                judged, over = split_at_cap(requirements, cap)
                first = dataset.instance(suite.scenarios[0])
                template = _suite_gold(suite, judges.gold)
                targets = [t.mutant for t in suite.targets] if options.mutants else []
                futures = [judges.pool.submit(_judge_scenario, judges.judging(suite.project),
                                              first.model_copy(update={"id": authored_id(suite.id, r),
                                                                       "requirement": r}),
                                              prediction, template, targets, judges.rng) for r in judged]
                verdicts = [stopping.result(future) for future in futures]
                verdicts += [ScenarioVerdict(instance_id=authored_id(suite.id, r), outcome=Outcome.generation_failure,
                                             detail=f"over the cap of {cap} judged runnable units: not run",
                                             stability="failing")
                             for r in over]
            if progress is not None:
                for _ in suite.scenarios:
                    progress.advance()
            done(score_authored_result(suite, verdicts, problem or "; ".join(notes), time.monotonic() - started,
                                       prediction.metadata if prediction is not None else None,
                                       suite_documentation(dataset, suite).words, mutants=options.mutants))


def _suite_gold(suite: SuiteInstance, gold: dict[str, GoldTest]) -> GoldTest:
    """The gold an authored scenario is judged against: its kills and pool are replaced by the
    suite's targets and camouflage (``_judge_scenario``); the pool to draw camouflage from is every
    mutant a reference scenario of the feature reaches."""
    records = [gold[s] for s in suite.scenarios if s in gold]
    pool = sorted({m for record in records for m in record.pool})
    return records[0].model_copy(update={"pool": pool, "kills": []})


def score_authored_result(suite: SuiteInstance, verdicts: list[ScenarioVerdict], detail: str, seconds: float,
                          metadata: GenerationMetadata | None, documentation_words: int,
                          mutants: bool = True) -> SuiteResult:
    """The suite's metrics from its authored scenarios' verdicts (pure). Without an authored scenario
    validity is undefined (None) and the mutation score is 0 (every target survives). The
    specification length is the documentation's: it is what this arm reads."""
    checked = validity_of({v.instance_id: v.stability for v in verdicts}, JUDGE_CLEAN_RUNS)
    kills = {v.instance_id: v.kills for v in verdicts}
    return SuiteResult(suite_id=suite.id, project=suite.project, feature_file=suite.feature_file, detail=detail[:500],
                       scenarios=verdicts, unimplemented=sorted(v.instance_id for v in verdicts if v.unimplemented),
                       validity=checked,
                       mutation=mutation_score([t.mutant for t in suite.targets] if mutants else [], kills,
                                               checked.valid_ids),
                       size=suite_size(len(verdicts), len(suite.scenarios)),
                       specification_words=documentation_words,
                       evaluation_seconds=round(seconds, 3), metadata=metadata)


def summarize_authored(results: list[SuiteResult], dataset_name: str, predictions_sha256: str) -> dict[str, Any]:
    summary = summarize_suites(results, dataset_name, predictions_sha256)
    summary.update(mode="suite", specification="documentation",
                   suites_without_scenarios=sum(1 for r in results if not r.scenarios))
    return summary
