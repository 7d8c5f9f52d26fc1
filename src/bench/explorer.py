"""The results explorer: why one instance came out as it did, in one place.

For one configuration and instance: the outcome ladder (which stage failed, and the
evaluator's words), the ground-truth kills the test missed shown as the mutants they are
(file:line, original → replacement), the prompt the agent got, its trajectory, and the files
it submitted. ``req2test show`` prints it; the HTML report links a page per instance.

Everything is read from files a run leaves behind; trajectories are found where
``req2test run`` (``generations/<arm>@<view>/c<k>/trajectories``) and ``req2test generate``
(``trajectories/`` beside predictions.jsonl) write them. bench reads them as plain JSONL.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from bench.model import NO_PREDICTION, FailureDetail, GenerationMetadata, InstanceResult, Mutant, Outcome
from bench.runlog import dataset_dir, instance_file_name, trajectory_file
from bench.runs import ConfigData, config_dir_name

# The stage ladder of docs/evaluation.md#outcomes-the-first-failing-stage, in order; a result's
# outcome is the first stage that failed.
LADDER = [("generation", Outcome.generation_failure), ("build", Outcome.build_failure),
          ("binding", Outcome.binding_failure), ("execution", Outcome.execution_failure),
          ("assertion", Outcome.assertion_failure)]
MAX_TRAJECTORY_TEXT = 4000


class Rung(BaseModel):
    stage: str
    status: str = Field(description="passed | failed | not reached")


class MissedMutant(BaseModel):
    id: str
    location: str
    function: str = ""
    operator: str = ""
    original: str = ""
    replacement: str = ""


class TrajectoryEvent(BaseModel):
    kind: str
    text: str


class InstancePage(BaseModel):
    config: str
    instance_id: str
    outcome: str
    detail: str
    ladder: list[Rung]
    metrics: dict[str, Any]
    evidence: list[str]
    missed: list[MissedMutant]
    missed_unknown: int = Field(0, description="missed kills whose mutant the dataset could not show")
    prompt: list[TrajectoryEvent]
    trajectory: list[TrajectoryEvent]
    trajectory_file: str | None
    files: dict[str, str]
    end_reason: str | None
    failure: FailureDetail | None = Field(None, description="why the clean run failed: step, traceback, output")
    kills_note: str = Field("", description="why missed kills were not counted (empty: the test passed)")
    generation: dict[str, Any] = Field(default_factory=dict, description="what generating the test cost")
    files_note: str = Field("", description="why no submitted file is shown")


def ladder(outcome: Outcome) -> list[Rung]:
    rungs, failed = [], False
    for stage, failure in LADDER:
        if failed:
            rungs.append(Rung(stage=stage, status="not reached"))
        elif outcome is failure:
            rungs.append(Rung(stage=stage, status="failed"))
            failed = True
        else:
            rungs.append(Rung(stage=stage, status="passed"))
    if outcome in (Outcome.tampering, Outcome.unstable, Outcome.infrastructure_failure):
        # not a stage of the ladder: the verdict itself was refused
        rungs = [Rung(stage=r.stage, status="not judged") for r in rungs]
    return rungs


def dataset_of(config: ConfigData) -> Path | None:
    """The dataset a run scored against: plan.json (req2test run) or run.json (req2test evaluate)."""
    return dataset_dir(config)  # the run's files are read in one place: bench.runlog


def _trajectory_file(config: ConfigData, instance_id: str, candidate: int) -> Path | None:
    return trajectory_file(config, instance_id, candidate)


def _events(path: Path | None) -> tuple[list[TrajectoryEvent], list[TrajectoryEvent]]:
    prompt: list[TrajectoryEvent] = []
    steps: list[TrajectoryEvent] = []
    if path is None:
        return prompt, steps
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        kind = str(event.get("type", "event"))
        if kind == "message" and event.get("role") in ("system", "user") and len(steps) == 0:
            prompt.append(TrajectoryEvent(kind=str(event["role"]), text=str(event.get("content", ""))))
            continue
        if kind == "message":
            calls = ", ".join(f"{c.get('name')}({json.dumps(c.get('arguments'))[:200]})"
                              for c in event.get("tool_calls") or [])
            text = (str(event.get("content") or "") + (f"\n→ {calls}" if calls else "")).strip()
            steps.append(TrajectoryEvent(kind=f"{event.get('role', 'message')}", text=text))
        elif kind == "tool":
            output = str(event.get("output", event.get("result", "")))
            steps.append(TrajectoryEvent(kind=f"tool {event.get('name', '')}".strip(), text=output))
        else:
            detail = {k: v for k, v in event.items() if k not in ("type", "time", "t")}
            steps.append(TrajectoryEvent(kind=kind, text=json.dumps(detail, ensure_ascii=False)))
    for event in steps:
        if len(event.text) > MAX_TRAJECTORY_TEXT:
            event.text = event.text[:MAX_TRAJECTORY_TEXT] + f"\n… ({len(event.text) - MAX_TRAJECTORY_TEXT} more chars)"
    return prompt, steps


def instance_page(config: ConfigData, instance_id: str, mutants: dict[str, Mutant] | None = None) -> InstancePage:
    """The explorer's view of one instance of one configuration."""
    result = next((r for r in config.results if r.instance_id == instance_id), None)
    if result is None:
        raise KeyError(instance_id)
    if mutants is None:
        mutants = load_mutants(config, result)
    prediction = config.predictions.get(instance_id)
    metadata = (prediction.metadata if prediction is not None else result.metadata)
    candidate = int(metadata.extra.get("candidate", 1) or 1)
    trajectory_file = _trajectory_file(config, instance_id, candidate)
    prompt, steps = _events(trajectory_file)
    missed = [MissedMutant(id=m.id, location=f"{m.file}:{m.line}:{m.col}", function=m.function, operator=m.operator,
                           original=m.original, replacement=m.replacement)
              for mid in result.surviving_kills if (m := mutants.get(mid)) is not None]
    # results written before surviving_kills was recorded still say how many were missed
    counted = result.ground_truth_kills - result.generated_kills if result.outcome is Outcome.passed else 0
    return InstancePage(
        config=config.name, instance_id=instance_id, outcome=result.outcome.value, detail=result.detail,
        ladder=ladder(result.outcome), metrics=_metrics(result), evidence=list(result.evidence), missed=missed,
        missed_unknown=max(len(result.surviving_kills), counted) - len(missed), prompt=prompt, trajectory=steps,
        trajectory_file=str(trajectory_file) if trajectory_file else None,
        files=dict(prediction.files) if prediction is not None else {},
        end_reason=metadata.extra.get("end_reason"), failure=result.failure, kills_note=kills_note(result),
        generation=generation_costs(metadata), files_note=_files_note(config, result, prediction is not None))


def kills_note(result: InstanceResult) -> str:
    """Why the ground-truth kills a test missed are not counted (empty: they are). Only a
    passing test is run against the mutants: "0 missed" would claim a measurement never made."""
    outcome = result.outcome
    if outcome is Outcome.passed:
        return ""
    if outcome in (Outcome.tampering, Outcome.unstable, Outcome.infrastructure_failure):
        return f"not counted: the evaluator refused a verdict ({outcome.value})"
    if outcome is Outcome.generation_failure:
        return "not measured: there was no test to run"
    return f"not measured: the test did not pass its clean run ({outcome.value}), so no mutant was run against it"


# what generation metadata shows, in this order, under these names
GENERATION_FIELDS = [("agent", "agent"), ("model", "model"), ("reasoning", "reasoning"), ("view", "view"),
                     ("wall_seconds", "wall s"), ("llm_calls", "LLM calls"), ("input_tokens", "input tokens"),
                     ("output_tokens", "output tokens"), ("cached_tokens", "cached tokens"),
                     ("cost_usd", "cost USD")]
MAX_EXTRA_TEXT = 200


def generation_costs(metadata: GenerationMetadata) -> dict[str, Any]:
    """The generation's agent, model and cost (time, calls, tokens, USD) where recorded, then the
    other scalar facts the generator reported (``extra``: candidate, attempts, enrichment cost...)."""
    shown: dict[str, Any] = {label: getattr(metadata, name) for name, label in GENERATION_FIELDS
                             if getattr(metadata, name) is not None}
    for key, value in sorted(metadata.extra.items()):
        if key in ("end_reason", "end_detail") or not isinstance(value, (str, int, float, bool)):
            continue  # the end reason heads the page; its detail and nested records are the trajectory's
        shown[key] = value[:MAX_EXTRA_TEXT] if isinstance(value, str) else value
    return shown


def _files_note(config: ConfigData, result: InstanceResult, has_prediction: bool) -> str:
    if has_prediction:
        return ""
    if result.detail == NO_PREDICTION:
        return "No prediction was submitted for this instance."
    if not (Path(config.directory) / "predictions.jsonl").is_file():
        return ("No predictions.jsonl beside this run's results.jsonl (runs of req2test evaluate before it kept "
                "a copy), so the submitted files cannot be shown.")
    return "The predictions file beside this run's results has no readable line for this instance."


def load_mutants(config: ConfigData, result: InstanceResult) -> dict[str, Mutant]:
    from bench.mutation.executor import load_manifest

    dataset = dataset_of(config)
    return load_manifest(dataset, result.project) if dataset is not None and result.surviving_kills else {}


def _metrics(result: InstanceResult) -> dict[str, Any]:
    def short(value: float | None) -> float | None:
        return None if value is None else round(value, 3)

    return {"kill complete": result.kill_complete, "mutant recall": short(result.mutant_recall),
            # a test that did not pass was never run against the mutants: its kills are not a count of 0
            "kills": f"{result.generated_kills}/{result.ground_truth_kills}" if result.outcome is Outcome.passed
            else f"—/{result.ground_truth_kills}", "API F1": short(result.api_f1),
            "coverage Jaccard": short(result.coverage_jaccard), "evaluation s": short(result.evaluation_seconds)}


# ----------------------------------------------------------------------------- HTML
PAGE_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:70rem;padding:0 1rem;color:#222}
h1{font-size:1.3rem}h2{font-size:1.1rem;margin-top:1.6rem;border-bottom:1px solid #ddd}
.ladder{display:flex;gap:.4rem;flex-wrap:wrap}.rung{padding:.3rem .7rem;border-radius:4px;border:1px solid #ccc}
.passed{background:#e3f4e1}.failed{background:#fbe0de;font-weight:600}.not-reached,.not-judged{color:#888}
.outcome-pass{color:#1a7f37}.outcome-fail{color:#b42318}
pre{background:#f6f8fa;padding:.6rem;overflow:auto;white-space:pre-wrap;border-radius:4px}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}
del{background:#fbe0de;text-decoration:none}ins{background:#e3f4e1;text-decoration:none}
.event{margin:.4rem 0}.kind{font-weight:600;color:#555}.note{color:#666;font-size:.9em}
h3{font-size:1rem;margin:.8rem 0 .2rem}
"""


def render_instance_html(page: InstancePage, back: str | None = None) -> str:
    e = html.escape
    css_class = "outcome-pass" if page.outcome == "pass" else "outcome-fail"
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{e(page.instance_id)} · {e(page.config)}</title><style>{PAGE_CSS}</style></head><body>"]
    if back:
        parts.append(f'<p><a href="{e(back)}">← report</a></p>')
    parts += [f'<h1 id="instance">{e(page.instance_id)}</h1>',
              f'<p>configuration <b>{e(page.config)}</b> · outcome <b class="{css_class}" id="outcome">'
              f"{e(page.outcome)}</b>" + (f" · agent ended: {e(page.end_reason)}" if page.end_reason else "") + "</p>",
              '<h2>Outcome ladder</h2><div class="ladder">']
    parts += [f'<span class="rung {r.status.replace(" ", "-")}">{e(r.stage)}: {e(r.status)}</span>' for r in page.ladder]
    parts.append("</div>")
    if page.detail:
        parts.append(f"<pre>{e(page.detail)}</pre>")
    if page.evidence:
        parts.append("<ul>" + "".join(f"<li>{e(x)}</li>" for x in page.evidence) + "</ul>")
    if page.failure is not None:
        parts += _failure_html(page.failure)
    parts.append("<h2>Scores</h2><table>" + "".join(
        f"<tr><th>{e(k)}</th><td>{e('—' if v is None else str(v))}</td></tr>" for k, v in page.metrics.items())
        + "</table>")
    if page.generation:
        parts.append('<h2 id="generation">Generation</h2><table>' + "".join(
            f"<tr><th>{e(k)}</th><td>{e(str(v))}</td></tr>" for k, v in page.generation.items()) + "</table>")
    if page.kills_note:  # a test that did not pass was never run against the mutants: no count to show
        parts.append('<h2 id="missed">Ground-truth kills this test missed</h2>'
                     f'<p id="kills-note">{e(page.kills_note[:1].upper() + page.kills_note[1:])}.</p>')
    else:
        parts.append(f'<h2 id="missed">Ground-truth kills this test missed ({len(page.missed) + page.missed_unknown})'
                     "</h2>")
        if page.missed:
            parts.append("<table><tr><th>mutant</th><th>where</th><th>function</th><th>change</th></tr>" + "".join(
                f"<tr><td>{e(m.id)}</td><td>{e(m.location)}</td><td>{e(m.function)}</td><td>{e(m.operator)}: "
                f"<del>{e(m.original)}</del> → <ins>{e(m.replacement)}</ins></td></tr>" for m in page.missed)
                + "</table>")
        elif not page.missed_unknown:
            parts.append("<p>None: every ground-truth kill was reproduced.</p>")
        if page.missed_unknown:
            parts.append(f"<p>{page.missed_unknown} more whose mutant the dataset does not list here.</p>")
    parts.append('<h2 id="files">Submitted files</h2>')
    parts += [f"<h3>{e(path)}</h3><pre>{e(text)}</pre>" for path, text in sorted(page.files.items())] or \
        [f'<p id="files-note">{e(page.files_note or "No files.")}</p>']
    parts.append("<h2>Prompt</h2>")
    parts += [f'<div class="event"><span class="kind">{e(p.kind)}</span><pre>{e(p.text)}</pre></div>'
              for p in page.prompt] or ["<p>No trajectory found for this instance.</p>"]
    parts.append(f"<h2>Trajectory ({len(page.trajectory)} events)</h2>")
    parts += [f'<div class="event"><span class="kind">{e(t.kind)}</span><pre>{e(t.text)}</pre></div>'
              for t in page.trajectory]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _failure_html(failure: FailureDetail) -> list[str]:
    """Why the clean run failed: the step as the feature file writes it, the error, the
    traceback and the run's output (each a ``pre``; a cut says how much went)."""
    e = html.escape
    parts = ['<h2 id="failure">Why the test failed</h2>']
    if failure.step is not None:
        step = failure.step
        parts.append(f'<p>failing step <code id="failing-step">{e(f"{step.keyword} {step.text}".strip())}</code> '
                     f'at <code id="failing-location">{e(step.location)}</code></p>')
    for name, label in (("error", "Error"), ("traceback", "Traceback"), ("stdout", "Output"),
                        ("stderr", "Errors (stderr)")):
        text = getattr(failure, name)
        if not text:
            continue
        cut = failure.cut.get(name, 0)
        note = f' <span class="note">({cut} characters cut)</span>' if cut else ""
        parts.append(f"<h3>{label}{note}</h3><pre id=\"failure-{name}\">{e(text)}</pre>")
    notes = [failure.output_note] if failure.output_note and (failure.stdout or failure.stderr) else []
    parts.append(f'<p class="note">{e("; ".join([*notes, "of the clean run only (the test on unchanged production)"]))}'
                 "</p>")
    return parts


def write_instance_pages(configs: list[ConfigData], out_dir: Path, report_name: str = "report.html") -> dict[
        tuple[str, str], str]:
    """One page per (configuration, instance) under ``out_dir/instances``; hrefs relative to out_dir."""
    links: dict[tuple[str, str], str] = {}
    for config in configs:
        mutants: dict[str, dict[str, Mutant]] = {}  # a project's manifest, read once, when a page needs it
        folder = out_dir / "instances" / config_dir_name(config.name)  # as under RUN/configs
        folder.mkdir(parents=True, exist_ok=True)
        for result in config.results:
            if result.surviving_kills and result.project not in mutants:
                mutants[result.project] = load_mutants(config, result)
            page = instance_page(config, result.instance_id, mutants.get(result.project, {}))
            target = folder / f"{instance_file_name(result.instance_id)}.html"
            target.write_text(render_instance_html(page, back=f"../../{report_name}"), encoding="utf-8")
            links[(config.name, result.instance_id)] = target.relative_to(out_dir).as_posix()
    return links
