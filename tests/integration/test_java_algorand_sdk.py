"""The Cucumber-JVM corpus: java-algorand-sdk v2.10.1 with the Gherkin of algorand-sdk-testing
0335a56 (slow: assembled at pinned commits, its dependencies from Maven Central into
~/.cache/req2test/maven, built with mutant schemata, calibrated).

One requirement, four languages: the same feature files are the py-algorand-sdk (behave),
js-algorand-sdk (cucumber-js) and go-algorand-sdk (godog) corpora. The corpus is assembled from the
fetched mirrors by a recipe kept outside the repository (tests/integration/recipes.py); skipped,
saying why, when the recipe or the mirrors are absent, or Maven Central cannot be reached.

CI's slice: the scenarios of the ABI JSON, TEAL-signing and program-sanity features (four
tags), with mutants in every production file they cover; docs/measured.md has the whole unit
suite.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from bench.builder.pipeline import BuildOptions, build_dataset
from bench.dataset import load_dataset
from tests.integration.recipes import recipe

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("mvn") is None or shutil.which("javac") is None,
                                                   reason="no JDK or Maven")]

ROOT = Path(__file__).resolve().parents[2]
corpus = recipe("java_algorand_sdk")

CI_TAGS = ["unit.abijson", "unit.abijson.byname", "unit.tealsign", "unit.program_sanity_check"]


@pytest.fixture(scope="module")
def java_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("javaalgorand")
    try:
        project = corpus.assemble(base / "java-algorand-sdk", corpus.default_source("java-algorand-sdk"),
                                  corpus.default_source("algorand-sdk-testing"))
    except (subprocess.CalledProcessError, SystemExit) as exc:
        pytest.skip(f"the java-algorand-sdk corpus cannot be fetched here: {exc}")
    settings = project / "req2test.toml"
    text = re.sub(r"(?m)^tags = \[.*\]$", f"tags = {json.dumps(CI_TAGS)}", settings.read_text())
    assert f"tags = {json.dumps(CI_TAGS)}" in text
    settings.write_text(text)
    out = base / "dataset"
    try:
        build_dataset(str(project), out, BuildOptions(name="java-algorand-sdk", workers=2, runs=2))
    except Exception as exc:
        if "Could not resolve" in str(exc) or "Could not transfer" in str(exc):
            pytest.skip(f"Maven Central cannot be reached: {exc}")
        raise
    return out


def test_java_algorand_sdk_builds_with_mutants_and_fresh_agreement(java_dataset: Path) -> None:
    dataset = load_dataset(java_dataset)
    assert dataset.verify() == []
    project = dataset.card.projects[0]
    assert (project.name, project.runner) == ("java-algorand-sdk", "cucumber-jvm 6.6.0")
    # every selected scenario is an instance (15) or excluded with a reason
    assert project.instances >= 14, project.exclusions
    assert set(project.exclusions) <= {"not_selected_by_tags"}, project.exclusions
    gold = dataset.load_gold()
    assert {f.path.split("/com/algorand/algosdk/")[0] for g in gold.values() for f in g.closure} == {"src/test/java"}
    assert all(g.api_calls and g.covered_lines for g in gold.values())
    mutation = dataset.card.mutation
    assert mutation["mutants"] > 800 and mutation["scorable_instances"] >= 14
    assert mutation["schemata_clean_not_passing"] == [] and mutation["build_failures"] == []
    assert sum(len(g.assertion_dependent) for g in gold.values()) > 0  # the then-stripped subset exists
    fresh = mutation["fresh_check"]
    assert fresh["sampled"] >= 60 and fresh["agree"] == fresh["sampled"], fresh["disagreements"]


def test_views_hide_step_methods_and_production_bodies(java_dataset: Path, tmp_path: Path) -> None:
    from harness.views import materialize

    dataset = load_dataset(java_dataset)
    gold = dataset.load_gold()
    instance_id = min(i for i, g in gold.items() if g.kills)
    th = materialize(java_dataset, instance_id, "th", cache_dir=tmp_path / "views")
    for rel in {ref.file for ref in gold[instance_id].step_definitions}:  # every step method of the suite goes
        assert not re.search(r"@(Given|When|Then|And|But)\(", (th.root / rel).read_text()), rel
    spans = dataset.instance(instance_id).view.target_hidden
    assert spans and th.manifest.hidden
    assert 'throw new UnsupportedOperationException("implementation hidden");' in (th.root / spans[0].file).read_text()
    ah = materialize(java_dataset, instance_id, "ah", cache_dir=tmp_path / "views")
    assert len(ah.manifest.hidden) > 2000  # every production body of src/main/java
