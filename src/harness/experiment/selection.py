"""Picking one of an instance's n candidates with a selector (static, judge, oracle, consensus, ...).

Owns ``select_candidate``: the selector's pick for one instance, journaled in
``generations/<arm>@<view>/selection-<selector>.jsonl`` with what it cost (a judge's calls go to
``selection-ledger.jsonl``), so a rerun never asks a judge twice; a judge the provider interrupted is not
journaled and is asked again. The selectors themselves live in ``harness.strategies.selectors``.

Its own module because two stages ask for picks: the generation levels of a decomposing arm (the first
selector's pick is what dependants are given) and the configurations written per selector.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from bench.journal import append_line
from bench.model import InstanceResult, Prediction
from harness.experiment.journal import selection_journal
from harness.experiment.plan import ArmView
from harness.experiment.providers import ledgered_model

if TYPE_CHECKING:
    from harness.experiment.runner import ExperimentRunner


def select_candidate(runner: ExperimentRunner, av: ArmView, selector: str, instance_id: str,
                     cands: dict[int, Prediction], results: dict[int, dict[str, InstanceResult]]) -> int:
    """The candidate a selector picks for one instance (journaled: a judge is never asked twice)."""
    if not cands:
        return 1
    path = runner.run_dir / "generations" / av.name / f"selection-{selector}.jsonl"
    journal = selection_journal(path)
    if instance_id in journal:
        return int(journal[instance_id]["chosen"])
    from harness.llm import Ledger
    from harness.strategies.selectors import Candidate, SelectionContext, select
    from harness.views import materialize

    instance = runner.dataset.instance(instance_id)
    project = runner.dataset.project(instance.project)
    model = None
    ledger = Ledger(path.with_name("selection-ledger.jsonl"), {"instance_id": instance_id, "selector": selector})
    options = runner.options(av.arm, av.view)
    if selector == "judge":
        model = ledgered_model(options, ledger)
    view_root = materialize(runner.dataset, instance_id, av.view).root if selector != "oracle" else None
    context = SelectionContext(instance=instance, features_dir=project.features_dir, view_root=view_root,
                               model=model, framework=project.framework,
                               results={k: r[instance_id] for k, r in results.items() if instance_id in r}
                               if selector == "oracle" else None)
    selection = select(selector, [Candidate(index=k, prediction=p) for k, p in sorted(cands.items())], context)
    totals = ledger.totals()
    record = {"instance_id": instance_id, **selection.model_dump(mode="json"),
              "cost_usd": totals["cost_usd"], "calls": totals["calls"]}
    if selector == "judge" and "provider interrupted" in selection.reason:
        return selection.chosen  # not journaled: a rerun asks the judge again instead of keeping the fallback
    append_line(path, json.dumps(record))
    return selection.chosen
