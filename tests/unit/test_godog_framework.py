"""``GodogFramework`` without the Go toolchain: the registry entry, the commands, a project's
settings (``package``, tags, the godog version of go.mod) and what is not implemented yet."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.frameworks.godog.framework import GodogFramework
from bench.frameworks.godog.settings import (
    GodogSettingsError,
    package_of_feature,
    read_settings,
    required_godog,
)
from bench.frameworks.registry import available, get_framework
from bench.judging import UnsupportedByFramework
from bench.project import resolve_source

SHOP = Path(__file__).resolve().parents[1] / "godogshop"


def test_registered_with_its_language_and_no_python_runtime() -> None:
    assert "godog" in available()
    godog = get_framework("godog")
    assert isinstance(godog, GodogFramework) and godog.name == "godog"
    assert godog.language.name == "go" and godog.language.source_suffixes == (".go",)
    assert godog.interpreter == "go" and not godog.needs_python_runtime
    assert godog.runtime_packages() == [] and {"go.mod", "go.sum"} <= godog.runner_config_files
    terms = godog.prompt_terms()
    assert terms.code_fence == "go" and "ctx.Step(pattern, handler)" in terms.step_definitions
    assert terms.placeholder == 'panic("implementation hidden")'


def test_commands_are_go_test_of_the_features_package() -> None:
    godog = get_framework("godog")
    assert godog.run_command("test/features/unit/offline.feature", [4, 9]) == [
        "test", "-count=1", "-run=^$", "./test", "-args", "--godog.strict=true",
        "features/unit/offline.feature:4", "features/unit/offline.feature:9"]
    assert godog.run_command("features/a.feature", [3], stop=True, report="/tmp/r.json") == [
        "test", "-count=1", "-run=^$", ".", "-args", "--godog.strict=true", "--godog.stop-on-failure",
        "--godog.format=cucumber:/tmp/r.json", "features/a.feature:3"]
    dry = godog.dry_run_command("bdd/features")
    assert dry[:5] == ["test", "-count=1", "-run=^$", "./bdd", "-args"] and dry[-1] == "features"
    assert any(a.startswith("--godog.tags=@req2test-") for a in dry)
    assert package_of_feature("a/b/features/x/features/y.feature") == ("a/b/features/x", "features/y.feature")
    assert package_of_feature("steps/y.feature") == ("steps", "y.feature")


def test_settings_package_tags_and_version(tmp_path: Path) -> None:
    project = tmp_path / "shop"
    shutil.copytree(SHOP, project)
    settings = read_settings(project)
    assert settings.package == "bdd" and settings.tags == ("cart",) and settings.godog_tags == ["@cart"]
    assert required_godog(project) == "0.14.1"
    source = resolve_source(str(project))
    assert source.framework == "godog" and source.production == ["shop"] and source.dependencies == []
    # without ``package``: the nearest directory above the features with *_test.go files
    text = (project / "req2test.toml").read_text().replace('package = "bdd"\n', "")
    (project / "req2test.toml").write_text(text)
    assert read_settings(project).package == "bdd"
    (project / "req2test.toml").write_text(text.replace('features = "bdd/features"', 'features = "bdd/features"\n'
                                                                                     'package = "shop"'))
    with pytest.raises(GodogSettingsError, match="holds no \\*_test.go files"):
        read_settings(project)


def test_what_is_not_implemented_says_so(tmp_path: Path) -> None:
    godog = get_framework("godog")
    with pytest.raises(UnsupportedByFramework, match="suite calibration"):
        godog.calibration_files(SHOP, [], suite=True)
    assert godog.workspace_links(SHOP) == {}
    assert godog.parser_differences(SHOP, None) == []  # type: ignore[arg-type]
