"""`req2test build` end to end on a tiny project, and its handling of bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.builder.pipeline import BuildError, BuildOptions, build_dataset
from bench.dataset import load_dataset
from harness.cli import app
from tests.conftest import MINI_FILES, write_project

pytestmark = pytest.mark.integration


def test_instances_exclusions_and_gold(mini_dataset: Path) -> None:
    dataset = load_dataset(mini_dataset)
    assert dataset.verify() == []
    ids = [i.id for i in dataset.instances]
    assert ids == ["minicalc/features/calc.feature:9", "minicalc/features/calc.feature:13",
                   "minicalc/features/calc.feature:18"]
    reasons = {e.id.split("/", 1)[1]: e.reason for e in dataset.card.exclusions}
    assert reasons == {
        "features/notes.feature": "feature_empty",
        "features/broken.feature:3": "step_undefined",
        "features/broken.feature:7": "step_pending",
        "features/broken.feature:11": "assertion_failed",
        "features/broken.feature:17": "needs_browser_or_live_service",
    }
    project = dataset.card.projects[0]
    assert project.exclusions == {"assertion_failed": 1, "feature_empty": 1, "needs_browser_or_live_service": 1,
                                  "step_pending": 1, "step_undefined": 1}
    assert (project.features_total, project.scenarios_total, project.instances) == (3, 7, 3)

    outline = dataset.instance("minicalc/features/calc.feature:18")
    decls = [d.qualname for g in outline.target_interfaces for d in g.declarations]
    assert decls == ["Calculator.add"]
    assert outline.target_interfaces[0].declaring_type == "minicalc.core.Calculator"
    assert outline.depends_on == ["minicalc/features/calc.feature:9"]
    assert [h.qualname for h in outline.view.target_hidden] == ["Calculator.add"]

    gold = dataset.load_gold()["minicalc/features/calc.feature:18"]
    assert {f.path: f.role for f in gold.closure} == {
        "features/steps/calc_steps.py": "step_definitions", "features/steps/helpers.py": "helper",
        "features/data/seed.txt": "data"}
    assert gold.validation.isolation_runs == [True] * 3
    assert gold.validation.positive_runs == [True] * 3
    assert gold.validation.negative_runs == [False] * 3
    # the API set covers every step, the targets only When/Then
    assert "src/minicalc/core.py:make_calculator" in gold.api_calls
    assert "src/minicalc/core.py:make_calculator" not in gold.target_calls
    assert 38 in gold.covered_lines["src/minicalc/core.py"]  # the seed file was read


def test_agent_visible_file_holds_no_gold(mini_dataset: Path) -> None:
    visible = (mini_dataset / "instances.jsonl").read_text()
    assert "calc_steps.py" not in visible          # no test implementation paths
    assert "then_total" not in visible             # no step definition names
    assert "covered_lines" not in visible and "api_calls" not in visible


def test_bad_inputs_give_one_line_errors(tmp_path: Path, mini_dataset: Path) -> None:
    runner = CliRunner()
    (tmp_path / "nofeatures").mkdir()
    cases = [
        (["build", str(tmp_path / "nofeatures"), "-o", str(tmp_path / "o1")], "has no features/ directory"),
        (["build", "surely-not-a-real-package-req2test==9.9.9", "-o", str(tmp_path / "o2")], "no sdist"),
        (["build", "not a spec", "-o", str(tmp_path / "o3")], "neither an existing directory"),
        (["build", str(tmp_path), "-o", str(mini_dataset)], "already holds another dataset"),
    ]
    for args, message in cases:
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert message in result.output
        assert "Traceback" not in result.output


def test_suite_that_fails_to_initialize(tmp_path: Path) -> None:
    files = dict(MINI_FILES)
    files["features/steps/calc_steps.py"] = "def broken(:\n"
    project = write_project(tmp_path / "p", files)
    with pytest.raises(BuildError, match="fails to initialize: SyntaxError"):
        build_dataset(str(project), tmp_path / "out", BuildOptions(workers=1))
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_force_replaces_a_dataset_and_summary_prints(tmp_path: Path, mini_dataset: Path) -> None:
    target = tmp_path / "copy"
    shutil.copytree(mini_dataset, target)
    project = write_project(tmp_path / "p", MINI_FILES)
    result = CliRunner().invoke(app, ["build", str(project), "-o", str(target), "--force", "-q", "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert "instances: 3" in result.output
    card = json.loads((target / "dataset.json").read_text())
    assert card["projects"][0]["instances"] == 3
    summary = CliRunner().invoke(app, ["summary", str(target)])
    assert summary.exit_code == 0 and "step_undefined 1" in summary.output
    missing = CliRunner().invoke(app, ["summary", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "is not a directory" in missing.output


def test_inferred_then_stripped_kills_match_running_them(example_dataset: Path, tmp_path: Path) -> None:
    """The assertion-dependent subset is the same whether the then-stripped test runs against
    every kill or only against those whose failure came after a Then step definition ran."""
    from tests.conftest import EXAMPLE

    project = tmp_path / "tinyshop"
    shutil.copytree(EXAMPLE, project)
    card = build_dataset(str(project), tmp_path / "every-kill", BuildOptions(workers=2, timeout=60,
                                                                             infer_stripped=False))
    inferred = load_dataset(example_dataset)
    every_kill = load_dataset(tmp_path / "every-kill")
    assert card.mutation["then_stripped_inferred"] == 0
    assert inferred.card.mutation["then_stripped_inferred"] > 0
    assert inferred.card.mutation["then_stripped_runs"] < card.mutation["then_stripped_runs"]
    expected, got = every_kill.load_gold(), inferred.load_gold()
    assert set(expected) == set(got)
    for instance_id, record in expected.items():
        assert set(got[instance_id].kills) == set(record.kills), instance_id
        assert set(got[instance_id].assertion_dependent) == set(record.assertion_dependent), instance_id
    assert any(record.assertion_dependent for record in expected.values())


def test_a_sample_is_a_stated_seeded_slice(tmp_path: Path) -> None:
    project = write_project(tmp_path / "p", MINI_FILES)
    picked = []
    for n in range(2):
        out = tmp_path / f"sample-{n}"
        result = CliRunner().invoke(app, ["build", str(project), "-o", str(out), "--sample", "2", "--sample-seed", "7",
                                          "--workers", "1", "--no-mutants", "-q"])
        assert result.exit_code == 0, result.output
        dataset = load_dataset(out)
        sampled_out = [e for e in dataset.card.exclusions if e.reason == "not_in_sample"]
        assert sampled_out and all("a random sample of 2 of the" in e.detail and "(seed 7)" in e.detail
                                   for e in sampled_out)
        parse_time = {"not_in_sample", "feature_empty", "needs_browser_or_live_service"}  # never candidates
        kept = {i.id for i in dataset.instances} | {e.id for e in dataset.card.exclusions if e.reason not in parse_time}
        assert len(kept) == 2 and not kept & {e.id for e in sampled_out}  # exactly the drawn two went on
        assert f"of the {len(sampled_out) + 2} runnable scenarios" in sampled_out[0].detail
        picked.append(kept)
    assert picked[0] == picked[1]  # the same draw for the same scenarios and seed
    bad = CliRunner().invoke(app, ["build", str(project), "-o", str(tmp_path / "bad"), "--sample", "0"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output
