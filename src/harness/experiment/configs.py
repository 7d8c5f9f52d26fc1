"""What a scenario-mode run reports: one directory per configuration, and the run's report.

Owns turning an arm's candidates and their results into its reported configurations
(``configs/<name>/``: ``config.json``, ``predictions.jsonl``, ``results.jsonl``, ``summary.json``): the arm
itself, one per further selector and ``/single`` (candidate 1 alone) when n > 1, each charged what it
cost (``costs.summed``, ``costs.with_extra_cost``) and carrying its submission refusals
(``write_configs``, ``write_config``); the headline ``RunOutcome`` lists (``headline``); and
``report.md``/``report.html`` over them (``report``). The record written here is the one
``bench.runs`` reads for compare, report and submission.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.dataset import Dataset
from bench.model import InstanceResult, Prediction
from bench.runs import ConfigRecord, config_dir_name  # one record: written here, read by compare/report
from bench.summary import summarize_run
from harness.experiment.config import Arm
from harness.experiment.costs import selection_costs, summed, with_extra_cost
from harness.experiment.plan import ArmView
from harness.experiment.providers import answered_by_run_provider
from harness.experiment.selection import select_candidate
from harness.experiment.units import write_atomic
from harness.generate import GenerateOptions, load_agent
from harness.submission_rules import ConfigFacts, refusals

if TYPE_CHECKING:
    from harness.experiment.runner import ExperimentRunner


def write_configs(runner: ExperimentRunner, av: ArmView, options: GenerateOptions,
                  candidates: dict[str, dict[int, Prediction]],
                  results: dict[int, dict[str, InstanceResult]]) -> list[ConfigRecord]:
    arm = av.arm
    from harness.sandbox.policy import load_policy

    policy = load_policy(options.sandbox)
    isolated = policy.backend != "local"
    base: dict[str, Any] = {
        "arm": arm.name, "view": av.view, "epoch": None if av.epoch is None else av.epoch + 1,
        "n": arm.n, "agent": arm.agent, "model": arm.model,
        "reasoning": arm.reasoning, "paragraphs": arm.paragraphs, "sandbox": options.sandbox, "isolated": isolated,
        "sampling": {k: v for k, v in (("temperature", arm.temperature), ("seed", arm.seed),
                                      ("max_tokens", arm.max_tokens)) if v is not None},
        "strategies": {"enrich": arm.enrich, "decompose": arm.decompose, "selectors": arm.selectors}}
    facts = ConfigFacts(agent=arm.agent, reads_ground_truth=reads_ground_truth(runner.dataset, arm),
                        decompose=arm.decompose, sandbox=options.sandbox, sandbox_isolates=isolated,
                        black_box_oracle=arm.black_box_oracle,
                        scripted_provider=answered_by_run_provider(options))
    written = []
    ids = runner.plan.instances
    if arm.n == 1:
        picks = {i: 1 for i in ids}
        written.append(write_config(runner, ConfigRecord(name=av.name, role="arm",
                                                         submission_refusals=refusals(facts), **base),
                                    ids, candidates, results, picks, None))
        return written
    for position, selector in enumerate(arm.selectors):
        picks = {i: select_candidate(runner, av, selector, i, candidates.get(i, {}), results) for i in ids}
        name = av.name if position == 0 else f"{av.name}/{selector}"
        role = "arm" if position == 0 else "selector"
        own = refusals(facts.model_copy(update={"role": role, "selector": selector}))
        written.append(write_config(
            runner, ConfigRecord(name=name, role=role, selector=selector, submission_refusals=own, **base),
            ids, candidates, results, picks, selector))
    single = ConfigRecord(name=f"{av.name}/single", role="single",
                          submission_refusals=refusals(facts.model_copy(update={"role": "single"})),
                          **{**base, "n": 1})
    written.append(write_config(runner, single, ids, candidates, results, {i: 1 for i in ids}, None))
    return written


def write_config(runner: ExperimentRunner, record: ConfigRecord, ids: list[str],
                 candidates: dict[str, dict[int, Prediction]], results: dict[int, dict[str, InstanceResult]],
                 picks: dict[str, int], selector: str | None) -> ConfigRecord:
    out = runner.run_dir / "configs" / config_dir_name(record.name)
    out.mkdir(parents=True, exist_ok=True)
    charged = selection_costs(runner.run_dir / "generations" / f"{record.arm}@{record.view}", selector)
    lines, rows = [], []
    for instance_id in ids:
        cands = candidates.get(instance_id, {})
        k = picks[instance_id]
        if k in cands:
            prediction = cands[k]
            if selector is not None:
                prediction = summed(prediction, list(cands.values()), selector, k,
                                    charged.get(instance_id, (0.0, 0)))
            enrichment = runner.costs.enrichment.get((f"{record.arm}@{record.view}", instance_id))
            if enrichment is not None:  # the clarified requirement was paid for once per instance
                prediction = with_extra_cost(prediction, *enrichment, label="enrichment_cost_usd")
            lines.append(prediction.model_dump_json() + "\n")
            # the row carries what this configuration paid (all n candidates + selection), not one candidate
            rows.append(results[k][instance_id].model_copy(update={"metadata": prediction.metadata}))
        else:
            rows.append(results[k][instance_id])
    (out / "config.json").write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
    write_atomic(out / "predictions.jsonl", "".join(lines))
    write_atomic(out / "results.jsonl", "".join(r.model_dump_json() + "\n" for r in rows))
    digest = hashlib.sha256("".join(lines).encode()).hexdigest()
    summary = summarize_run(rows, dataset_name=runner.dataset.card.name, predictions_sha256=digest)
    summary["config"] = record.name
    write_atomic(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    return record


def reads_ground_truth(dataset: Dataset, arm: Arm) -> bool:
    """The arm's agent reads the ground truth (a calibration agent): a fact its records carry."""
    return bool(getattr(load_agent(arm.agent, dataset.root), "uses_ground_truth", False))


def headline(run_dir: Path, record: ConfigRecord) -> dict[str, Any]:
    summary = json.loads((run_dir / "configs" / config_dir_name(record.name) / "summary.json").read_text())
    return {"config": record.name, "summary": summary}


def report(runner: ExperimentRunner) -> list[str]:
    try:
        from bench.report import build_report, render_html, render_markdown
        from bench.runlog import read_run
    except ImportError:
        return []
    from bench.explorer import write_instance_pages

    configs = read_run(runner.run_dir).configs  # in the experiment's arm order, paired against its baseline
    built = build_report(configs, title=f"req2test run: {runner.plan.name}")
    links = write_instance_pages(configs, runner.run_dir)
    (runner.run_dir / "report.md").write_text(render_markdown(built), encoding="utf-8")
    (runner.run_dir / "report.html").write_text(render_html(built, links), encoding="utf-8")
    return [str(runner.run_dir / "report.md"), str(runner.run_dir / "report.html")]
