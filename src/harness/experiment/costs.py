"""What a run spends and what each configuration is charged.

Owns the run's budget (``RunCosts.check_budget``: no generation starts once ``limits.max_run_cost`` is
spent, ``BudgetReached``), its counters (generations run, generations served from the cache) and the
money on the progress display, the clarified requirements' cost per arm and instance, and the charging
of a reported configuration: a best-of-n pick costs all n candidates plus the selection (``summed``), an
enriched one its enrichment (``with_extra_cost``), a selector what its journal says it paid
(``selection_costs``).

One module so the run's money is counted in one place, whichever mode's stage spent it (takeover
deliveries included).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from bench.model import GenerationMetadata, Prediction
from harness.experiment.config import ExperimentError
from harness.experiment.journal import selection_journal

if TYPE_CHECKING:
    from harness.experiment.progress import RunProgress


class BudgetReached(ExperimentError):
    """limits.max_run_cost is spent: no further generation starts; one line."""


class RunCosts:
    """The run's spending so far, held against its cap; ``progress.money`` is the running total."""

    def __init__(self, cap: float | None, progress: RunProgress) -> None:
        self.cap = cap
        self.progress = progress
        self.generated = 0
        self.cached = 0
        self.enrichment: dict[tuple[str, str], tuple[float, int]] = {}  # (arm@view, instance) → (USD, calls)

    def check_budget(self) -> None:
        cap = self.cap
        if cap is not None and self.progress.money >= cap:
            raise BudgetReached(f"the run's budget is spent: ${self.progress.money:.4f} of ${cap:g} "
                                f"(limits.max_run_cost); {self.generated} generation(s) of this run are journaled. "
                                "Raise the cap and rerun to continue")

    def count_done(self, prediction: Prediction, fresh: bool = False) -> None:
        """A generation finished (``fresh``: now, not found in the journal): its cost spent, the bar advanced."""
        meta = prediction.metadata
        if meta is not None and meta.cost_usd:
            self.progress.money += meta.cost_usd
        if fresh:
            if meta is not None and meta.extra.get("cached"):
                self.cached += 1
            else:
                self.generated += 1
        self.progress.advance()


def selection_costs(gen_dir: Path, selector: str | None) -> dict[str, tuple[float, int]]:
    if selector is None:
        return {}
    return {i: (r.get("cost_usd") or 0.0, r.get("calls") or 0)
            for i, r in selection_journal(gen_dir / f"selection-{selector}.jsonl").items()}


def summed(chosen: Prediction, everything: list[Prediction], selector: str, k: int,
           selection: tuple[float, int]) -> Prediction:
    """A best-of-n pick costs all n generations plus the selection: its metadata says so."""
    metas = [p.metadata or GenerationMetadata() for p in everything]
    base = chosen.metadata or GenerationMetadata()
    costs = [m.cost_usd for m in metas]
    total_cost = None if all(c is None for c in costs) else round(sum(c or 0.0 for c in costs) + selection[0], 8)
    meta = base.model_copy(update={
        "wall_seconds": round(sum(m.wall_seconds or 0.0 for m in metas), 3),
        "llm_calls": sum(m.llm_calls or 0 for m in metas) + selection[1],
        "input_tokens": sum(m.input_tokens or 0 for m in metas),
        "output_tokens": sum(m.output_tokens or 0 for m in metas),
        "cached_tokens": sum(m.cached_tokens or 0 for m in metas),
        "cost_usd": total_cost,
        "extra": {**base.extra, "candidate": k, "selector": selector, "candidates": len(everything),
                  "selection_cost_usd": selection[0]}})
    return chosen.model_copy(update={"metadata": meta})


def with_extra_cost(prediction: Prediction, cost: float, calls: int, label: str) -> Prediction:
    meta = prediction.metadata or GenerationMetadata()
    meta = meta.model_copy(update={
        "cost_usd": None if meta.cost_usd is None and not cost else round((meta.cost_usd or 0.0) + cost, 8),
        "llm_calls": (meta.llm_calls or 0) + calls, "extra": {**meta.extra, label: cost}})
    return prediction.model_copy(update={"metadata": meta})
