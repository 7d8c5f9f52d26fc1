"""Godog as a registered framework: ``req2test build --no-mutants`` of a small Go module written
for it (``tests/godogshop``: a production package ``shop``, a godog suite in package ``bdd`` with
a Background, two scenarios, an outline of two rows, a failing scenario, an undefined step and a
feature outside the project's tags), end to end through ``build_dataset``.

Needs the Go toolchain and godog v0.14.1 with its dependencies in the module cache (or the module
proxy): skipped with the reason when either is missing. ~20 s on two busy cores (six validation
test binaries), so marked slow.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench.builder.pipeline import BuildOptions, build_dataset
from bench.dataset import load_dataset
from bench.frameworks.registry import get_framework
from bench.judging import UnsupportedByFramework

PROJECT = Path(__file__).resolve().parents[1] / "godogshop"
FEATURE = "bdd/features/cart.feature"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from bench.frameworks.godog.toolchain import GoToolchain, download_modules

    try:
        toolchain = GoToolchain.find()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    base = tmp_path_factory.mktemp("godogshop")
    project = base / "godogshop"
    shutil.copytree(PROJECT, project)
    downloaded = download_modules(project, toolchain)
    if not downloaded.ok:
        pytest.skip(f"godog v0.14.1's modules are neither cached nor downloadable: {downloaded.output[-300:]}")
    out = base / "ds"
    build_dataset(str(project), out, BuildOptions(mutants=False, workers=1, runs=2, isolation="none"))
    return out


def test_instances_exclusions_and_card(built: Path) -> None:
    dataset = load_dataset(built)
    [project] = dataset.card.projects
    assert project.framework == "godog" and project.runner == "godog 0.14.1"
    assert [i.id for i in dataset.instances] == [f"godogshop/{FEATURE}:{n}" for n in (7, 11, 15)]
    reasons = {e.id.split("/", 1)[1]: e.reason for e in dataset.card.exclusions}
    assert reasons == {f"{FEATURE}:24": "failed", f"{FEATURE}:28": "step_unbound",
                       "bdd/features/other.feature:3": "not_selected_by_tags"}
    failed = next(e for e in dataset.card.exclusions if e.reason == "failed")
    assert "got 2, want 3" in failed.detail
    # the package variable initialised at load runs before any scenario: kept in an all-hidden view
    assert project.import_time_bodies == ["shop/catalog.go:loadCatalog"]
    assert set(dataset.card.stage_seconds) >= {"prepare", "parse", "isolation_runs", "validation_runs", "analysis"}
    assert dataset.card.mutation == {}


def test_bindings_validation_and_closure(built: Path) -> None:
    gold = {json.loads(line)["instance_id"].split(":")[-1]: json.loads(line)
            for line in (built / "gold" / "godogshop.jsonl").read_text().splitlines()}
    steps = (PROJECT / "bdd/steps_test.go").read_text().splitlines()
    adding = gold["7"]
    assert [(b["step_text"], b["role"], b["background"]) for b in adding["bindings"]] == [
        ("an empty cart", "given", True), ('I add 3 "apple"', "when", False),
        ('the cart holds 3 "apple"', "then", False)]
    for binding in adding["bindings"]:
        assert steps[binding["binding"]["line"] - 1].lstrip().startswith("s.Step(")
    assert adding["validation"] == {"isolation_runs": [True, True], "positive_runs": [True, True],
                                    "negative_runs": [False, False], "negative_initialized": True}
    assert [c["path"] for c in adding["closure"]] == ["bdd/steps_test.go"]
    # an outline: both rows ran, each in a process of its own; the literal handler is a site too
    outline = gold["15"]
    assert sorted({b["scenario_line"] for b in outline["bindings"]}) == [21, 22]
    assert any("the total is" in d["qualname"] for d in outline["step_definitions"])
    # API calls: public production the handlers call and the coverage profile shows ran
    assert adding["api_calls"] == ["shop/cart.go:Cart.Add", "shop/cart.go:Cart.Count", "shop/cart.go:NewCart"]
    assert "shop/cart.go" in adding["covered_lines"] and 18 in adding["covered_lines"]["shop/cart.go"]
    assert 19 not in adding["covered_lines"]["shop/cart.go"]  # the error branch did not run
    assert gold["11"]["target_calls"] == ["shop/cart.go:Cart.Add", "shop/cart.go:Cart.Total", "shop/cart.go:Discount"]


def test_target_interfaces_and_hidden_bodies(built: Path) -> None:
    dataset = load_dataset(built)
    by_line = {i.requirement.scenario_line: i for i in dataset.instances}
    groups = {g.declaring_type: [d.qualname for d in g.declarations] for g in by_line[11].target_interfaces}
    # the Given step's NewCart is no target (Given steps arrange); Discount is a package function
    assert groups == {"example.com/godogshop/shop": ["Discount"],
                      "example.com/godogshop/shop.Cart": ["Cart.Add", "Cart.Total"]}
    # every instance runs NewCart and Known: shared, visible; loadCatalog runs at load: visible
    hidden = {h.qualname for h in by_line[11].view.target_hidden}
    assert hidden == {"Cart.Add", "Cart.Total", "Discount"}


def test_the_framework_outside_the_build(built: Path) -> None:
    godog = get_framework("godog")
    snapshot = built / "projects" / "godogshop"
    area = godog.test_area(snapshot, "bdd/features")
    assert area.dirs == ("bdd",) and area.suffixes == (".go",)
    assert area.fixed_paths == {"bdd/main_test.go"}  # TestMain only: infrastructure
    assert area.rejections({"bdd/main_test.go": "package bdd\n"}) and not area.rejections({"bdd/new_test.go": "x"})
    assert area.rejections({FEATURE: "Feature: x\n"}) and area.rejections({"go.mod": "module x\n"})
    view = godog.view_test_side(snapshot, "bdd/features", {"bdd/steps_test.go"})
    text = view.rewritten["bdd/steps_test.go"].decode()
    assert "s.Step(" not in text and "func iAdd" not in text and "s.Before(" in text
    assert view.infrastructure == {"bdd/main_test.go"}
    record = load_dataset(built).load_gold()[f"godogshop/{FEATURE}:7"]
    files = godog.calibration_files(snapshot, [record])
    assert set(files) == {"oracle", "empty", "then-stripped"}
    assert files["oracle"]["bdd/steps_test.go"] == (PROJECT / "bdd/steps_test.go").read_text()
    assert "return cart.Add(item, n)" not in files["empty"]["bdd/steps_test.go"]
    assert "return cart.Add(item, n)" in files["then-stripped"]["bdd/steps_test.go"]
    with pytest.raises(UnsupportedByFramework):
        godog.calibration_files(snapshot, [record], suite=True)
    # the reference run: a plain binary of a copy, the scenario in a process of its own
    assert godog.fresh_run(snapshot, [], FEATURE, [7], None, 60.0, "").verdict == "survived"
    count = next(m for m in godog.language.generate_mutants(snapshot, ["shop"])
                 if m.file == "shop/cart.go" and m.line == 30 and m.operator == "return_value")
    assert godog.fresh_run(snapshot, [], FEATURE, [7], count, 60.0, "").verdict == "killed"


def test_a_build_with_mutants_calibrates_exactly(tmp_path: Path) -> None:
    """Mutants compiled once as schemata, kills per instance, the fresh-process check, then the
    calibration through the real command: oracle pass + KillComplete with API calls and coverage
    exact, the empty test passing with no kill, then-stripped in between."""
    from typer.testing import CliRunner

    from harness.cli import app

    project = tmp_path / "godogshop"
    shutil.copytree(PROJECT, project)
    out = tmp_path / "ds"
    build_dataset(str(project), out, BuildOptions(mutants=True, workers=2, runs=2, isolation="none"))
    dataset = load_dataset(out)
    mutation = dataset.card.mutation
    assert mutation["mutants"] >= 20 and mutation["mutants_dropped_by_compiler"] >= 1  # string + is no number
    check = mutation["fresh_check"]
    assert check["sampled"] >= 30 and check["agree"] == check["sampled"], check
    gold = dataset.load_gold()
    assert all(record.kills for record in gold.values())
    assert any(record.assertion_dependent for record in gold.values())
    result = CliRunner().invoke(app, ["calibrate", str(out), "-o", str(tmp_path / "cal"), "-q"])
    assert result.exit_code == 0, result.output
    rows = {arm: [json.loads(line) for line in (tmp_path / "cal" / arm / "results.jsonl").read_text().splitlines()]
            for arm in ("oracle", "empty", "then-stripped")}
    assert all(r["outcome"] == "pass" and r["kill_complete"] and r["api_f1"] == 1.0 and r["coverage_jaccard"] == 1.0
               for r in rows["oracle"]), rows["oracle"]
    assert all(r["outcome"] == "pass" and r["mutant_recall"] == 0.0 for r in rows["empty"]), rows["empty"]
    assert all(r["outcome"] == "pass" and not r["kill_complete"] for r in rows["then-stripped"])
    assert any(r["mutant_recall"] > 0 for r in rows["then-stripped"])


class _Logged:
    """A display that keeps the build's log lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def stage(self, name: str, total: int | None = None) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass

    def log(self, line: str) -> None:
        self.lines.append(line)


class _StopInMutantRuns:
    """A display that raises KeyboardInterrupt at the second instance the mutant stage finishes,
    as Ctrl-C would arrive: the build dies part-way through its longest stage."""

    def __init__(self) -> None:
        self.stage_name = ""
        self.finished = 0

    def stage(self, name: str, total: int | None = None) -> None:
        self.stage_name = name

    def advance(self, n: int = 1) -> None:
        if self.stage_name.startswith("mutant runs"):
            self.finished += n
            if self.finished == 2:
                raise KeyboardInterrupt

    def log(self, line: str) -> None:
        pass


def test_a_killed_build_resumes_its_mutant_stage(tmp_path: Path) -> None:
    """The same command after a build died in its mutant stage reuses every instance it had
    judged and every isolation and validation run (``.req2test-checkpoint`` in the output
    directory) and ends with the same gold as an uninterrupted build; the checkpoint is gone once
    the dataset is written."""
    project = tmp_path / "godogshop"
    shutil.copytree(PROJECT, project)
    options = BuildOptions(mutants=True, workers=1, runs=2, isolation="none")
    reference = tmp_path / "reference"
    build_dataset(str(project), reference, options)
    out = tmp_path / "ds"
    with pytest.raises(KeyboardInterrupt):
        build_dataset(str(project), out, options, progress=_StopInMutantRuns())
    saved = sorted((out / ".req2test-checkpoint" / "mutant-runs").glob("*.json"))
    # what finished before the interrupt (the instance that raised is not saved; a second worker
    # thread may have finished one more)
    assert 1 <= len(saved) < len(load_dataset(reference).instances), saved
    kept_runs = list((out / ".req2test-checkpoint" / "stage-runs").glob("*.pickle"))
    assert kept_runs  # the isolation and validation runs (bench.builder.run_memo)
    logged = _Logged()
    build_dataset(str(project), out, options, progress=logged)  # no --force needed: only the checkpoint is there
    assert f"resumed {len(kept_runs)} isolation/validation runs" in "\n".join(logged.lines), logged.lines
    assert not (out / ".req2test-checkpoint").exists()
    card = load_dataset(out).card
    assert card.mutation["instances_resumed"] == len(saved)

    def kills(path: Path) -> dict:
        return {i: (r.pool, r.kills, r.assertion_dependent, r.infrastructure_kills)
                for i, r in load_dataset(path).load_gold().items()}

    assert kills(out) == kills(reference)


def test_a_prediction_that_does_not_compile_is_a_build_failure(built: Path, tmp_path: Path) -> None:
    """Evaluation of a dataset built without mutants: the verdict is the clean run's; a compile
    error is the prediction's build failure, named by the compiler's first message."""
    from typer.testing import CliRunner

    from harness.cli import app

    instance = load_dataset(built).instances[0].id
    predictions = tmp_path / "p.jsonl"
    broken = {"bdd/steps_test.go": "package bdd\n\nfunc InitializeScenario(s *godog.ScenarioContext) {}\n"}
    predictions.write_text(json.dumps({"instance_id": instance, "files": broken}) + "\n")
    result = CliRunner().invoke(app, ["evaluate", str(built), "-p", str(predictions), "-o", str(tmp_path / "run"), "-q"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    [row] = [r for r in rows if r["instance_id"] == instance]
    assert row["outcome"] == "build_failure" and "undefined: godog" in row["detail"], row
