"""Godog runs on the real corpus: go-algorand-sdk v2.12.0 with algorand-sdk-testing's Gherkin
(slow: assembled from the mirrors or GitHub, its modules downloaded through the Go module
proxy, its test binary compiled with coverage, ~5 min cold on two busy cores, seconds warm).

One test binary, one process per scenario: a plain scenario, an Examples row (run from a
one-row copy of the feature), a third file's scenario, and failing and undefined steps of a
feature written here, each read from godog's cucumber JSON and bound to the suite's step
definitions (``--godog.definitions``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bench.frameworks.godog.cucumber_json import StepMatch
from bench.frameworks.godog.definitions import bind
from bench.frameworks.godog.runner import list_definitions, run_scenario
from bench.frameworks.godog.toolchain import GoToolchain, build_test_binary, download_modules, module_path
from tests.integration.recipes import recipe

ROOT = Path(__file__).resolve().parents[2]
corpus = recipe("go_algorand_sdk")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str]]:
    try:
        toolchain = GoToolchain.find()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    base = tmp_path_factory.mktemp("goalgorand")
    try:
        project = corpus.assemble(base / "go-algorand-sdk", corpus.default_source("go-algorand-sdk"),
                                  corpus.default_source("algorand-sdk-testing"))
    except (subprocess.CalledProcessError, SystemExit) as exc:
        pytest.skip(f"the go-algorand-sdk corpus cannot be assembled here (no mirror, no network?): {exc}")
    downloaded = download_modules(project, toolchain)
    if not downloaded.ok:
        pytest.skip(f"go mod download failed (no module proxy?): {downloaded.output[-300:]}")
    binary = base / "bin" / "test.cover"
    result = build_test_binary(project, corpus.TEST_PACKAGE, binary, toolchain, cover=corpus.PRODUCTION)
    assert result.ok, result.output
    return project, binary, corpus.unit_tags(project)


def test_corpus_settings(built: tuple[Path, Path, list[str]]) -> None:
    project, _, tags = built
    settings = (project / "req2test.toml").read_text()
    assert 'framework = "godog"' in settings and 'features = "test/features"' in settings
    assert "unit.offline" in tags and (project / "test/features/unit/offline.feature").is_file()
    # algorand-sdk-testing at 7c67284 removed dryrun, as go-algorand-sdk v2.12.0 did
    assert not list((project / "test/features").rglob("dryrun*.feature"))


def test_one_scenario_per_process_with_bindings_and_coverage(built: tuple[Path, Path, list[str]],
                                                              tmp_path: Path) -> None:
    project, binary, tags = built
    definitions = list_definitions(binary, project, corpus.TEST_PACKAGE)
    assert len(definitions) == 305
    steps_go = (project / "test/steps_test.go").read_text().splitlines()

    plain = run_scenario(binary, project, "test", "test/features/unit/offline.feature", 4, tmp_path / "plain",
                         tags=tags, coverage=True)
    assert plain.passed, plain.output
    scenario = plain.scenario
    assert scenario is not None and scenario.name == "Encode and decode addresses"
    assert scenario.uri == "test/features/unit/offline.feature"
    first = scenario.steps[0]
    assert (first.keyword, first.text, first.status) == ("When", "I generate a key", "passed")
    assert first.match is not None and first.match.file == "steps_test.go"
    assert steps_go[first.match.line - 1].startswith("func genKey(")
    bound = bind(first.text, definitions)
    assert bound is not None and bound.function == "genKey" and bound.location == first.location
    # per-scenario coverage of production: the address round trip runs types/address.go
    assert plain.coverage is not None, plain.coverage_problem
    covered, instrumented = plain.coverage.lines(module_path(project), corpus.PRODUCTION)
    assert covered.get("types/address.go") and set(covered) <= set(instrumented)
    assert all(path.split("/")[0] in corpus.PRODUCTION for path in covered)

    # an Examples row: godog selects scenario lines only, so the run is of a one-row copy
    row = run_scenario(binary, project, "test", "test/features/unit/responses.feature", 12, tmp_path / "row",
                       tags=tags)
    assert row.passed, row.output
    assert [(s.uri, s.line) for s in row.report.scenarios] == [("test/features/unit/responses.feature", 12)]
    assert row.scenario is not None and "searchForAccounts" in row.scenario.name
    assert all(s.match is not None and s.match.file == "responses_unit_test.go" for s in row.scenario.steps)
    assert all(bind(s.text, definitions).location == s.location for s in row.scenario.steps)

    # an outline's own line runs all its rows (lines 12-19): not a run of one scenario
    whole = run_scenario(binary, project, "test", "test/features/unit/abijson.feature", 5, tmp_path / "whole",
                         tags=tags)
    assert [s.line for s in whole.report.scenarios] == list(range(12, 20)) and not whole.passed
    assert whole.exit_code == 0 and all(s.passed for s in whole.report.scenarios)
    one = run_scenario(binary, project, "test", "test/features/unit/abijson.feature", 15, tmp_path / "one",
                       tags=tags)
    assert one.passed and [s.line for s in one.report.scenarios] == [15]


def test_failing_and_undefined_steps(built: tuple[Path, Path, list[str]], tmp_path: Path) -> None:
    project, binary, _ = built
    feature = tmp_path / "probe.feature"
    feature.write_text("Feature: probe\n\n"
                       "  Scenario: a wrong mnemonic\n"
                       '    Given mnemonic for private key "not a mnemonic"\n'
                       "    When I convert the private key back to a mnemonic\n\n"
                       "  Scenario: nobody wrote it\n"
                       "    Given a step nobody registered\n")
    failed = run_scenario(binary, project, "test", str(feature), 3, tmp_path / "failed")
    assert failed.exit_code == 1 and not failed.passed
    assert failed.scenario is not None
    assert [s.status for s in failed.scenario.steps] == ["failed", "skipped"]
    assert failed.scenario.steps[0].error and failed.scenario.steps[0].match == StepMatch(
        "steps_test.go", failed.scenario.steps[0].match.line)
    undefined = run_scenario(binary, project, "test", str(feature), 7, tmp_path / "undefined")
    assert undefined.exit_code == 1 and undefined.scenario is not None  # --godog.strict
    assert undefined.scenario.steps[0].status == "undefined" and undefined.scenario.steps[0].match is None
    # a scenario outside the tags runs nothing
    excluded = run_scenario(binary, project, "test", str(feature), 3, tmp_path / "excluded", tags=["unit.offline"])
    assert excluded.report.scenarios == () and not excluded.passed

