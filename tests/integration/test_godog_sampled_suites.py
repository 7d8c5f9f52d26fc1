"""A testing.T godog project built with ``--sample``: a suite none of whose scenarios was drawn is
neither compiled nor loaded (the build looked for a sampled scenario of every suite and stopped
with ``StopIteration`` on coddy-agent's layout).

``tests/godogshop`` with its flag-driven ``TestMain`` replaced by two testing.T suites, one per
feature file. Needs the Go toolchain and godog v0.14.1 (module cache or proxy): skipped with the
reason when either is missing; slow (two test binaries).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.builder.pipeline import BuildOptions, build_dataset
from bench.dataset import load_dataset

PROJECT = Path(__file__).resolve().parents[1] / "godogshop"

pytestmark = pytest.mark.slow


def _suite(function: str, name: str, path: str) -> str:
    """A testing.T suite as coddy-agent writes them (what discovery reads: the literal)."""
    return (f"func {function}(t *testing.T) {{\n\tsuite := godog.TestSuite{{Name: \"{name}\", "
            f"ScenarioInitializer: InitializeScenario,\n\t\tOptions: &godog.Options{{Format: \"pretty\", "
            f"Paths: []string{{\"{path}\"}}, TestingT: t, Strict: true}}}}\n"
            "\tif suite.Run() != 0 {\n\t\tt.Fatal(\"failed\")\n\t}\n}\n")


SUITES = ("package bdd\n\nimport (\n\t\"testing\"\n\n\t\"github.com/cucumber/godog\"\n)\n\n"
          + _suite("TestCart", "cart", "features/cart.feature") + "\n"
          + _suite("TestOther", "other", "features/other.feature"))

SETTINGS = '''[tool.req2test]
framework = "godog"
features = "bdd/features"
production = ["shop"]
'''


def test_a_sampled_build_skips_the_suites_it_drew_nothing_from(tmp_path: Path) -> None:
    from bench.frameworks.godog.toolchain import GoToolchain, download_modules

    try:
        toolchain = GoToolchain.find()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    project = tmp_path / "godogshop"
    shutil.copytree(PROJECT, project)
    (project / "bdd" / "main_test.go").write_text(SUITES)
    (project / "req2test.toml").write_text(SETTINGS)
    downloaded = download_modules(project, toolchain)
    if not downloaded.ok:
        pytest.skip(f"godog v0.14.1's modules are neither cached nor downloadable: {downloaded.output[-300:]}")
    out = tmp_path / "ds"
    build_dataset(str(project), out, BuildOptions(mutants=False, workers=1, runs=1, isolation="none", sample=1,
                                                  sample_seed=0))
    dataset = load_dataset(out)
    reasons = [e.reason for e in dataset.card.exclusions]
    # one runnable scenario drawn, every other one excluded as not in the sample (or for its own reason)
    assert reasons.count("not_in_sample") >= 3, reasons
    drawn = [i.id for i in dataset.instances] + [e.id for e in dataset.card.exclusions if e.reason != "not_in_sample"]
    assert len(drawn) == 1, drawn
