"""From one traced ground-truth run to bindings, target interfaces, API set and test level."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from bench.model import Declaration, InterfaceGroup, StepBinding, StepDefRef, TestLevel
from bench.production_index import FunctionInfo, ProductionIndex

# Names that obtain services from an application's own wiring (integration level).
WIRING_NAMES = re.compile(
    r"^(build_app|create_app|make_app|get_app|bootstrap|build_container|get_container|container|"
    r"get_service|resolve|wire|wiring|injector|service_locator|app_factory)$")

CodeKey = tuple[str, int, str]


@dataclass
class TracedScenario:
    """What one traced ground-truth run tells us, keyed by declaration."""

    bindings: list[StepBinding]
    step_definitions: list[StepDefRef]
    roles: dict[int, tuple[str, bool]]  # top step index -> (type, background)
    direct: dict[int, set[CodeKey]]
    executed_when_then: set[CodeKey]
    executed_other: set[CodeKey]
    coverage: dict[str, list[int]]
    opened: set[str]
    test_files: set[str]
    unbound_steps: list[str] = field(default_factory=list)

    @classmethod
    def from_result(cls, result: dict[str, Any]) -> TracedScenario:
        trace = result.get("trace", {})
        bindings, defs, roles, unbound = [], {}, {}, []
        for entry in result.get("steps", []):
            if entry["depth"] == 0:
                roles[entry["top_index"]] = (entry["type"], entry["background"])
            ref = entry.get("binding")
            if ref is None:
                unbound.append(f"{entry['file']}:{entry['line']} {entry['name']}")
                continue
            step_def = StepDefRef(**ref)
            defs[step_def.key] = step_def
            role = roles.get(entry["top_index"], (entry["type"], False))[0]
            bindings.append(StepBinding(
                step_line=entry["line"], step_text=entry["name"], step_type=entry["type"], role=role,
                background=entry["background"], depth=entry["depth"], binding=step_def,
                scenario_line=entry.get("scenario_line") or 0))
        return cls(
            bindings=bindings,
            step_definitions=sorted(defs.values(), key=lambda d: d.key),
            roles=roles,
            direct={int(k): {tuple(x) for x in v} for k, v in trace.get("direct", {}).items()},  # type: ignore[misc]
            executed_when_then={tuple(x) for x in trace.get("executed_when_then", [])},  # type: ignore[misc]
            executed_other={tuple(x) for x in trace.get("executed_other", [])},  # type: ignore[misc]
            coverage=trace.get("coverage", {}),
            opened=set(trace.get("opened", [])),
            test_files=set(trace.get("test_files", [])),
            unbound_steps=unbound,
        )

    @property
    def step_files(self) -> set[str]:
        return {d.file for d in self.step_definitions}

    def given_when_definitions(self) -> set[str]:
        """Step definitions run by Given/When effective steps (nested steps included)."""
        return {b.binding.key for b in self.bindings if b.role in ("given", "when")}

    def when_definitions(self) -> set[str]:
        return {b.binding.key for b in self.bindings if b.role == "when" and not b.background}

    def definition_keys(self) -> frozenset[str]:
        return frozenset(d.key for d in self.step_definitions)


@dataclass
class CallAnalysis:
    api_calls: list[str]
    target_calls: list[str]
    target_interfaces: list[InterfaceGroup]
    target_functions: list[FunctionInfo]
    test_level: TestLevel
    level_evidence: list[str]


def analyse_calls(traced: TracedScenario, index: ProductionIndex, python_path: list[str]) -> CallAnalysis:
    when_then: set[CodeKey] = set()
    then_only_candidates: set[CodeKey] = set()
    when_keys: set[CodeKey] = set()
    all_keys: set[CodeKey] = set()
    for top_index, keys in traced.direct.items():
        step_type, background = traced.roles.get(top_index, ("given", True))
        all_keys |= keys
        if background or step_type not in ("when", "then"):
            continue
        when_then |= keys
        if step_type == "when":
            when_keys |= keys
        else:
            then_only_candidates |= keys
    # Constructors called only from Then steps are excluded (docs/building.md#what-build-does).
    targets = {k for k in when_then if not (_is_constructor(k) and k not in when_keys)}

    api = _declarations(all_keys, index)
    target_decls = _declarations(targets, index)
    groups: dict[tuple[str, str], list[Declaration]] = defaultdict(list)
    for key, decl in sorted(target_decls.items()):
        module = index.module_name(decl.file, python_path)
        owner = decl.qualname.rsplit(".", 1)[0] if "." in decl.qualname else ""
        declaring = f"{module}.{owner}" if owner else module
        groups[(declaring, decl.file)].append(decl)
    interface_groups = [InterfaceGroup(declaring_type=t, file=f, declarations=sorted(ds, key=lambda d: d.line))
                        for (t, f), ds in sorted(groups.items())]
    functions = [info for key in targets if (info := index.lookup(*key)) is not None]
    level, evidence = _test_level(all_keys, index)
    return CallAnalysis(api_calls=sorted(api), target_calls=sorted(target_decls),
                        target_interfaces=interface_groups, target_functions=functions,
                        test_level=level, level_evidence=evidence)


def _is_constructor(key: CodeKey) -> bool:
    name = key[2].rsplit(".", 1)[-1]
    return name in ("__init__", "__new__")


def _declarations(keys: set[CodeKey], index: ProductionIndex) -> dict[str, Declaration]:
    out: dict[str, Declaration] = {}
    # sorted, first kept: a property's getter and setter share a key, and a set's iteration
    # order (string hashes differ per process) chose which one declared it (the getter now)
    for file, line, qualname in sorted(keys):
        info = index.lookup(file, line, qualname)
        if info is None:
            if _is_constructor((file, line, qualname)):
                # A generated __init__ (dataclass): declare the class itself.
                cls = qualname.rsplit(".", 1)[0]
                decl = Declaration(file=file, qualname=qualname, line=line,
                                   signature=f"class {cls.rsplit('.', 1)[-1]}  # generated __init__",
                                   kind="constructor")
                out[decl.key] = decl
            continue
        if not info.is_public:
            continue
        out.setdefault(info.key, info.declaration())
    return out


def _test_level(keys: set[CodeKey], index: ProductionIndex) -> tuple[TestLevel, list[str]]:
    """component: steps construct production objects themselves (a constructor, or a class's
    own factory classmethod/staticmethod); integration: steps obtain services from the
    application's wiring; system: neither — only module-level entry points and the
    objects those return."""
    wiring, constructors = [], []
    for file, line, qualname in sorted(keys):
        name = qualname.rsplit(".", 1)[-1]
        info = index.lookup(file, line, qualname)
        owner = qualname.rsplit(".", 1)[0]
        if WIRING_NAMES.match(name):
            wiring.append(f"obtains services from the application's wiring: {qualname} ({file})")
        elif name in ("__init__", "__new__"):
            constructors.append(f"instantiates a production class directly: {owner} ({file})")
        elif info is not None and info.kind in ("classmethod", "staticmethod") and info.is_public:
            constructors.append(f"builds production objects through the class itself: {qualname} ({file})")
    if wiring:
        return TestLevel.integration, wiring
    if constructors:
        return TestLevel.component, constructors
    return TestLevel.system, ["drives production only through module-level entry points and the objects they return"]


def hidden_functions(target_functions: list[FunctionInfo], executed: set[CodeKey], index: ProductionIndex,
                     shared: set[str], import_time: set[str]) -> list[FunctionInfo]:
    """The target-hidden map of one instance.

    = target interfaces + first-party code they delegate to during When/Then,
      minus code shared by most instances (``shared``, decided over the dataset),
      minus bodies that run at import time (hiding them would break the import),
      minus nested functions (hidden with their enclosing function).
    Targets themselves are hidden even when shared. Functions are told apart by file and
    line, not qualname: a property's getter and setter share one, and each body that ran
    is hidden (the build was nondeterministic when a set's order chose one of the two).
    """
    chosen: dict[tuple[str, int], FunctionInfo] = {}
    for info in target_functions:
        if info.key not in import_time and not info.nested:
            chosen[(info.file, info.def_line)] = info
    for key in sorted(executed):
        found = index.lookup(*key)
        if found is None or found.nested or found.key in shared or found.key in import_time:
            continue
        chosen.setdefault((found.file, found.def_line), found)
    return sorted(chosen.values(), key=lambda i: (i.file, i.def_line))
