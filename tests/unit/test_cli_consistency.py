"""One meaning per option across req2test's commands (issue 30, items 5 and 6): --workers, -q/--quiet,
the three seeds, --json; a result console as wide as its rows when piped; a stage's time ending with its
work; pass counts per arm."""

from __future__ import annotations

import inspect
import io
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console
from rich.table import Table
from typer.testing import CliRunner

from bench import console as display
from bench.cli_options import QUIET_HELP, WORKERS_RULE
from harness.cli import app
from tests.unit.test_cli_conventions import _commands


def _option(command: Any, flag: str) -> Any:
    """The command's option spelled ``flag`` (duck-typed: typer may bring its own click)."""
    return next((p for p in command.params if p.param_type_name == "option" and flag in p.opts), None)


# ----------------------------------------------------------------------------- --workers
def test_workers_means_one_thing_on_every_command() -> None:
    having = {}
    for name, command in _commands().items():
        option = _option(command, "--workers")
        if option is None:
            continue
        having[name] = option
        bounds = option if hasattr(option, "min") else option.type  # typer's own option, or click's IntRange
        assert bounds.min == 0, f"{name}: --workers must take 0"
        assert WORKERS_RULE in (option.help or ""), f"{name} --workers: say '{WORKERS_RULE}'"
        # the default: 0 (one per core), else what the help says it is (the experiment file's, generate's 1)
        assert option.default == 0 or "(default: " in option.help, f"{name} --workers: say what the default is"
    assert {"build", "evaluate", "calibrate", "takeover", "attribute", "generate", "run", "demo"} <= set(having)


def _experiment(**fields):
    from harness.experiment.config import Experiment

    return Experiment.model_validate({"dataset": "ds", "arms": [{"name": "a", "agent": "none"}], **fields})


def test_run_workers_override_the_files_concurrency_explicitly() -> None:
    from harness.experiment.concurrency import resolve_concurrency
    from harness.experiment.config import ExperimentError

    file = _experiment(executor="local:2", evaluation={"workers": 3})
    kept = resolve_concurrency(file)
    assert (kept.executor, kept.evaluation_workers, kept.workers) == ("local:2", 3, None)
    assert resolve_concurrency(file, executor="local:5").executor == "local:5"
    four = resolve_concurrency(file, workers=4)
    assert (four.executor, four.evaluation_workers, four.workers) == ("local:4", 4, 4)
    assert resolve_concurrency(file, workers=1).executor == "local"
    per_core = resolve_concurrency(file, workers=0)
    assert per_core.executor.startswith("local") and per_core.evaluation_workers == 0
    assert resolve_concurrency(file, executor="local:4", workers=4).executor == "local:4"
    with pytest.raises(ExperimentError, match="disagree"):
        resolve_concurrency(file, executor="local:2", workers=4)
    with pytest.raises(ExperimentError, match="not local"):
        resolve_concurrency(_experiment(executor="ray"), workers=2)
    # the demo: its scripted provider answers in request order, so only the evaluator's workers change
    demo = resolve_concurrency(file, workers=4, generations=False)
    assert (demo.executor, demo.evaluation_workers) == ("local:2", 4)


def test_the_runner_records_the_concurrency_in_its_plan(tmp_path: Path) -> None:
    from harness.experiment.concurrency import resolve_concurrency
    from harness.experiment.plan import ExperimentPlan
    from harness.experiment.runner import ExperimentRunner

    experiment = _experiment(evaluation={"workers": 3})
    plan = ExperimentPlan(name="e", file=str(tmp_path / "e.yaml"), experiment=experiment.model_dump(mode="json"),
                          dataset_dir=str(tmp_path), dataset_card_sha256="0" * 64, instances=[])
    dataset = SimpleNamespace(instances=[])
    runner = ExperimentRunner(experiment, plan, dataset, tmp_path / "run",  # type: ignore[arg-type]
                              concurrency=resolve_concurrency(experiment, workers=2))
    assert runner.executor_spec == "local:2" and runner.experiment.evaluation.workers == 2
    assert runner.plan.concurrency is not None and runner.plan.concurrency.workers == 2
    assert runner.plan.experiment["evaluation"]["workers"] == 3  # the file's, so a rerun without --workers resumes
    default = ExperimentRunner(experiment, plan, dataset, tmp_path / "run")  # type: ignore[arg-type]
    assert default.plan.concurrency.model_dump() == {"executor": "local", "evaluation_workers": 3, "workers": None}


# ----------------------------------------------------------------------------- -q/--quiet
def _prints_progress_or_notes(command: Any) -> bool:
    source = inspect.getsource(inspect.unwrap(command.callback))
    return any(sign in source for sign in ("console.", "progress_for(", "RunProgress(", "print_outcome("))


def test_every_command_that_prints_progress_or_notes_takes_quiet() -> None:
    commands = _commands()
    for name, command in commands.items():
        quiet = _option(command, "--quiet")
        if _prints_progress_or_notes(command):
            assert quiet is not None, f"{name} prints progress or notes on stderr: give it -q/--quiet"
        if quiet is not None:
            assert quiet.opts == ["--quiet", "-q"] and quiet.help == QUIET_HELP, f"{name}: -q/--quiet as everywhere"
    for name in ("show", "report", "compare", "submit", "summary"):
        assert _option(commands[name], "--quiet") is not None, name


@pytest.fixture
def run(tmp_path: Path) -> Path:
    from tests.unit.run_dirs import experiment_run

    return experiment_run(tmp_path / "run", {"plain": "half", "grounded": "strong"})


def test_quiet_report_and_compare_print_results_only(run: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    loud = runner.invoke(app, ["report", str(run), "-o", str(tmp_path / "r"), "--resamples", "100"])
    assert loud.exit_code == 0 and "configuration(s)" in loud.stderr
    quiet = runner.invoke(app, ["report", str(run), "-o", str(tmp_path / "r"), "--resamples", "100", "-q"])
    assert quiet.exit_code == 0 and quiet.stderr == "" and str(tmp_path / "r" / "report.md") in quiet.stdout
    compared = runner.invoke(app, ["compare", f"{run}:plain@th", f"{run}:grounded@th", "--resamples", "100",
                                   "-o", str(tmp_path / "c.md"), "-q"])
    assert compared.exit_code == 0 and compared.stderr == "" and "verdict:" in compared.stdout


# ----------------------------------------------------------------------------- the seeds
def test_three_seeds_three_names_and_the_old_spelling_still_works(run: Path) -> None:
    commands = _commands()
    assert _option(commands["generate"], "--seed") is not None and not _option(commands["generate"], "--seed").hidden
    for name, new in (("evaluate", "--order-seed"), ("calibrate", "--order-seed"), ("compare", "--bootstrap-seed"),
                      ("report", "--bootstrap-seed")):
        assert _option(commands[name], new) is not None, f"{name} {new}"
        old = _option(commands[name], "--seed")
        assert old is None or old.hidden, f"{name}: --seed is the model's sampling seed; hide the old spelling"
    runner = CliRunner()
    base = ["compare", f"{run}:plain@th", f"{run}:grounded@th", "--resamples", "100", "--json"]
    new = runner.invoke(app, [*base, "--bootstrap-seed", "7"])
    old = runner.invoke(app, [*base, "--seed", "7"])
    assert new.exit_code == old.exit_code == 0
    assert json.loads(old.stdout) == json.loads(new.stdout)
    assert old.stderr.strip() == "note: --seed is deprecated here, use --bootstrap-seed" and new.stderr == ""
    both = runner.invoke(app, [*base, "--seed", "7", "--bootstrap-seed", "8"])
    assert both.exit_code == 2 and "old spelling of --bootstrap-seed" in both.stderr
    assert "--seed" not in runner.invoke(app, ["compare", "--help"], terminal_width=200).stdout


# ----------------------------------------------------------------------------- --json
def test_json_on_every_command_that_prints_a_table() -> None:
    commands = _commands()
    for name in ("summary", "compare", "view", "show", "families", "suites", "prompts", "agents list", "evaluate",
                 "calibrate"):
        assert _option(commands[name], "--json") is not None, f"{name} --json"


def test_json_is_all_that_goes_to_stdout(run: Path, tmp_path: Path) -> None:
    from tests.unit.test_report_languages import write_dataset

    runner = CliRunner()
    shown = runner.invoke(app, ["show", str(run), "--json"])
    assert shown.exit_code == 0, shown.output
    configs = {c["config"]: c["instances"] for c in json.loads(shown.stdout)}
    assert set(configs) == {"plain@th", "grounded@th"}
    assert configs["plain@th"][-1]["outcome"] == "assertion_failure"
    assert configs["plain@th"][-1]["generated_kills"] is None  # a failing test never met a mutant
    instance = configs["grounded@th"][0]["instance_id"]
    page = runner.invoke(app, ["show", f"{run}:grounded@th", instance, "--json"])
    assert page.exit_code == 0 and json.loads(page.stdout)[0]["instance_id"] == instance

    a = write_dataset(tmp_path / "py-x", "py-x", "behave 1.2.6", "features", [("ABI", "one", None)])
    b = write_dataset(tmp_path / "go-x", "go-x", "godog 0.14.1", "features", [("ABI", "one", None), ("ABI", "t", 2)])
    families = runner.invoke(app, ["families", str(a), str(b), "--json", "-o", str(tmp_path / "ids")])
    assert families.exit_code == 0, families.output
    data = json.loads(families.stdout)
    assert [d["dataset"] for d in data["datasets"]] == ["py-x", "go-x"] and data["shared"][0]["families"] == 1
    assert "wrote 1 instance ids" in families.stderr

    listed = runner.invoke(app, ["prompts", "--json"])
    assert listed.exit_code == 0 and {"grounding", "task"} <= {row["name"] for row in json.loads(listed.stdout)}
    one = json.loads(runner.invoke(app, ["prompts", "grounding", "--json"]).stdout)
    assert one["kind"] == "paragraph" and one["text"] == Path(one["path"]).read_text(encoding="utf-8")
    rendered = json.loads(runner.invoke(app, ["prompts", "grounding", "--render", "--json"]).stdout)
    assert [m["role"] for m in rendered] == ["system", "user"]
    agents = runner.invoke(app, ["agents", "list", "--json"])
    assert agents.exit_code == 0 and all("tested" in row for row in json.loads(agents.stdout))


def test_evaluate_json_is_the_summary_and_its_notes_stay_on_stderr(monkeypatch) -> None:
    from bench import cli
    from bench.summary import summarize_run
    from tests.unit.run_dirs import results

    stdout, stderr = io.StringIO(), io.StringIO()
    monkeypatch.setattr(cli, "out", Console(file=stdout, width=80))
    monkeypatch.setattr(cli, "console", Console(file=stderr, width=80))
    data = summarize_run(results("half"), dataset_name="tiny", predictions_sha256="0" * 64, resamples=100)
    data["warnings"] = ["a warning"]
    cli.print_run_summary(data, "runs/x", as_json=True)
    assert json.loads(stdout.getvalue()) == json.loads(json.dumps(data))
    assert "a warning" in stderr.getvalue()


# ----------------------------------------------------------------------------- piped width
def test_a_piped_result_keeps_whole_rows(monkeypatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    buffer = io.StringIO()  # not a terminal, as stdout is in a pipe or a file
    piped = display.result_console(file=buffer)
    assert piped.width == display.PIPED_WIDTH
    # a row of `req2test show`: a long instance id, the outcome, KC, recall, kills, calls, USD and its detail
    # (cut at 120 characters): some 260 columns
    ids = [f"algorand-sdk-testing/features/unit/v2indexerclient_responses.feature:{100 + k}" for k in range(3)]
    details = [(f"assertion failed: expected paragraph alignment CENTER, got {k} " + "x" * 120)[:120] for k in range(3)]
    table = Table("instance", "outcome", "KC", "recall", "kills", "calls", "USD", "detail")
    table.columns[0].overflow = table.columns[-1].overflow = "fold"  # as `req2test show` makes them
    for instance_id, detail in zip(ids, details):
        table.add_row(instance_id, "infrastructure_failure", "no", "0.50", "12/34", "200", "0.1234", detail)
    piped.print(table)
    text = buffer.getvalue()
    for instance_id, detail in zip(ids, details):
        row = next(line for line in text.splitlines() if instance_id in line)
        assert detail in row, "a row was folded"
    monkeypatch.setenv("COLUMNS", "120")
    assert display.result_console(file=io.StringIO()).width == 120  # $COLUMNS still decides


# ----------------------------------------------------------------------------- a stage's time
class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_stage_ends_with_its_last_advance_not_with_what_runs_after_it(monkeypatch) -> None:
    buffer = io.StringIO()
    monkeypatch.setattr(display, "console", Console(file=buffer, width=200))
    clock = Clock()
    progress = display.RichProgress(enabled=True, clock=clock)
    progress.stage("mutant runs", 3)
    for clock.now in (5.0, 36.0):  # two of three: the stage never reaches its total
        progress.advance()
    clock.now = 352.0  # the fresh-process check ran without a bar of its own
    progress.stage("fresh-process check", 2)
    for clock.now in (355.0, 360.0):
        progress.advance()
    clock.now = 900.0  # writing the dataset, after the last bar
    progress.stage("nothing counted", None)
    clock.now = 910.0
    progress.close()
    runs, check, empty = progress.progress.tasks
    assert runs.finished_time == 36.0 and runs.completed == 3  # its time ends at its last advance; the bar is full
    assert check.finished_time == 8.0
    assert empty.finished_time == 10.0  # never advanced: it ends when the display closes
    shown = buffer.getvalue()
    assert "0:00:36" in shown and "0:05:52" not in shown


def test_log_lines_time_a_stage_to_its_last_advance_too(monkeypatch) -> None:
    buffer = io.StringIO()
    monkeypatch.setattr(display, "console", Console(file=buffer, width=200))
    clock = Clock()
    monkeypatch.setattr(display, "time", SimpleNamespace(monotonic=clock))
    progress = display.LineProgress()
    progress.stage("mutant runs", 3)
    clock.now = 36.0
    progress.advance(2)
    clock.now = 352.0
    progress.stage("fresh-process check", 1)
    progress.close()
    assert "mutant runs: finished 2 in 36 s" in buffer.getvalue()


# ----------------------------------------------------------------------------- passes per arm
def test_the_run_status_counts_passes_per_arm() -> None:
    from harness.experiment.progress import RunProgress, pass_status

    assert pass_status({}) == "passes -"
    assert pass_status({"plain": (3, 5), "grounded": (4, 5)}) == "plain 3/5 pass · grounded 4/5 pass"
    progress = RunProgress(enabled=False)
    for arm, passed in (("plain", True), ("plain", False), ("grounded", True)):
        progress.count_pass(arm, passed)
    progress.money = 0.5
    assert progress.status == "plain 1/2 pass · grounded 1/1 pass · $0.5000"
