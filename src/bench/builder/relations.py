"""Requirement relations and identical-implementation groups (docs/building.md#rules-that-needed-a-decision).

Rules, stated so a user can check them:
- ``A variant_of B``: A and B run the same set of step definitions in their Given and
  When steps (nested steps included) and differ only in data or expected outcome.
- ``A depends_on B``: A's Given+When steps run every step definition B runs before
  its checks (B's Given+When set is a strict subset of A's), and B performs an action
  (has at least one When step): B then checks behaviour A relies on, not mere setup
  that B itself never checks (the paper removes such pairs with an LLM judge; this
  structural rule is the offline stand-in).
- groups: instances whose ground-truth step-definition sets are identical; the
  representative is the first id in file/line order (the paper scores one per group).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass


@dataclass(frozen=True)
class RelationInput:
    id: str
    given_when: frozenset[str]
    when: frozenset[str]
    all_definitions: frozenset[str]


@dataclass
class Relations:
    depends_on: dict[str, list[str]]
    variant_of: dict[str, list[str]]
    group_of: dict[str, str]

    @property
    def depends_on_pairs(self) -> int:
        return sum(len(v) for v in self.depends_on.values())

    @property
    def variant_of_pairs(self) -> int:
        return sum(len(v) for v in self.variant_of.values()) // 2

    @property
    def groups(self) -> int:
        return len(set(self.group_of.values()))


def compute_relations(items: list[RelationInput]) -> Relations:
    depends_on: dict[str, list[str]] = defaultdict(list)
    variant_of: dict[str, list[str]] = defaultdict(list)
    by_given_when: dict[frozenset[str], list[str]] = defaultdict(list)
    for item in items:
        by_given_when[item.given_when].append(item.id)
    for ids in by_given_when.values():
        for member in ids:
            variant_of[member] = [other for other in ids if other != member]
    for a in items:
        for b in items:
            if a.id == b.id or not b.when:
                continue
            if b.given_when < a.given_when and b.when <= a.given_when:
                depends_on[a.id].append(b.id)
    group_members: dict[frozenset[str], list[str]] = defaultdict(list)
    for item in items:
        group_members[item.all_definitions].append(item.id)
    group_of = {}
    for members in group_members.values():
        representative = min(members, key=_order_key)
        for member in members:
            group_of[member] = representative
    return Relations(depends_on={k: sorted(v, key=_order_key) for k, v in depends_on.items() if v},
                     variant_of={k: sorted(v, key=_order_key) for k, v in variant_of.items() if v},
                     group_of=group_of)


def _order_key(instance_id: str) -> tuple[str, int]:
    path, _, line = instance_id.rpartition(":")
    return path, int(line) if line.isdigit() else 0
