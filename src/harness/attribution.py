"""Failure attribution for suite-mode runs (TestSuiteBench §5), and what agents did.

For every failing generated scenario and every surviving requirement-targeted mutant of a
suite configuration, a judge model labels the cause:

- ``test``: the generated test is wrong (a wrong expectation, a wrong call, a missing check);
- ``spec_underspecified``: the feature does not say enough to write the check the mutant needs;
- ``spec_contradiction``: the feature contradicts the real behaviour;
- ``error``: the run broke (an import, a crash, an undefined step) rather than checked anything;
- ``unknown``: none of these fits, or the model's answer could not be read.

A label is only kept when a **replay** confirms what it explains: a failing scenario must fail
again on the real code (judged afresh by the verdict process), and a surviving mutant must
survive the suite's valid scenarios again. A failure that does not reproduce is flaky, and its
label becomes ``unknown`` (replay ``not_reproduced``).

Trajectory actions are classified read / search / write / execute from the tool calls an agent
made (``run`` commands by their program), so a run's report can say how an agent spent its turns.
"""

from __future__ import annotations

import json
import re
import shlex
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from bench.model import Outcome, Prediction

LABELS = ("test", "spec_underspecified", "spec_contradiction", "error", "unknown")
Action = Literal["read", "search", "write", "execute", "other"]

_SEARCH = {"grep", "rg", "ag", "ack", "find", "fd", "ls", "tree", "locate", "glob", "git-grep"}
_READ = {"cat", "head", "tail", "less", "more", "sed", "awk", "wc", "nl", "bat", "view", "file", "stat", "diff"}
_TOOL_ACTIONS: dict[str, Action] = {
    "read_file": "read", "view": "read", "open_file": "read", "str_replace_based_edit_tool:view": "read",
    "list_files": "search", "search": "search", "grep": "search", "glob": "search", "find_file": "search",
    "write_file": "write", "edit_file": "write", "create_file": "write", "apply_patch": "write",
    "str_replace": "write", "insert": "write",
    "run": "execute", "bash": "execute", "shell": "execute", "execute": "execute",
}


def classify_command(command: str) -> Action:
    """A shell command by the program it runs first (after env assignments and ``cd x &&``)."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    programs = []
    current: list[str] = []
    for word in words + ["&&"]:
        if word in ("&&", "||", ";", "|"):
            if current:
                programs.append(current)
            current = []
        else:
            current.append(word)
    for argv in programs:
        argv = [w for w in argv if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w)]
        if not argv or argv[0] in ("cd", "export", "set", "true"):
            continue
        program = Path(argv[0]).name
        if program == "git" and len(argv) > 1 and argv[1] in ("grep", "ls-files", "log", "show"):
            return "search" if argv[1] in ("grep", "ls-files") else "read"
        if program in _SEARCH:
            return "search"
        if program in _READ:
            return "read" if not (program == "sed" and "-i" in argv) else "write"
        if program in ("echo", "printf", "tee", "touch", "mkdir", "cp", "mv", "rm") and (">" in command or
                                                                                       program != "echo"):
            return "write"
        return "execute"
    return "other"


def classify_action(event: dict[str, Any]) -> Action | None:
    """The action of one trajectory event; None for events that are not actions (messages, ends)."""
    if event.get("type") not in ("tool", "tool_call", "action"):
        return None
    name = str(event.get("name") or event.get("tool") or "")
    arguments = event.get("arguments") if isinstance(event.get("arguments"), dict) else {}
    command = arguments.get("command") or arguments.get("cmd") if isinstance(arguments, dict) else None
    if name in ("run", "bash", "shell", "execute", "exec_command") and isinstance(command, str):
        return classify_command(command)
    if name == "str_replace_based_edit_tool" and isinstance(arguments, dict):
        return "read" if arguments.get("command") == "view" else "write"
    return _TOOL_ACTIONS.get(name, "other")


def action_profile(trajectory: Path) -> dict[str, int]:
    """Counts of read / search / write / execute / other actions in one trajectory file."""
    counts: Counter[str] = Counter()
    if trajectory.is_file():
        for line in trajectory.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            action = classify_action(event) if isinstance(event, dict) else None
            if action is not None:
                counts[action] += 1
    return {a: counts.get(a, 0) for a in ("read", "search", "write", "execute", "other")}


class Attribution(BaseModel):
    suite_id: str
    kind: Literal["failing_scenario", "surviving_mutant"]
    subject: str = Field(description="the scenario instance id, or the mutant id")
    label: str = Field(description="one of LABELS, after the replay check")
    model_label: str | None = Field(None, description="what the judge model said (None: no answer)")
    reason: str = ""
    replay: Literal["confirmed", "not_reproduced", "not_run"]
    detail: str = Field("", description="the failure or the mutant, as the judge saw it")


def parse_label(text: str) -> tuple[str | None, str]:
    """(label, reason) from the judge's reply: a JSON object with "label" (and "reason"); else (None, '')."""
    for match in re.finditer(r"\{[^{}]*\}", text or ""):
        try:
            data = json.loads(match.group(0))
        except ValueError:
            continue
        label = str(data.get("label", "")).strip().lower().replace(" ", "_").replace("-", "_")
        if label in LABELS:
            return label, str(data.get("reason", ""))[:500]
    return None, ""


def attribute_config(run_dir: Path, config: str, model: Any | None, workers: int = 2) -> list[Attribution]:
    """Label every failing scenario and surviving target of one suite configuration of a run;
    writes ``suites/<config>/attribution.jsonl`` and returns the labels."""
    from bench.dataset import load_dataset
    from bench.evaluate import EvaluateOptions, ProjectJudging, ground_truth_files
    from bench.mutation.executor import load_manifest
    from bench.runs import config_dir_name
    from bench.suite.evaluate import SuiteResult
    from bench.suite.instances import suite_instances
    from harness.prompts import render

    directory = run_dir / "suites" / config_dir_name(config)
    results_path = directory / "suite_results.jsonl"
    if not results_path.is_file():
        raise FileNotFoundError(f"{directory}: no suite_results.jsonl (not a suite-mode configuration of {run_dir})")
    plan = json.loads((run_dir / "plan.json").read_text(encoding="utf-8"))
    dataset = load_dataset(Path(plan["dataset_dir"]))
    gold = dataset.load_gold()
    suites = {s.id: s for s in suite_instances(dataset)}
    by_id = {i.id: i for i in dataset.instances}
    predictions = {json.loads(line)["instance_id"]: Prediction.model_validate_json(line)
                   for line in (directory / "predictions.jsonl").read_text(encoding="utf-8").splitlines() if line}
    results = [SuiteResult.model_validate_json(line)
               for line in results_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    out: list[Attribution] = []
    options = EvaluateOptions(workers=workers)
    with tempfile.TemporaryDirectory(prefix="req2test-attribution-") as tmp:
        judgings: dict[str, ProjectJudging] = {}
        manifests: dict[str, dict] = {}
        for result in results:
            prediction = predictions.get(result.suite_id)
            suite = suites[result.suite_id]
            if result.project not in judgings:
                judgings[result.project] = ProjectJudging(dataset, result.project, gold, options, Path(tmp),
                                                          ground_truth_files(gold))
            judging = judgings[result.project]
            if result.project not in manifests:
                manifests[result.project] = load_manifest(dataset.root, result.project)
            manifest = manifests[result.project]
            code = "\n\n".join(f"`{p}`:\n```\n{t[:6000]}\n```" for p, t in sorted((prediction.files if prediction
                                                                                   else {}).items()))
            feature = (dataset.root / dataset.project(result.project).snapshot / suite.feature_file).read_text(
                encoding="utf-8")
            subjects: list[tuple[str, str, str]] = []
            for verdict in result.scenarios:
                if verdict.stability != "valid":
                    subjects.append(("failing_scenario", verdict.instance_id,
                                     f"{verdict.outcome.value}: {verdict.detail}"))
            for mutant_id in result.mutation.survived_ids:
                mutant = manifest.get(mutant_id)
                if mutant is not None:
                    subjects.append(("surviving_mutant", mutant_id,
                                     (f"{mutant.file}:{mutant.line} in {mutant.function}: "
                                     f"`{mutant.original}` -> `{mutant.replacement}`")))
            for kind, subject, detail in subjects:
                model_label, reason = None, ""
                if model is not None and prediction is not None:
                    prompt = render("attribute.md.j2", feature_file=suite.feature_file, gherkin=feature, kind=kind,
                                    scenario=by_id[subject].requirement.scenario_name if kind == "failing_scenario"
                                    else None, detail=detail, code=code, labels=LABELS)
                    try:
                        reply = model.complete([{"role": "user", "content": prompt}], tools=None)
                        model_label, reason = parse_label(reply.content or "")
                    except Exception as exc:  # noqa: BLE001 - a failed call leaves the subject unknown
                        reason = f"no answer: {type(exc).__name__}: {str(exc)[:200]}"
                replay = "not_run"
                if prediction is not None:
                    replay = _replay(judging, by_id, gold, suite, prediction, kind, subject, result)
                label = model_label or "unknown"
                if replay == "not_reproduced":
                    label = "unknown"
                out.append(Attribution(suite_id=result.suite_id, kind=kind, subject=subject, label=label,
                                       model_label=model_label, reason=reason, replay=replay, detail=detail[:300]))
    (directory / "attribution.jsonl").write_text("".join(a.model_dump_json() + "\n" for a in out), encoding="utf-8")
    return out


def _replay(judging: Any, by_id: dict, gold: dict, suite: Any, prediction: Prediction, kind: str, subject: str,
            result: Any) -> Literal["confirmed", "not_reproduced"]:
    """Judge again: a failing scenario must fail again on the real code; a surviving target must
    survive its own reference scenario's generated steps again (when that scenario is valid)."""
    if kind == "failing_scenario":
        again = judging.judge(by_id[subject], Prediction(instance_id=subject, files=prediction.files),
                              gold[subject].model_copy(update={"pool": [], "kills": []}))
        return "not_reproduced" if again.outcome is Outcome.passed else "confirmed"
    owner = next((t.scenario for t in suite.targets if t.mutant == subject), None)
    valid = set(result.validity.valid_ids)
    if owner is None or owner not in valid:
        return "confirmed"  # no valid scenario could kill it: surviving is what there is
    again = judging.judge(by_id[owner], Prediction(instance_id=owner, files=prediction.files),
                          gold[owner].model_copy(update={"pool": [subject], "kills": [subject]}))
    return "not_reproduced" if subject in again.kills else "confirmed"


def summarize_attributions(attributions: list[Attribution]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for kind in ("failing_scenario", "surviving_mutant"):
        counts = Counter(a.label for a in attributions if a.kind == kind)
        out[kind] = {label: counts.get(label, 0) for label in LABELS}
    return out
