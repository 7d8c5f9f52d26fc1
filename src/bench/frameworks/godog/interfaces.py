"""API calls, target interfaces and the target-hidden map of a godog scenario.

As for cucumber-js, a call is established twice: statically, the handler's code calls it
(``declarations.CallReader``: ``pkg.F(...)`` exactly, ``x.M(...)`` by method name), and
dynamically, the scenario's coverage profile shows the declaration ran
(``GoProductionDeclarations.ran``). A method name several production types declare counts for
each of them that ran (the same over-approximation for the ground truth and every prediction).

- API calls: the public declarations the scenario's handlers (and the test-side helpers they
  reach, as the caller passes them) call and that ran;
- target interfaces: those of the When/Then handlers, grouped by declaring type
  (``<import path>.<Type>`` for a method, the import path for a function). Go has no
  constructors, so nothing is set aside for the Then steps (a composite literal is no call);
- target-hidden map: the targets plus every declaration the scenario ran, minus shared
  infrastructure and what runs while the suite loads — cucumber-js's rule and code (``bench.builder.interfaces``).
"""

from __future__ import annotations

from collections.abc import Iterable

from bench.builder.interfaces import ScenarioCalls, hidden_declarations
from bench.frameworks.call_reader import HandlerSpan
from bench.frameworks.godog.declarations import CallReader, GoDeclaration
from bench.model import InterfaceGroup

WHEN_THEN = ("when", "then")

__all__ = ["ScenarioCalls", "declaring_type", "direct_calls", "hidden_declarations", "interface_groups",
           "scenario_calls"]


def direct_calls(ran: set[GoDeclaration], candidates: Iterable[GoDeclaration]) -> set[GoDeclaration]:
    """Public declarations the handlers call that ran."""
    return {d for d in candidates if d.public and d in ran}


def scenario_calls(ran: set[GoDeclaration], reader: CallReader,
                   sites: list[tuple[HandlerSpan, str]]) -> ScenarioCalls[GoDeclaration]:
    """``sites``: the handlers the scenario's steps ran and the test-side helpers each reaches,
    with the role of the step (given/when/then); ``ran``: ``declarations.ran(covered)`` of the
    scenario's run. The result's declarations are ``GoDeclaration``s."""
    called: dict[str, set[GoDeclaration]] = {}
    for span, role in sites:
        called.setdefault(role, set()).update(reader.calls(span))
    api = direct_calls(ran, set().union(*called.values()) if called else set())
    targets = direct_calls(ran, set().union(*(called.get(role, set()) for role in WHEN_THEN)))
    order = (lambda d: (d.file, d.line))
    return ScenarioCalls(api=sorted(api, key=order), targets=sorted(targets, key=order), ran=frozenset(ran))


def declaring_type(declaration: GoDeclaration) -> str:
    return f"{declaration.package}.{declaration.owner}" if declaration.owner else declaration.package


def interface_groups(targets: list[GoDeclaration]) -> list[InterfaceGroup]:
    groups: dict[tuple[str, str], list[GoDeclaration]] = {}
    for declaration in targets:
        groups.setdefault((declaring_type(declaration), declaration.file), []).append(declaration)
    return [InterfaceGroup(declaring_type=owner, file=file,
                           declarations=[d.declaration() for d in sorted(members, key=lambda d: d.line)])
            for (owner, file), members in sorted(groups.items())]
