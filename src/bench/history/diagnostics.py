"""Diagnostics of a takeover answer against the gold requirement state (ReqMemBench §4), each small
enough to check by hand:

- **precision / recall / F1** over sets: the atoms an answer calls relevant to a request, the
  commits it cites as evidence. Undefined shares are None (nothing predicted: no precision;
  nothing to find: no recall), never NaN; F1 is 0 when there was something to find and none of it
  was found, None only when there was nothing to find;
- **attribute reconstruction**: for each gold atom, the share of its attributes (steps, examples,
  tags, deferred) the answer states exactly; an atom the answer leaves out scores 0;
- **post-state score** 2·Σs / (|R̂| + |R|): predicted requirement statements R̂ matched one-to-one
  to gold statements R (the matching that maximises the summed similarity s ∈ [0, 1], found
  exactly by min-cost flow), so a duplicated or missing statement costs what it should.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from pydantic import Field

from bench.flow import FlowGraph
from bench.model import Frozen

ATTRIBUTES = ("steps", "examples", "tags", "deferred")
SCALE = 1_000_000  # similarities become integer costs in the flow at this resolution


class SetScore(Frozen):
    predicted: int
    gold: int
    correct: int
    precision: float | None
    recall: float | None
    f1: float | None


class PostStateScore(Frozen):
    score: float | None = Field(description="2·Σs / (|R̂| + |R|); None when both are empty")
    pairs: list[tuple[int, int, float]] = Field(description="(predicted index, gold index, similarity) matched")


def set_score(predicted: Collection[str], gold: Collection[str]) -> SetScore:
    p, g = set(predicted), set(gold)
    correct = len(p & g)
    precision = correct / len(p) if p else None
    recall = correct / len(g) if g else None
    if recall == 0.0:  # something to find and none of it found (or nothing predicted): F1 0
        f1 = 0.0
    elif precision is None or recall is None:
        f1 = None
    else:
        f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    return SetScore(predicted=len(p), gold=len(g), correct=correct, precision=precision, recall=recall, f1=f1)


def attribute_reconstruction(predicted: Mapping[str, Mapping[str, Any]],
                             gold: Mapping[str, Mapping[str, Any]],
                             attributes: Sequence[str] = ATTRIBUTES) -> float | None:
    """Mean over gold atoms of the share of ``attributes`` the prediction states exactly."""
    if not gold:
        return None
    total = 0.0
    for atom_id, truth in gold.items():
        answer = predicted.get(atom_id)
        if answer is None:
            continue
        total += sum(1 for a in attributes if a in answer and answer[a] == truth.get(a)) / len(attributes)
    return total / len(gold)


def tokens(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def token_jaccard(a: str, b: str) -> float:
    """|A ∩ B| / |A ∪ B| over lower-case word tokens; two empty statements are identical (1)."""
    x, y = tokens(a), tokens(b)
    if not x and not y:
        return 1.0
    return len(x & y) / len(x | y)


def post_state_score(predicted: Sequence[str], gold: Sequence[str],
                     similarity: Callable[[str, str], float] = token_jaccard) -> PostStateScore:
    """2·Σs / (|R̂| + |R|) under the one-to-one matching with the largest Σs."""
    if not predicted and not gold:
        return PostStateScore(score=None, pairs=[])
    if not predicted or not gold:
        return PostStateScore(score=0.0, pairs=[])
    sims = [[max(0.0, min(1.0, float(similarity(p, g)))) for g in gold] for p in predicted]
    # complete bipartite graph, cost SCALE - s: a maximum matching of least cost has the largest Σs
    # (every pair can be matched, a pair with s = 0 adds nothing, so maximum cardinality loses nothing)
    graph = FlowGraph()
    source, sink = graph.node(("source",)), graph.node(("sink",))
    for i in range(len(predicted)):
        graph.edge(source, graph.node(("p", str(i))), 1, 0)
    for j in range(len(gold)):
        graph.edge(graph.node(("g", str(j))), sink, 1, 0)
    edges = {}
    for i, row in enumerate(sims):
        for j, s in enumerate(row):
            edges[(i, j)] = graph.edge(graph.node(("p", str(i))), graph.node(("g", str(j))), 1,
                                       SCALE - round(s * SCALE))
    graph.min_cost_max_flow(source, sink)
    pairs = [(i, j, sims[i][j]) for (i, j), e in sorted(edges.items()) if graph.cap[e] == 0]
    return PostStateScore(score=2 * sum(s for _, _, s in pairs) / (len(predicted) + len(gold)), pairs=pairs)
