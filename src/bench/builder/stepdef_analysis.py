"""Stage II's analysis for the frameworks whose test implementation is a set of step-definition
*sites* found in source (godog's ``X.Step(...)`` registrations, Cucumber-JVM's annotated
methods): relations between instances, the gold record and the instance, from the steps each
scenario bound and what its runs covered and called. The frameworks differ only in how a
closure is found (``closure_of``) and how target interfaces are grouped (``interface_groups``).

A *site* has ``key``, ``file``, ``line``, ``end_line`` and ``qualname``; a closure has
``functions`` (with ``file``, ``line``, ``end_line``) and ``files``.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.builder.interfaces import ScenarioCalls, hidden_declarations
from bench.builder.pipeline import BuildOptions, Candidate, id_order
from bench.builder.relations import RelationInput, compute_relations
from bench.model import (
    ClosureFile,
    GoldTest,
    Instance,
    InterfaceGroup,
    Step,
    StepBinding,
    StepDefRef,
    TestLevel,
    ValidationRecord,
    ViewSpec,
)
from bench.project import ProjectSource

ROLES = ("given", "when", "then")


@dataclass(frozen=True)
class Bound:
    """One reported step bound to its step-definition site."""

    row_line: int  # the scenario's line, or the Examples row's
    step: Step | None  # the requirement's effective step it ran as
    site: Any
    role: str  # given / when / then (the feature's keyword, And/But resolved)


def site_roles(bound: list[Bound]) -> dict[Any, set[str]]:
    roles: dict[Any, set[str]] = {}
    for b in bound:
        roles.setdefault(b.site, set()).add(b.role)
    return roles


def analyse(project: str, source: ProjectSource, validated: list[Candidate], bound: dict[str, list[Bound]],
            closure_of: Callable[[Candidate, list[Any]], Any], work: Path, options: BuildOptions,
            calls: dict[str, ScenarioCalls[Any]], covered: dict[str, dict[str, set[int]]], load_time: set[str],
            interface_groups: Callable[[list[Any]], list[InterfaceGroup]], rule: str,
            evidence: str) -> tuple[list[Instance], dict[str, GoldTest]]:
    """The instances and gold records of the validated candidates (``rule``: the view's hidden
    rule as the dataset card states it; ``evidence``: the test level's)."""
    def keys(cand: Candidate, roles: set[str]) -> frozenset[str]:
        return frozenset(b.site.key for b in bound[cand.instance_id] if b.role in roles)

    relations = compute_relations([RelationInput(id=c.instance_id, given_when=keys(c, {"given", "when"}),
                                                 when=keys(c, {"when"}), all_definitions=keys(c, set(ROLES)))
                                   for c in validated])
    frequency = Counter(key for c in calls.values() for key in {d.key for d in c.ran})
    shared = {k for k, n in frequency.items() if n > options.shared_threshold * max(1, len(validated))}
    digests: dict[str, str] = {}

    def sha256(rel: str) -> str:
        if rel not in digests:
            digests[rel] = hashlib.sha256((work / rel).read_bytes()).hexdigest()
        return digests[rel]

    instances: list[Instance] = []
    gold: dict[str, GoldTest] = {}
    for cand in validated:
        steps = bound[cand.instance_id]
        sites = sorted({b.site for b in steps}, key=lambda s: (s.file, s.line))
        closure = closure_of(cand, sites)
        spans: dict[str, int] = Counter()
        for site in sites:
            spans[site.file] += site.end_line - site.line + 1
        for decl in closure.functions:
            spans[decl.file] += decl.end_line - decl.line + 1
        site_files = {s.file for s in sites}
        closure_files = [ClosureFile(path=f, role="step_definitions" if f in site_files else "helper",
                                     sha256=sha256(f), lines=spans.get(f, 0)) for f in closure.files]
        bindings = [StepBinding(step_line=b.step.line if b.step else 0, step_text=b.step.text if b.step else "",
                                step_type=b.step.type if b.step else b.role,  # type: ignore[arg-type]
                                role=b.role,  # type: ignore[arg-type]
                                background=bool(b.step and b.step.background), depth=0,
                                binding=StepDefRef(file=b.site.file, line=b.site.line, qualname=b.site.qualname),
                                scenario_line=b.row_line)
                    for b in steps]
        scenario = calls[cand.instance_id]
        instances.append(Instance(
            id=cand.instance_id, project=project, requirement=cand.requirement,
            target_interfaces=interface_groups(scenario.targets), test_level=TestLevel.component,
            depends_on=relations.depends_on.get(cand.instance_id, []),
            variant_of=relations.variant_of.get(cand.instance_id, []), group=relations.group_of[cand.instance_id],
            view=ViewSpec(target_hidden=[d.body_span() for d in hidden_declarations(scenario, shared, load_time)],
                          hidden_rule=rule, all_hidden_scope=list(source.production))))
        gold[cand.instance_id] = GoldTest(
            instance_id=cand.instance_id, closure=closure_files,
            step_definitions=[StepDefRef(file=s.file, line=s.line, qualname=s.qualname) for s in sites],
            bindings=bindings, api_calls=scenario.api_keys, target_calls=scenario.target_keys,
            # coverage is per process, not per step: every declaration the scenario ran
            executed_when_then=sorted({d.key for d in scenario.ran}),
            covered_lines={f: sorted(lines) for f, lines in sorted(covered[cand.instance_id].items()) if lines},
            data_files=[],
            validation=ValidationRecord(isolation_runs=cand.isolation, positive_runs=cand.positive,
                                        negative_runs=cand.negative, negative_initialized=cand.negative_initialized),
            test_level_evidence=[evidence],
            runtime_seconds=round(cand.runtime / max(1, len(cand.isolation)), 4))
    instances.sort(key=lambda i: id_order(i.id))
    return instances, gold


__all__ = ["ROLES", "Bound", "analyse", "site_roles"]
