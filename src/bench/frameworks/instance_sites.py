"""Which step definitions of a test side are one instance's, and which roles bind them: what the
calibration tests (oracle, empty, then-stripped) of every step-definition framework are cut from,
in the builder (the infrastructure and then-stripped kills) and in ``calibration_files``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar

from bench.model import GoldTest


class _Site(Protocol):
    @property
    def file(self) -> str: ...

    @property
    def line(self) -> int: ...


S = TypeVar("S", bound=_Site)


def instance_sites(sites: Iterable[S], record: GoldTest) -> list[S]:
    """The ``sites`` (step definitions of a test side, in its order) that ``record``'s scenario binds."""
    wanted = {(d.file, d.line) for d in record.step_definitions}
    return [s for s in sites if (s.file, s.line) in wanted]


def binding_roles(record: GoldTest) -> dict[str, set[str]]:
    """``file:line`` of each step definition ``record`` binds -> the roles (given, when, then) of
    the steps bound to it: a definition only Then steps use is what the then-stripped test empties."""
    roles: dict[str, set[str]] = {}
    for binding in record.bindings:
        roles.setdefault(f"{binding.binding.file}:{binding.binding.line}", set()).add(binding.role)
    return roles


__all__ = ["binding_roles", "instance_sites"]
