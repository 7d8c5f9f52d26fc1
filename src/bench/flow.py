"""Min-cost max-flow over integer costs: the exact assignments of suite targets
(``bench.suite.targets``) and of predicted to gold requirements (``bench.history.diagnostics``)."""

from __future__ import annotations

import heapq


class FlowGraph:
    """A residual graph with integer (arbitrary-size) costs: edge ``e`` and its reverse ``e ^ 1``."""

    def __init__(self) -> None:
        self.ids: dict[tuple[str, ...], int] = {}
        self.adj: list[list[int]] = []
        self.to: list[int] = []
        self.cap: list[int] = []
        self.cost: list[int] = []

    def node(self, key: tuple[str, ...]) -> int:
        if key not in self.ids:
            self.ids[key] = len(self.adj)
            self.adj.append([])
        return self.ids[key]

    def edge(self, u: int, v: int, cap: int, cost: int) -> int:
        index = len(self.to)
        for a, b, c, w in ((u, v, cap, cost), (v, u, 0, -cost)):
            self.adj[a].append(len(self.to))
            self.to.append(b)
            self.cap.append(c)
            self.cost.append(w)
        return index

    def min_cost_max_flow(self, source: int, sink: int) -> int:
        """Successive shortest paths, Dijkstra on reduced costs (Johnson potentials).

        Every cost starts non-negative, so zero potentials are valid. Each round stops once the
        sink is settled and raises every potential by min(distance, sink distance) (as AtCoder
        Library's min-cost flow does), which keeps every residual reduced cost non-negative.
        """
        n = len(self.adj)
        potential = [0] * n
        flow = 0
        while True:
            dist: list[int | None] = [None] * n
            via = [-1] * n
            dist[source] = 0
            heap = [(0, source)]
            while heap:
                d, u = heapq.heappop(heap)
                if d != dist[u]:
                    continue
                if u == sink:
                    break
                for e in self.adj[u]:
                    if self.cap[e] <= 0:
                        continue
                    v = self.to[e]
                    nd = d + self.cost[e] + potential[u] - potential[v]
                    dv = dist[v]
                    if dv is None or nd < dv:
                        dist[v], via[v] = nd, e
                        heapq.heappush(heap, (nd, v))
            reach = dist[sink]
            if reach is None:
                return flow
            for v in range(n):
                dv = dist[v]
                potential[v] += reach if dv is None or dv > reach else dv
            push: int | None = None
            v = sink
            while v != source:
                e = via[v]
                push = self.cap[e] if push is None else min(push, self.cap[e])
                v = self.to[e ^ 1]
            assert push is not None  # the path has an edge: the callers' source and sink are distinct nodes
            v = sink
            while v != source:
                e = via[v]
                self.cap[e] -= push
                self.cap[e ^ 1] += push
                v = self.to[e ^ 1]
            flow += push
