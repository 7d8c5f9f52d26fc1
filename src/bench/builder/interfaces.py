"""The language-neutral part of a scenario's API calls and target-hidden map, shared by the
frameworks whose calls are established statically and dynamically (cucumber-js, godog): a
framework's own reader decides which production declarations a step's code calls and which
ran; what is recorded from them, and which bodies a target-hidden view hides, is the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from bench.model import BodySpan
from bench.model import Declaration as DeclarationModel


class Declaration(Protocol):
    """A production function or method as the frameworks' declaration indexes describe it."""

    @property
    def file(self) -> str: ...

    @property
    def line(self) -> int: ...

    @property
    def key(self) -> str: ...


class DeclarationRecord:
    """What a framework's record of one production declaration derives from its fields
    (``file``, ``qualname``, ``line``, ``signature``, ``kind``, ``body_start``, ``body_end``): its
    key, the model the dataset stores and the span a view hides. A mixin without fields, for a
    dataclass or a pydantic model alike."""

    @property
    def key(self) -> str:
        return f"{self.file}:{self.qualname}"  # type: ignore[attr-defined]

    def declaration(self) -> DeclarationModel:
        return DeclarationModel(file=self.file, qualname=self.qualname, line=self.line,  # type: ignore[attr-defined]
                                signature=self.signature, kind=self.kind)  # type: ignore[attr-defined]

    def body_span(self) -> BodySpan:
        return BodySpan(file=self.file, qualname=self.qualname, def_line=self.line,  # type: ignore[attr-defined]
                        body_start=self.body_start, body_end=self.body_end)  # type: ignore[attr-defined]


D = TypeVar("D", bound=Declaration)


@dataclass(frozen=True)
class ScenarioCalls(Generic[D]):
    api: list[D]  # called directly by any step
    targets: list[D]  # called directly by When/Then steps (the framework's rule)
    ran: frozenset[D]  # every production declaration the run executed

    @property
    def api_keys(self) -> list[str]:
        return sorted({d.key for d in self.api})

    @property
    def target_keys(self) -> list[str]:
        return sorted({d.key for d in self.targets})


def hidden_declarations(calls: ScenarioCalls[D], shared: set[str], load_time: set[str]) -> list[D]:
    """The target-hidden map of one scenario: its target interfaces plus every declaration its
    run executed, minus shared infrastructure (``shared``: what most instances run) and what
    runs while the suite loads (``load_time``: hiding it would break loading)."""
    chosen = {(d.file, d.line): d for d in calls.targets if d.key not in load_time}
    for declaration in calls.ran:
        if declaration.key not in shared and declaration.key not in load_time:
            chosen.setdefault((declaration.file, declaration.line), declaration)
    return sorted(chosen.values(), key=lambda d: (d.file, d.line))
