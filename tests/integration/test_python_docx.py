"""The real corpus: python-docx 1.2.0's own behave suite, from PyPI (slow: ~1 minute)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.build.pipeline import BuildOptions, build_dataset
from bench.dataset import load_dataset

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def docx_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docx") / "dataset"
    build_dataset("python-docx==1.2.0", out, BuildOptions(install_deps=True))
    return out


def test_python_docx_dataset(docx_dataset: Path) -> None:
    dataset = load_dataset(docx_dataset)
    assert dataset.verify() == []
    project = dataset.card.projects[0]
    assert (project.name, project.version, project.features_total) == ("python-docx", "1.2.0", 67)
    assert project.source_sha256 == "7bc9d7b7d8a69c9c02ca09216118c86552704edc23bac179283f2e38f86220ce"
    # every scenario of the suite passes upstream, so every one must validate
    assert project.instances == project.scenarios_total > 200
    assert project.exclusions == {}

    # the paper's example requirement
    example = dataset.instance("python-docx/features/sty-latent-props.feature:36")
    declarations = [(g.declaring_type, d.qualname, d.signature)
                    for g in example.target_interfaces for d in g.declarations]
    assert declarations == [("docx.styles.latent._LatentStyle", "_LatentStyle.name", "@property\ndef name(self):")]
    assert "Scenario: Get latent style name" in example.requirement.gherkin

    gold = dataset.load_gold()
    example_gold = gold[example.id]
    assert {f.path for f in example_gold.closure} == {
        "features/steps/styles.py", "features/steps/helpers.py", "features/steps/test_files/sty-known-styles.docx"}
    assert "src/docx/api.py:Document" in example_gold.api_calls       # setup call, all steps
    assert "src/docx/api.py:Document" not in example_gold.target_calls  # not a When/Then call
    for record in gold.values():
        assert record.validation.positive_runs == [True, True, True]
        assert record.validation.negative_runs == [False, False, False]
        assert record.covered_lines, record.instance_id
    # outlines are one instance whose rows all run
    outline = dataset.instance("python-docx/features/sty-latent-props.feature:7")
    assert outline.requirement.run_lines == [13, 14, 15, 16, 17, 18]
    assert {b.scenario_line for b in gold[outline.id].bindings} == {13, 14, 15, 16, 17, 18}
    assert sum(1 for i in dataset.instances if i.target_interfaces) >= 0.95 * project.instances
