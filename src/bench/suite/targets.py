"""Requirement-targeted mutants: which mutants a project's suite score is measured on.

TestSuiteBench (§2.2, §B.2) keeps a mutant only when it breaks one requirement narrowly:
killed by exactly its targeted reference test, and by few unrelated tests. We have no
generated mutants per requirement; we have the ground-truth kill matrix (``GoldTest.kills``
per scenario) and a feature file per scenario, so the feature is the requirement unit and
the rule is read off the matrix:

1. **Candidate.** Mutant ``m`` is a candidate target of scenario ``s`` (feature ``F``) when
   ``s`` is the only scenario of ``F`` that kills ``m``. A mutant two scenarios of ``F`` kill
   does not single out one requirement of ``F``, so it is no candidate of ``F``.
2. **Drop.** A candidate is dropped when the share of scenarios of the *other* features that
   kill it exceeds ``max_unrelated_share`` (20 %). With no other feature nothing is unrelated,
   so nothing is dropped. The comparison is exact (``Fraction``): 1 of 5 is not above 20 %.
3. **Assign.** Each feature gets at most ``max_targets_per_feature`` (6) target scenarios and
   each scenario at most one mutant; a mutant is the target of at most one pair project-wide
   (it is one entry in the mutation score's denominator, even when two features both single
   it out). Among the eligible pairs this is a min-cost max-flow, as the paper's: first as many
   targets as the capacities allow, then the least total cost, where a pair costs how many
   unrelated scenarios kill its mutant. Remaining ties are broken by ids: every pair also costs
   ``2**rank`` in (scenario id, mutant id) order, a weight too small to outweigh one unrelated
   kill, so the optimum is unique and does not depend on the solver's path order (the
   selection avoids the pair that sorts last among any two equally good selections).

Greedy selection (cheapest pair first) is not enough once features share a mutant: taking
the shared mutant for one feature can leave the other only an expensive pair, or none.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping
from fractions import Fraction

from pydantic import Field

from bench.flow import FlowGraph
from bench.model import Frozen

MAX_UNRELATED_SHARE = 0.2
MAX_TARGETS_PER_FEATURE = 6


class TargetPair(Frozen):
    """One target: the reference scenario that singles the mutant out, and the mutant."""

    scenario: str
    mutant: str
    unrelated_kills: int = Field(description="scenarios of other features that kill the mutant (the pair's cost)")


class FeatureTargets(Frozen):
    feature_file: str
    scenarios: int = Field(description="reference scenarios of the feature")
    candidates: int = Field(description="mutants exactly one scenario of the feature kills")
    dropped: int = Field(description="candidates killed by more than the allowed share of other features' scenarios")
    eligible: int = Field(description="candidates - dropped: what the assignment chose from")
    targets: list[TargetPair] = Field(description="the chosen pairs, by scenario id")


class TargetSelection(Frozen):
    """The requirement-targeted mutants of one project."""

    max_unrelated_share: float
    max_targets_per_feature: int
    scenarios: int = Field(description="reference scenarios of the project")
    killed_mutants: int = Field(description="distinct mutants at least one reference scenario kills")
    features: list[FeatureTargets] = Field(description="every feature with a scenario, by feature file")

    @property
    def pairs(self) -> list[TargetPair]:
        return [pair for feature in self.features for pair in feature.targets]

    @property
    def mutants(self) -> list[str]:
        """The target mutant ids, sorted: the mutation score's denominator."""
        return sorted(pair.mutant for pair in self.pairs)

    def mutants_by_feature(self) -> dict[str, list[str]]:
        return {f.feature_file: sorted(p.mutant for p in f.targets) for f in self.features}


def select_targets(features: Mapping[str, str], kills: Mapping[str, Collection[str]], *,
                   max_unrelated_share: float = MAX_UNRELATED_SHARE,
                   max_targets_per_feature: int = MAX_TARGETS_PER_FEATURE) -> TargetSelection:
    """Pick the requirement-targeted mutants of one project (rules in the module docstring).

    ``features`` maps every reference scenario (instance id) to its feature file; ``kills``
    maps a scenario to the mutant ids it kills (a scenario absent from ``kills`` kills nothing).
    """
    if not 0.0 <= max_unrelated_share <= 1.0:
        raise ValueError(f"max_unrelated_share must lie in [0, 1], not {max_unrelated_share}")
    if max_targets_per_feature < 0:
        raise ValueError(f"max_targets_per_feature must be >= 0, not {max_targets_per_feature}")
    unknown = sorted(set(kills) - set(features))
    if unknown:
        raise ValueError(f"kills for scenarios with no feature: {', '.join(unknown[:5])}")
    # str() first: the user's 0.2 is 1/5, not the binary float just above it
    limit = Fraction(str(max_unrelated_share))

    scenarios_of: dict[str, list[str]] = defaultdict(list)
    for scenario, feature in features.items():
        scenarios_of[feature].append(scenario)
    killers: dict[str, set[str]] = defaultdict(set)  # mutant -> scenarios that kill it
    for scenario, mutants in kills.items():
        for mutant in mutants:
            killers[mutant].add(scenario)

    eligible: dict[str, list[TargetPair]] = {}
    counts: dict[str, tuple[int, int]] = {}
    for feature, scenarios in scenarios_of.items():
        own = set(scenarios)
        others = len(features) - len(own)
        pairs: list[TargetPair] = []
        candidates = dropped = 0
        for mutant, by in killers.items():
            inside = by & own
            if len(inside) != 1:
                continue
            candidates += 1
            unrelated = len(by) - 1
            if others and Fraction(unrelated, others) > limit:
                dropped += 1
                continue
            pairs.append(TargetPair(scenario=next(iter(inside)), mutant=mutant, unrelated_kills=unrelated))
        eligible[feature] = pairs
        counts[feature] = (candidates, dropped)

    chosen = _assign(eligible, max_targets_per_feature)
    return TargetSelection(
        max_unrelated_share=max_unrelated_share,
        max_targets_per_feature=max_targets_per_feature,
        scenarios=len(features),
        killed_mutants=len(killers),
        features=[FeatureTargets(feature_file=feature, scenarios=len(scenarios_of[feature]),
                                 candidates=counts[feature][0], dropped=counts[feature][1],
                                 eligible=len(eligible[feature]),
                                 targets=sorted(chosen.get(feature, []), key=lambda p: (p.scenario, p.mutant)))
                  for feature in sorted(scenarios_of)])


def _assign(eligible: Mapping[str, list[TargetPair]], per_feature: int) -> dict[str, list[TargetPair]]:
    """Min-cost max-flow source → feature (cap ``per_feature``) → scenario (cap 1) → mutant
    (cap 1) → sink, with the lexicographic cost (unrelated kills, then 2**rank) as one integer."""
    if per_feature == 0:
        return {}
    # A mutant only one scenario is eligible for competes with nothing, so that scenario takes
    # at most its best such mutant (least cost, then least id): swapping any other one for it
    # strictly lowers the objective, so the unique optimum never uses the others. Pruning them
    # keeps the graph (and the 2**rank integers) near the size of the scenarios, not the mutants.
    wanted_by: dict[str, int] = defaultdict(int)
    for ps in eligible.values():
        for pair in ps:
            wanted_by[pair.mutant] += 1
    best_unshared: dict[str, TargetPair] = {}
    pairs: list[tuple[str, TargetPair]] = []
    for feature, ps in eligible.items():
        for pair in ps:
            if wanted_by[pair.mutant] > 1:
                pairs.append((feature, pair))
                continue
            best = best_unshared.get(pair.scenario)
            if best is None or (pair.unrelated_kills, pair.mutant) < (best.unrelated_kills, best.mutant):
                best_unshared[pair.scenario] = pair
    pairs += [(feature, pair) for feature, ps in eligible.items() for pair in ps
              if best_unshared.get(pair.scenario) is pair]
    pairs.sort(key=lambda fp: (fp[1].scenario, fp[1].mutant))
    if not pairs:
        return {}
    # the tie-break weights sum to < 2**len(pairs): one unrelated kill outweighs them all
    unit = 1 << len(pairs)
    graph = FlowGraph()
    source, sink = graph.node(("source",)), graph.node(("sink",))
    pair_edges: list[tuple[int, str, TargetPair]] = []
    for feature in sorted(eligible):
        if eligible[feature]:
            graph.edge(source, graph.node(("feature", feature)), per_feature, 0)
    for rank, (feature, pair) in enumerate(pairs):
        scenario = ("scenario", pair.scenario)
        if scenario not in graph.ids:
            graph.edge(graph.node(("feature", feature)), graph.node(scenario), 1, 0)
        mutant = ("mutant", pair.mutant)
        if mutant not in graph.ids:
            graph.edge(graph.node(mutant), sink, 1, 0)
        edge = graph.edge(graph.node(scenario), graph.node(mutant), 1, pair.unrelated_kills * unit + (1 << rank))
        pair_edges.append((edge, feature, pair))
    graph.min_cost_max_flow(source, sink)
    chosen: dict[str, list[TargetPair]] = defaultdict(list)
    for edge, feature, pair in pair_edges:
        if graph.cap[edge] == 0:  # the unit of capacity went into the flow
            chosen[feature].append(pair)
    return dict(chosen)
