"""The framework protocol and its registry: name → implementation, built in, registered in
code or installed through the ``req2test.frameworks`` entry point group."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.frameworks import registry
from bench.frameworks.behave.framework import BehaveFramework
from bench.frameworks.protocol import Framework
from bench.project import SourceError, resolve_source
from tests.toyfw import ToyFramework  # the smallest complete implementation: what a framework provides


class _NotAFramework:
    """What a registration may name by mistake: not a ``Framework``."""


@pytest.fixture
def clean_registry(monkeypatch: pytest.MonkeyPatch):
    # registrations made by a test go to copies, put back after it
    monkeypatch.setattr(registry, "_REGISTRY", registry._REGISTRY.copy())
    monkeypatch.setattr(registry, "_instances", dict(registry._instances))


def test_behave_is_the_default_and_built_in() -> None:
    framework = registry.get_framework()
    assert isinstance(framework, BehaveFramework)
    assert registry.get_framework("behave") is framework  # one instance per name
    assert "behave" in registry.available()
    assert framework.language.name == "python"
    assert framework.version() and framework.runtime_packages()[0].startswith("behave==")


def test_behave_commands_are_what_the_callers_ran_before_the_protocol() -> None:
    behave = registry.get_framework("behave")
    assert behave.run_command("features/a.feature", [3, 9]) == [
        "-m", "behave", "--no-summary", "--no-snippets", "-f", "plain", "features/a.feature:3", "features/a.feature:9"]
    assert behave.run_command("features/a.feature", [3], stop=True, report="/tmp/r.json") == [
        "-m", "behave", "--stop", "--no-summary", "--no-snippets", "-f", "json", "-o", "/tmp/r.json",
        "features/a.feature:3"]
    assert behave.dry_run_command("features") == ["-m", "behave", "--dry-run", "--no-summary", "-f", "null",
                                                  "features"]


def test_unknown_name_says_what_is_available() -> None:
    with pytest.raises(registry.UnknownFramework, match="no test framework named 'nosuch'; available: .*behave"):
        registry.get_framework("nosuch")


def test_register_a_class_or_an_import_path(clean_registry) -> None:
    registry.register("toy", ToyFramework)
    assert isinstance(registry.get_framework("toy"), ToyFramework)
    assert "toy" in registry.available()
    registry.register("toy2", "tests.toyfw:ToyFramework")
    assert registry.get_framework("toy2").run_command("f.feature", [1])[1:] == ["f.feature:1"]


def test_what_is_not_a_framework_is_refused(clean_registry) -> None:
    registry.register("bad", f"{__name__}:_NotAFramework")
    with pytest.raises(registry.UnknownFramework, match="not a bench.frameworks.protocol.Framework"):
        registry.get_framework("bad")
    registry.register("missing", "no_such_module_anywhere:Thing")
    with pytest.raises(registry.UnknownFramework, match="cannot load test framework"):
        registry.get_framework("missing")


def test_an_incomplete_implementation_cannot_be_instantiated(clean_registry) -> None:
    class Half(Framework):
        name = "half"

    registry.register("half", Half)
    with pytest.raises(TypeError, match="abstract"):
        registry.get_framework("half")


def test_an_installed_package_registers_through_its_entry_point(tmp_path: Path, clean_registry,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "toyfw_pkg.py").write_text(textwrap.dedent("""
        from tests.toyfw import ToyFramework as Installed
    """), encoding="utf-8")
    dist = tmp_path / "toyfw-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toyfw\nVersion: 0.1\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text("[req2test.frameworks]\ninstalled-toy = toyfw_pkg:Installed\n",
                                           encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "installed-toy" in registry.available()
    assert isinstance(registry.get_framework("installed-toy"), ToyFramework)
    sys.modules.pop("toyfw_pkg", None)


def test_a_project_names_its_framework_and_an_unknown_one_is_a_clear_error(mini_project: Path) -> None:
    assert resolve_source(str(mini_project)).framework == "behave"
    pyproject = mini_project / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8") if pyproject.exists() else ""
    if "[tool.req2test]" in text:
        text = text.replace("[tool.req2test]", "[tool.req2test]\nframework = \"cucumber-lisp\"")
    else:
        text += "\n[tool.req2test]\nframework = \"cucumber-lisp\"\n"
    pyproject.write_text(text, encoding="utf-8")
    with pytest.raises(SourceError, match="framework = 'cucumber-lisp' is not a known test framework"):
        resolve_source(str(mini_project))


def test_a_dataset_card_names_the_framework_through_its_runner_label() -> None:
    from bench.builder.pipeline import _runner_label
    from bench.model import ProjectRecord

    label = _runner_label("behave")
    assert label == f"behave {registry.get_framework('behave').version()}"
    fields = {name: field for name, field in ProjectRecord.model_fields.items()}
    assert "framework" not in fields  # derived, so cards stay byte-identical
    record = ProjectRecord.model_construct(runner=label)
    assert record.framework == "behave"


def test_the_cli_prints_the_unknown_framework_error_as_written(mini_project: Path, tmp_path: Path) -> None:
    pyproject = mini_project / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8") if pyproject.exists() else ""
    text = text.replace("[tool.req2test]", "[tool.req2test]\nframework = \"nosuch\"") if "[tool.req2test]" in text \
        else text + "\n[tool.req2test]\nframework = \"nosuch\"\n"
    pyproject.write_text(text, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "build", str(mini_project), "-o", str(tmp_path / "ds")],
                          capture_output=True, text=True, check=False, env={**os.environ, "COLUMNS": "300"})
    assert proc.returncode == 2
    assert "[tool.req2test] framework = 'nosuch' is not a known test framework (available: behave" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_prompts_and_the_builtin_agents_tools_speak_the_projects_framework(clean_registry, mini_dataset) -> None:
    from bench.dataset import load_dataset
    from harness.agents.base import AgentTask
    from harness.agents.builtin import TOOL_NAMES, task_messages, tools_for

    registry.register("toy", ToyFramework)
    instance = load_dataset(mini_dataset).instances[0]
    behave_task = AgentTask(instance=instance, view="th", features_dir="features", python_path="/workspace/src")
    toy_task = behave_task.model_copy(update={"framework": "toy"})
    behave_text = "\n".join(m["content"] for m in task_messages(behave_task))
    toy_text = "\n".join(m["content"] for m in task_messages(toy_task))
    assert "behave step definitions" in behave_text and "runs with behave" in behave_text
    assert "Write Python files" in behave_text and "features/environment.py" in behave_text
    assert "toy step glue" in toy_text and "runs with toyrunner" in toy_text
    assert "Write Toyscript files" in toy_text and "features/hooks.toy" in toy_text and "behave" not in toy_text
    run_tool = next(t for t in tools_for(ToyFramework().prompt_terms()) if t["function"]["name"] == "run")
    assert "toyrunner run ..." in run_tool["function"]["description"]
    assert TOOL_NAMES == tuple(t["function"]["name"] for t in tools_for(registry.get_framework("behave").prompt_terms()))
