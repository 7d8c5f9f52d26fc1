"""Cucumber-JVM runs on the real corpus: java-algorand-sdk v2.10.1 with algorand-sdk-testing's
Gherkin (slow: assembled from the mirrors or GitHub, its dependencies brought from Maven
Central into ~/.cache/req2test/maven, ``mvn test-compile`` once (~1.5-2 min on two busy cores
cold, ~1 min warm), then one JVM per scenario, ~10 s of CPU each).

One compile, one JVM per scenario: a plain scenario, an Examples row selected by its own line
(with the message plugin: every step definition of the glue listed) and a row with JaCoCo
coverage, each read from the JSON formatter and bound to the Java step methods.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from bench.frameworks.cucumber_jvm.cucumber_json import JavaMethod
from bench.frameworks.cucumber_jvm.jacoco import report
from bench.frameworks.cucumber_jvm.pickles import suite_pickles
from bench.frameworks.cucumber_jvm.runner import Jacoco, Suite, run_scenario
from bench.frameworks.cucumber_jvm.toolchain import (
    JavaToolchain,
    build_classpath,
    compile_tests,
    jacoco_jars,
    runtime_classpath,
)
from tests.integration.recipes import recipe

corpus = recipe("java_algorand_sdk")

pytestmark = pytest.mark.slow

UNIT = "src/test/resources/com/algorand/algosdk/unit"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Suite, JavaToolchain]:
    try:
        toolchain = JavaToolchain.find()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    if shutil.which("git") is None:
        pytest.skip("no git on PATH: the corpus is assembled with git")
    base = tmp_path_factory.mktemp("javaalgorand")
    try:
        project = corpus.assemble(base / "java-algorand-sdk", corpus.default_source("java-algorand-sdk"),
                                  corpus.default_source("algorand-sdk-testing"))
    except (subprocess.CalledProcessError, SystemExit) as exc:
        pytest.skip(f"the java-algorand-sdk corpus cannot be assembled here (no mirror, no network?): {exc}")
    compiled = compile_tests(project, toolchain)
    if not compiled.ok and "Could not resolve" in compiled.output:
        pytest.skip(f"mvn test-compile cannot reach Maven Central: {compiled.output[-300:]}")
    assert compiled.ok, compiled.output
    result, dependencies = build_classpath(project, base / "classpath.txt", toolchain)
    assert result.ok and dependencies, result.output
    suite = Suite(root=project, classpath=tuple(runtime_classpath(project, dependencies)), glue=tuple(corpus.GLUE),
                  tags=tuple(corpus.unit_tags(project)))
    return suite, toolchain


def test_corpus_settings(built: tuple[Suite, JavaToolchain]) -> None:
    suite, _ = built
    settings = (suite.root / "req2test.toml").read_text()
    assert 'framework = "cucumber-jvm"' in settings and f'features = "{UNIT}"' in settings
    assert "unit.offline" in suite.tags
    # test-harness.sh moves offline.feature to integration and the mock responses to the classpath root
    assert (suite.root / "src/test/resources/com/algorand/algosdk/integration/offline.feature").is_file()
    assert (suite.root / "src/test/resources/v2algodclient_responsejsons").is_dir()
    pickles = suite_pickles(suite.root, corpus.FEATURES, list(suite.tags))
    assert len(pickles) == 454 and sum(p.outline_row for p in pickles) == 451


def test_plain_scenario_and_outline_row(built: tuple[Suite, JavaToolchain], tmp_path: Path) -> None:
    suite, _ = built
    plain = run_scenario(suite, f"{UNIT}/atomic_transaction_composer.feature", 170, tmp_path / "plain")
    assert plain.passed, plain.output
    scenario = plain.scenario
    assert scenario is not None and scenario.name == "Initial status" and scenario.keyword == "Scenario"
    assert scenario.uri == f"{UNIT}/atomic_transaction_composer.feature"
    assert all(s.match is not None and s.match.class_name.startswith("com.algorand.algosdk.") for s in scenario.steps)
    assert any(s.match.class_name == "com.algorand.algosdk.unit.AtomicTxnComposer" for s in scenario.steps)

    row = run_scenario(suite, f"{UNIT}/transactions.feature", 16, tmp_path / "row", messages=True)
    assert row.passed, row.output
    (only,) = row.report.scenarios  # the row alone: the outline at line 7 has 27 rows
    assert only.line == 16 and only.keyword == "Scenario Outline" and only.name == "Application Transaction Tests (create)"
    background = only.steps[0]
    assert background.background and background.match == JavaMethod(
        "com.algorand.algosdk.unit.Base", "a_signing_account_with_address_and_mnemonic",
        ("java.lang.String", "java.lang.String"))
    assert [s.match.method for s in only.steps[1:]] == [
        "buildApplicationTransactions", "sign_the_transaction", "the_base64_encoded_signed_transaction_should_equal",
        "the_decoded_transaction_should_equal_the_original"]
    assert only.steps[1].match.class_name == "com.algorand.algosdk.cucumber.shared.TransactionSteps"
    assert row.messages is not None and len(row.messages.definitions) == 184  # 14 glue classes' @Given/@When/@Then
    assert not any(d.regex for d in row.messages.definitions)  # all Cucumber expressions


def test_row_with_jacoco_coverage(built: tuple[Suite, JavaToolchain], tmp_path: Path) -> None:
    suite, toolchain = built
    agent, cli = jacoco_jars(toolchain)
    run = run_scenario(suite, f"{UNIT}/responses.feature", 12, tmp_path / "row",
                       jacoco=Jacoco(agent, (corpus.PRODUCTION_PACKAGE,)))
    assert run.passed, run.output
    assert run.scenario is not None and run.scenario.line == 12
    result = report(toolchain.java, cli, run.exec_file, suite.root / "target/classes", suite.root / "src/main/java",
                    tmp_path / "jacoco.xml")
    assert result.coverage is not None, result.problem
    covered, instrumented = result.coverage.under("src/main/java")
    assert any(p.startswith("src/main/java/com/algorand/algosdk/v2/client/") for p in covered)
    assert all(lines <= instrumented[p] for p, lines in covered.items())


def test_the_warm_runner_agrees_with_fresh_jvms(built: tuple[Suite, JavaToolchain], tmp_path: Path) -> None:
    """The builder's warm runner (one JVM, a class loader per run) against a fresh JVM per run,
    on scenarios of several feature files; a run that times out halts the warm JVM and the next
    run starts a new one."""
    from bench.frameworks.cucumber_jvm.warm_runner import WarmRunner, warm_suite

    suite, _ = built
    jars = [p for p in suite.classpath if p.endswith(".jar")]
    directories = [p for p in suite.classpath if not p.endswith(".jar")]
    runner = WarmRunner(warm_suite(jars, directories, suite.root, suite.glue, suite.tags))
    try:
        pickles = suite_pickles(suite.root, corpus.FEATURES, list(suite.tags))
        sample = [pickles[i * len(pickles) // 6] for i in range(6)]
        for n, pickle in enumerate(sample):
            warm = runner.run(pickle.feature, pickle.line, tmp_path / f"warm-{n}")
            fresh = run_scenario(suite, pickle.feature, pickle.line, tmp_path / f"fresh-{n}")
            assert warm.passed == fresh.passed, (pickle, warm.output, fresh.output)
            assert warm.scenario is not None and fresh.scenario is not None
            assert [s.status for s in warm.scenario.steps] == [s.status for s in fresh.scenario.steps]
            assert [s.match for s in warm.scenario.steps] == [s.match for s in fresh.scenario.steps]
        slow = runner.run(sample[0].feature, sample[0].line, tmp_path / "timeout", timeout=0.001)
        assert slow.timed_out and not slow.passed and runner.restarts == 1
        again = runner.run(sample[0].feature, sample[0].line, tmp_path / "again")
        assert again.passed == run_scenario(suite, sample[0].feature, sample[0].line, tmp_path / "f2").passed
    finally:
        runner.close()
