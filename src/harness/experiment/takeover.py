"""``mode: takeover`` in ``req2test run``: each arm's phase A (answers, frozen before any delivery),
its deliveries (harness.takeover) and their judgement (bench.history.delivery).

Per arm, ``takeover/<arm>/``: ``answers.jsonl`` + ``phase_a.json`` (the answers' sha256, written
before delivery starts) + ``answer_scores.jsonl`` when two-phase; ``predictions.jsonl`` (the
delivered production trees), ``takeover_results.jsonl``, ``takeover_summary.json`` and
``config.json``. Deliveries are journaled (a rerun continues); evaluations are content-addressed.
"""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.cores import per_core
from bench.evaluate import EvaluateOptions
from bench.history.answers import AnswerScore, TakeoverAnswer, score_answer, summarize_answers
from bench.history.delivery import REGRESSION_SAMPLE, TakeoverResult, judge_delivery, summarize_takeover
from bench.history.takeover import TakeoverSet
from bench.journal import Journal, drop_torn_tail
from bench.model import Outcome, Prediction
from bench.runs import config_dir_name
from harness.experiment.config import content_hash
from harness.experiment.units import cache_root, write_atomic
from harness.generate import append_prediction, load_agent
from harness.takeover import generate_takeover, phase_a_answer, takeover_task


def run_takeover_arm(runner: Any, av: Any, executor: Any) -> dict[str, Any]:
    arm = av.arm
    name = arm.name + (f"#e{av.epoch + 1}" if av.epoch is not None else "")  # no view: nothing is hidden
    takeover = TakeoverSet(Path(runner.plan.dataset_dir))
    options = runner._options(arm, "th")
    out = runner.run_dir / "takeover" / config_dir_name(name)
    out.mkdir(parents=True, exist_ok=True)
    targets = [takeover.target(t) for t in runner.plan.instances]
    answers: dict[str, TakeoverAnswer] = {}
    scores: list[AnswerScore] = []
    if arm.two_phase:
        answers = _phase_a(runner, takeover, targets, arm, options, out)
        scores = [score_answer(answers[t.id], t, takeover.gold(t.id), takeover.history) for t in targets]
        write_atomic(out / "answer_scores.jsonl", "".join(s.model_dump_json() + "\n" for s in scores))
    # phase B: deliveries, journaled
    path = out / "predictions.jsonl"
    drop_torn_tail(path)
    predictions = Journal(path, Prediction, key=lambda p: p.instance_id, strict=False, repair=False).done
    todo = [t for t in targets if t.id not in predictions]
    runner.progress.stage(f"deliver {name}", len(targets))
    for _ in range(len(targets) - len(todo)):
        runner.progress.advance()
    from harness.sandbox.policy import load_policy

    policy = load_policy(options.sandbox)
    agent = load_agent(arm.agent, takeover.root)
    if hasattr(agent, "readonly_binds"):
        from harness.agents.external import sandbox_policy_for

        policy = sandbox_policy_for(agent, policy)
    gen_dir = runner.run_dir / "generations" / name

    def deliver(target: Any) -> Prediction:
        runner._check_budget()
        task = takeover_task(takeover, target, arm.history, arm.oracle_state, answers.get(target.id))
        return generate_takeover(takeover, target, agent, task, options, policy, gen_dir)

    workers = max(1, min(len(todo), getattr(executor, "workers", 2) or 2))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for prediction in pool.map(deliver, todo):
            append_prediction(path, prediction)
            predictions[prediction.instance_id] = prediction
            runner._count_done(prediction, fresh=True)  # advances the progress bar too
    results = _evaluate(runner, takeover, targets, predictions, name)
    rows = [results[t.id].model_copy(update={"metadata": predictions[t.id].metadata if t.id in predictions else None})
            for t in targets]
    lines = "".join(predictions[t.id].model_dump_json() + "\n" for t in targets if t.id in predictions)
    write_atomic(out / "takeover_results.jsonl", "".join(r.model_dump_json() + "\n" for r in rows))
    summary = summarize_takeover(rows, takeover.card.name, hashlib.sha256(lines.encode()).hexdigest())
    if arm.two_phase:
        summary["phase_a"] = {**summarize_answers(scores), **_ledger_totals(out / "phase_a_ledger.jsonl")}
        # what the arm paid is both phases
        summary["cost_usd"] = round(summary["cost_usd"] + summary["phase_a"]["cost_usd"], 6)
    summary["config"] = name
    reads_truth = arm.agent == "oracle" or arm.oracle_state != "none"
    record = {"name": name, "mode": "takeover", "arm": arm.name, "agent": arm.agent, "model": arm.model,
              "history": arm.history, "oracle_state": arm.oracle_state, "two_phase": arm.two_phase,
              "sandbox": options.sandbox, "reads_ground_truth": reads_truth,
              "regression_sample": REGRESSION_SAMPLE}
    write_atomic(out / "config.json", json.dumps(record, indent=2) + "\n")
    write_atomic(out / "takeover_summary.json", json.dumps(summary, indent=2) + "\n")
    return summary


def _phase_a(runner: Any, takeover: TakeoverSet, targets: list[Any], arm: Any, options: Any,
             out: Path) -> dict[str, TakeoverAnswer]:
    """Every answer of the arm, then their hash in phase_a.json: written before any delivery, so a
    delivery cannot change the answer it is scored with (a rerun keeps the frozen ones)."""
    path = out / "answers.jsonl"
    drop_torn_tail(path)
    done = Journal(path, TakeoverAnswer, key=lambda a: a.target_id, strict=False, repair=False).done
    frozen = out / "phase_a.json"
    if frozen.is_file() and all(t.id in done for t in targets):
        return done
    runner.progress.stage(f"phase A {arm.name}", len(targets))
    for target in targets:
        if target.id not in done:
            task = takeover_task(takeover, target, arm.history, "pre" if arm.oracle_state == "pre" else "none", None)
            answer, _ = phase_a_answer(arm.agent, takeover, target, task, options.model, options.limits,
                                       out / "phase_a_ledger.jsonl")
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(answer.model_dump_json() + "\n")
            done[target.id] = answer
        runner.progress.advance()
    write_atomic(frozen, json.dumps({"answers": len(done), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()},
                                    indent=2) + "\n")
    return done


def _ledger_totals(path: Path) -> dict[str, Any]:
    """Phase A's model calls, tokens and USD (every call, a rerun's included: they were paid)."""
    calls = tokens_in = tokens_out = 0
    cost = 0.0
    for line in path.read_text(encoding="utf-8").splitlines() if path.is_file() else []:
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a torn last line of a killed run
        calls += 1
        tokens_in += int(record.get("input_tokens") or 0)
        tokens_out += int(record.get("output_tokens") or 0)
        cost += float(record.get("cost_usd") or 0.0)
    return {"llm_calls": calls, "input_tokens": tokens_in, "output_tokens": tokens_out, "cost_usd": round(cost, 6)}


def _evaluate(runner: Any, takeover: TakeoverSet, targets: list[Any], predictions: dict[str, Prediction],
              name: str) -> dict[str, TakeoverResult]:
    evaluation = runner.experiment.evaluation
    options = EvaluateOptions(workers=per_core(evaluation.workers), mutants=False,
                              timeout=evaluation.timeout)
    from bench.evaluate import prepare_run

    prepare_run(options, runner.run_dir / "evaluations" / name)
    cache = cache_root() / "takeover-evaluations"
    results: dict[str, TakeoverResult] = {}
    todo = []
    for target in targets:
        prediction = predictions.get(target.id)
        key = content_hash({"takeover": runner.plan.dataset_card_sha256, "target": target.id,
                            "files": prediction.files if prediction else None, "bench": runner._bench_hash,
                            "regression_sample": REGRESSION_SAMPLE, "timeout": evaluation.timeout})
        hit = cache / f"{key}.json"
        if runner.experiment.cache and hit.is_file():
            results[target.id] = TakeoverResult.model_validate_json(hit.read_text(encoding="utf-8"))
        else:
            todo.append((target, key))
    runner.progress.stage(f"evaluate {name}", len(todo))
    for target, key in todo:
        result = judge_delivery(takeover, target, predictions.get(target.id), None, options)
        results[target.id] = result
        broken = any(v.outcome == Outcome.infrastructure_failure for v in [*result.target, *result.regression])
        if runner.experiment.cache and not broken:
            write_atomic(cache / f"{key}.json", result.model_dump_json())
        runner.progress.advance()
    return results


def takeover_report(runner: Any) -> list[str]:
    rows = []
    for summary_path in sorted((runner.run_dir / "takeover").glob("*/takeover_summary.json")):
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        config = json.loads((summary_path.parent / "config.json").read_text(encoding="utf-8"))
        phase_a = summary.get("phase_a") or {}

        def cell(value: Any) -> str:
            return "–" if value is None else (f"{value:.3f}" if isinstance(value, float) else str(value))

        rows.append("| " + " | ".join([
            config["name"], config["history"], config["oracle_state"], "yes" if config["two_phase"] else "no",
            str(summary["targets"]), cell(summary["build_rate"]), cell(summary["target_rate"]),
            cell(summary["regression_rate"]), cell(summary["complete_rate"]),
            cell(phase_a.get("relevant_f1")), cell(phase_a.get("evidence_f1")),
            cell(phase_a.get("attribute_reconstruction")), cell(phase_a.get("post_state")),
            cell(summary["cost_usd"])]) + " |")
    text = (f"# req2test run: {runner.plan.name} (takeover mode)\n\n"
            "Delivery: build (every production source compiles), target (every scenario the commit makes pass "
            "passes with the developers' steps), regression (earlier scenarios still pass), complete (all three). "
            "Phase A (two-phase arms): relevant-atom and evidence F1, attribute reconstruction of the pre-state, "
            "post-state score.\n\n"
            "| arm | history | oracle state | two-phase | targets | build | target | regression | complete "
            "| relevant F1 | evidence F1 | attributes | post-state | cost USD |\n"
            "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
            + "\n".join(rows) + "\n")
    path = runner.run_dir / "report.md"
    path.write_text(text, encoding="utf-8")
    return [str(path)]
