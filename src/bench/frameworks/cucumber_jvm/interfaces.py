"""API calls, target interfaces and the target-hidden map of a Cucumber-JVM scenario.

As for cucumber-js and godog, a call is established twice: statically, the step method's code
calls it (``declarations.CallReader``: ``new T(...)`` and ``T.m(...)`` through the step file's
imports, ``x.m(...)`` by method name, arity narrowing both), and dynamically, the scenario's
JaCoCo coverage shows the declaration ran (``JavaProductionDeclarations.ran``). A method name
several production types declare counts for each of them that ran, and so do overloads of one
arity (the same over-approximation for the ground truth and every prediction).

- API calls: the public declarations the scenario's step methods (and the test-side helpers
  they reach, as the caller passes them) call and that ran;
- target interfaces: those of the When/Then steps, grouped by declaring type
  (``<package>.<Outer.Inner>``, the class). As cucumber-js does, a constructor the Then steps
  alone call builds an expected value (``assertThat(actual).isEqualTo(new Address(...))``) and is
  no target: a constructor is a target only when a When step constructs its type too (any of
  its constructors, ``new T(...)`` or ``T::new``);
- target-hidden map: the targets plus every declaration the scenario ran, minus shared
  infrastructure and what runs while the suite loads — cucumber-js's rule and code
  (``bench.builder.interfaces``).
"""

from __future__ import annotations

from collections.abc import Iterable

from bench.builder.interfaces import ScenarioCalls, hidden_declarations
from bench.frameworks.call_reader import HandlerSpan
from bench.frameworks.cucumber_jvm.declarations import CallReader, JavaDeclaration
from bench.model import InterfaceGroup

WHEN_THEN = ("when", "then")

__all__ = [
    "ScenarioCalls",
    "declaring_type",
    "direct_calls",
    "hidden_declarations",
    "interface_groups",
    "scenario_calls",
]


def direct_calls(ran: set[JavaDeclaration], candidates: Iterable[JavaDeclaration]) -> set[JavaDeclaration]:
    """Public declarations the step methods call that ran."""
    return {d for d in candidates if d.public and d in ran}


def scenario_calls(
    ran: set[JavaDeclaration], reader: CallReader, sites: list[tuple[HandlerSpan, str]]
) -> ScenarioCalls[JavaDeclaration]:
    """``sites``: the step methods the scenario's steps ran and the test-side helpers each
    reaches, with the role of the step (given/when/then); ``ran``: ``declarations.ran(covered)``
    of the scenario's run. The result's declarations are ``JavaDeclaration``s."""
    called: dict[str, set[JavaDeclaration]] = {}
    for span, role in sites:
        called.setdefault(role, set()).update(reader.calls(span))
    api = direct_calls(ran, set().union(*called.values()) if called else set())
    when_then = direct_calls(ran, set().union(*(called.get(role, set()) for role in WHEN_THEN)))
    constructed = {declaring_type(d) for d in called.get("when", ()) if d.kind == "constructor"}
    targets = {d for d in when_then if d.kind != "constructor" or declaring_type(d) in constructed}
    order = lambda d: (d.file, d.line)
    return ScenarioCalls(api=sorted(api, key=order), targets=sorted(targets, key=order), ran=frozenset(ran))


def declaring_type(declaration: JavaDeclaration) -> str:
    """The canonical name of the class, interface, enum or record that declares it."""
    return declaration.type_name


def interface_groups(targets: list[JavaDeclaration]) -> list[InterfaceGroup]:
    groups: dict[tuple[str, str], list[JavaDeclaration]] = {}
    for declaration in targets:
        groups.setdefault((declaring_type(declaration), declaration.file), []).append(declaration)
    return [
        InterfaceGroup(
            declaring_type=owner,
            file=file,
            declarations=[d.declaration() for d in sorted(members, key=lambda d: d.line)],
        )
        for (owner, file), members in sorted(groups.items())
    ]
