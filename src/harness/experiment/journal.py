"""The run directory's journals: what makes ``req2test run`` resumable after a kill -9.

Owns claiming a run directory for one plan (``claim_run_dir``: ``plan.json`` and the verbatim
``experiment.yaml``; a directory of another experiment is refused, a raised budget is not another
experiment: ``resumable``), and reading back what a killed run already finished: a candidate journal
(``generations/<arm>@<view>/c<k>/predictions.jsonl``: ``reopen_candidate_journal`` then
``candidate_journal``), an arm's enrichment journal and its selection journals.

Writing a journal line stays with the stage that produced it (one fsynced line as each unit finishes);
this module only decides what a rerun keeps, so every stage resumes by the same rules.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.journal import Journal, drop_torn_tail, read_dicts
from bench.model import Prediction
from harness.experiment.config import ExperimentError
from harness.experiment.units import EnrichmentOutcome
from harness.generate import set_aside_interrupted

if TYPE_CHECKING:
    from harness.experiment.plan import ExperimentPlan


def claim_run_dir(run_dir: Path, plan: ExperimentPlan, text: str) -> None:
    """Make ``run_dir`` this plan's (a rerun of the same plan continues in it); ``text``: the experiment file."""
    run_dir.mkdir(parents=True, exist_ok=True)
    plan_path = run_dir / "plan.json"
    mine = plan.model_dump(mode="json")
    if plan_path.is_file():
        previous = json.loads(plan_path.read_text(encoding="utf-8"))
        keys = ("experiment", "dataset_card_sha256", "instances", "provider_script_sha256", "prompt_files_sha256")
        if any(resumable(previous).get(k) != resumable(mine).get(k) for k in keys):
            raise ExperimentError(f"{run_dir} holds a run of another experiment (or the file changed); "
                                  "use a new output directory")
    # (re)written: the same run may come back with a raised budget or another baseline, and the report reads it
    plan_path.write_text(json.dumps(mine, indent=2) + "\n", encoding="utf-8")
    (run_dir / "experiment.yaml").write_text(text, encoding="utf-8")


def resumable(plan: dict[str, Any]) -> dict[str, Any]:
    """The plan without what a rerun may change: the run's budget (raised to continue a run) and the
    report's baseline (it changes no generation or evaluation)."""
    copy = json.loads(json.dumps(plan))
    copy.get("experiment", {}).get("limits", {}).pop("max_run_cost", None)
    copy.get("experiment", {}).pop("baseline", None)
    return copy


def reopen_candidate_journal(path: Path) -> None:
    """Before a candidate journal is appended to again: its torn tail dropped, the units that were in
    flight set aside (a rerun generates them again)."""
    drop_torn_tail(path)
    set_aside_interrupted(path)


def candidate_journal(path: Path) -> dict[str, Prediction]:
    """A candidate journal's predictions (a torn tail of a kill: that unit runs again)."""
    return Journal(path, Prediction, key=lambda prediction: prediction.instance_id, strict=False, repair=False).done


def enrichment_journal(path: Path) -> dict[str, EnrichmentOutcome]:
    """An arm's clarified requirements, by instance."""
    return dict(Journal(path, EnrichmentOutcome, key=lambda outcome: outcome.instance_id).done)


def selection_journal(path: Path) -> dict[str, dict[str, Any]]:
    """A selector's picks, by instance (a judge is never asked twice)."""
    return {str(record["instance_id"]): record for record in read_dicts(path) if "instance_id" in record}
