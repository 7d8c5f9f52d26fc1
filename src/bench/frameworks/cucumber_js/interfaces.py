"""API calls, target interfaces and the target-hidden map of a cucumber-js scenario.

behave's builder sees every call from test code to production (``sys.setprofile``). Node
gives no such hook without instrumenting the code, so a call is established twice, once
statically and once dynamically:

- the step definition's own code names it (``algosdk.encodeAddress(...)``, ``x.toJSON()``,
  ``new ABIMethod(...)``: the called name, read with tree-sitter), and
- V8's coverage of the same run saw a public production declaration of that name run.

A name shared by several declarations that all ran counts for each (an over-approximation
the ground truth and every prediction share, since both are measured this way). The target
interfaces are the calls of the When/Then steps, constructors called only in Then steps
excluded, grouped by declaring class (module for free functions). The target-hidden map:
the target interfaces plus what else the scenario ran, minus declarations most instances
run (shared infrastructure) and those that run while the suite loads (hiding them would
break loading); per-step coverage would need an inspector session per step, so unlike
behave the delegates are not restricted to the When/Then steps.
"""

from __future__ import annotations

from pathlib import Path

from bench.builder.interfaces import ScenarioCalls, hidden_declarations
from bench.frameworks.cucumber_js.declarations import CallReader, JsDeclaration, ProductionDeclarations
from bench.frameworks.cucumber_js.testside import REGISTRARS, StepSite
from bench.model import InterfaceGroup

WHEN_THEN = ("when", "then")


def direct_calls(declarations: ProductionDeclarations, ran: set[JsDeclaration], names: set[str]) -> set[JsDeclaration]:
    """Public declarations that ran and that the test's code names."""
    return {d for name in names for d in declarations.by_name.get(name, ())
            if d in ran and d.public and (d.kind != "constructor" or name == d.owner)}


def scenario_calls(declarations: ProductionDeclarations, ran: set[JsDeclaration], reader: CallReader,
                   sites: list[tuple[StepSite, str]]) -> ScenarioCalls[JsDeclaration]:
    """``sites``: the step-definition sites the scenario's steps ran, with the role of each
    step (given/when/then)."""
    names: dict[str, set[str]] = {"given": set(), "when": set(), "then": set()}
    for site, role in sites:
        # the site is the ``Given(pattern, fn)`` statement: its own registrar is no call of the test's
        names.setdefault(role, set()).update(reader.calls(site.file, site.start_byte, site.end_byte) - set(REGISTRARS))
    every = set().union(*names.values())
    api = direct_calls(declarations, ran, every)
    when_then = direct_calls(declarations, ran, names["when"] | names["then"])
    # a constructor the Then steps alone call builds an expected value, it is not the target
    targets = {d for d in when_then if d.kind != "constructor" or d.owner in names["when"]}
    order = (lambda d: (d.file, d.line))
    return ScenarioCalls(api=sorted(api, key=order), targets=sorted(targets, key=order), ran=frozenset(ran))


def interface_groups(targets: list[JsDeclaration]) -> list[InterfaceGroup]:
    groups: dict[tuple[str, str], list[JsDeclaration]] = {}
    for declaration in targets:
        owner = declaration.owner or Path(declaration.file).stem
        groups.setdefault((declaration.file, owner), []).append(declaration)
    return [InterfaceGroup(declaring_type=owner, file=file, declarations=[d.declaration() for d in members])
            for (file, owner), members in sorted(groups.items())]


__all__ = ["ScenarioCalls", "direct_calls", "hidden_declarations", "interface_groups", "scenario_calls"]
