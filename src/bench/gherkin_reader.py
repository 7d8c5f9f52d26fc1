"""Read feature files with the official Gherkin parser into ``Requirement`` records.

behave's own parser runs the scenarios; gherkin-official is the reference for what
the developers wrote. ``cross_check_with_behave`` compares the two so a dialect
difference surfaces as a recorded warning instead of a silently wrong instance.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from gherkin.errors import CompositeParserException, ParserException
from gherkin.parser import Parser
from gherkin.token_scanner import TokenScanner

from bench.model import ExamplesTable, Requirement, Step, StepType

_KEYWORD_TYPES: dict[str, StepType] = {"Context": "given", "Action": "when", "Outcome": "then"}


@dataclass
class FeatureFile:
    """One parsed feature file: its requirements, or why it yields none."""

    path: str
    requirements: list[Requirement] = field(default_factory=list)
    problem: str | None = None  # "unparsable", "empty", "no_title"
    detail: str = ""


def read_feature_file(root: Path, path: Path) -> FeatureFile:
    return parse_feature(path.relative_to(root).as_posix(), path.read_text(encoding="utf-8", errors="replace"))


def parse_feature(rel: str, text: str) -> FeatureFile:
    """A feature file's text, as ``rel`` (a file on disk, or a version in a git history)."""
    try:
        # gherkin's TypedDicts type a feature's children as a keyless ``Envelope``: the document is
        # read as the plain dict it is
        document = cast(dict[str, Any], Parser().parse(TokenScanner(text)))
    except (ParserException, CompositeParserException) as exc:
        return FeatureFile(rel, problem="unparsable", detail=str(exc).splitlines()[0])
    feature = document.get("feature")
    if not feature:
        return FeatureFile(rel, problem="empty", detail="no Feature (empty or comment-only file)")
    if not feature.get("name", "").strip():
        return FeatureFile(rel, problem="no_title", detail="Feature without a title")
    lines = text.splitlines()
    requirements: list[Requirement] = []
    feature_bg: list[Step] = []
    feature_bg_span: tuple[int, int] | None = None
    children = list(feature.get("children", []))
    header_end = _first_child_line(children, default=len(lines) + 1) - 1
    header_text = "\n".join(lines[: header_end]).rstrip()
    for child in children:
        if "background" in child:
            feature_bg = _steps(child["background"]["steps"], background=True)
            feature_bg_span = _span(child["background"], children, len(lines))
        elif "scenario" in child:
            requirements.append(_requirement(rel, feature, child["scenario"], feature_bg, [],
                                             lines, header_text, feature_bg_span, None, children))
        elif "rule" in child:
            rule = child["rule"]
            rule_children = rule.get("children", [])
            rule_bg: list[Step] = []
            rule_bg_span = None
            for rchild in rule_children:
                if "background" in rchild:
                    rule_bg = _steps(rchild["background"]["steps"], background=True)
                    rule_bg_span = _span(rchild["background"], rule_children, len(lines))
                elif "scenario" in rchild:
                    requirements.append(_requirement(rel, feature, rchild["scenario"], feature_bg, rule_bg,
                                                     lines, header_text, feature_bg_span, rule_bg_span,
                                                     rule_children))
    return FeatureFile(rel, requirements=requirements)


def _first_child_line(children: list[dict], default: int) -> int:
    best = default
    for child in children:
        node = next(iter(child.values()))
        line = node["location"]["line"]
        for tag in node.get("tags", []):
            line = min(line, tag["location"]["line"])
        best = min(best, line)
    return best


def _span(node: dict, siblings: list[dict], total_lines: int) -> tuple[int, int]:
    start = node["location"]["line"]
    for tag in node.get("tags", []):
        start = min(start, tag["location"]["line"])
    later = [
        _first_child_line([s], total_lines + 1)
        for s in siblings
        if next(iter(s.values()))["location"]["line"] > node["location"]["line"]
    ]
    end = (min(later) - 1) if later else total_lines
    return start, end


def _block(lines: list[str], span: tuple[int, int] | None) -> str:
    if span is None:
        return ""
    return "\n".join(lines[span[0] - 1: span[1]]).rstrip()


def _steps(raw_steps: list[dict], background: bool = False) -> list[Step]:
    steps: list[Step] = []
    previous: StepType = "given"
    for raw in raw_steps:
        step_type = _KEYWORD_TYPES.get(raw.get("keywordType", ""), previous)
        previous = step_type
        table = None
        if "dataTable" in raw:
            table = [[cell["value"] for cell in row["cells"]] for row in raw["dataTable"]["rows"]]
        docstring = raw["docString"]["content"] if "docString" in raw else None
        steps.append(Step(keyword=raw["keyword"].strip(), type=step_type, text=raw["text"],
                          line=raw["location"]["line"], background=background,
                          docstring=docstring, table=table))
    return steps


def _requirement(rel: str, feature: dict, scenario: dict, feature_bg: list[Step], rule_bg: list[Step],
                 lines: list[str], header_text: str, feature_bg_span, rule_bg_span,
                 siblings: list[dict]) -> Requirement:
    examples = []
    for raw in scenario.get("examples", []):
        header = [c["value"] for c in raw.get("tableHeader", {}).get("cells", [])] if raw.get("tableHeader") else []
        body = raw.get("tableBody", [])
        examples.append(ExamplesTable(
            name=raw.get("name", ""), line=raw["location"]["line"],
            tags=[t["name"] for t in raw.get("tags", [])], header=header,
            rows=[[c["value"] for c in row["cells"]] for row in body],
            row_lines=[row["location"]["line"] for row in body]))
    scenario_span = _span(scenario, siblings, len(lines))
    parts = [header_text, _block(lines, feature_bg_span), _block(lines, rule_bg_span), _block(lines, scenario_span)]
    return Requirement(
        feature_file=rel,
        feature_name=feature["name"].strip(),
        feature_description=_dedent(feature.get("description", "")),
        feature_tags=[t["name"] for t in feature.get("tags", [])],
        background_steps=[*feature_bg, *rule_bg],
        scenario_name=scenario["name"].strip(),
        scenario_keyword=scenario["keyword"].strip(),
        scenario_line=scenario["location"]["line"],
        scenario_tags=[t["name"] for t in scenario.get("tags", [])],
        scenario_description=_dedent(scenario.get("description", "")),
        steps=_steps(scenario.get("steps", [])),
        examples=examples,
        gherkin="\n\n".join(p for p in parts if p.strip()),
    )


def _dedent(text: str) -> str:
    return "\n".join(line.strip() for line in text.splitlines()).strip()


def cross_check_with_behave(root: Path, feature: FeatureFile) -> list[str]:
    """Differences between gherkin-official and behave's parser for one file."""
    from behave.parser import ParserError, parse_file

    warnings: list[str] = []
    try:
        parsed = parse_file(str(root / feature.path))
    except ParserError as exc:
        return [f"{feature.path}: behave cannot parse it: {exc}"]
    if parsed is None:
        return [f"{feature.path}: behave finds no feature"] if feature.requirements else []
    top_level = list(parsed.scenarios)
    for rule in getattr(parsed, "rules", []) or []:
        top_level += list(rule.scenarios)
    behave_scenarios = {s.line: s for s in top_level}  # outlines stay unexpanded here
    for req in feature.requirements:
        other = behave_scenarios.get(req.scenario_line)
        if other is None:
            warnings.append(f"{feature.path}:{req.scenario_line}: behave has no scenario on this line")
            continue
        theirs = [s.name for s in other.steps]
        ours = [s.text for s in req.steps]
        if theirs != ours:
            warnings.append(f"{feature.path}:{req.scenario_line}: step texts differ between parsers")
    return warnings
