"""An arm's own prompt paragraphs and templates, given by path (issue 30, item 1).

A path is relative to the experiment file (never to the working directory), a missing one is one
located line, the text is what the cache key hashes and what plan.json records, and ``req2test
prompts`` lists what ships. The last test does it from an installed wheel, where the shipped
prompts live in site-packages and the user's file must still be read from beside the experiment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from harness.agents.base import AgentTask
from harness.agents.builtin import task_messages
from harness.cli_prompts import example_instance, prompts_command
from harness.experiment.config import Experiment, ExperimentError, load_experiment
from harness.experiment.journal import claim_run_dir
from harness.experiment.plan import CacheKeys, ExperimentPlan, arm_options, prepare
from harness.experiment.prompt_files import own_files_sha256, prompt_key, resolve_prompts
from harness.prompts import available_paragraphs, paragraph, paragraph_file
from tests.wheels import build_wheel

REPO = Path(__file__).resolve().parents[2]
MINE = "# Mine\n\nCheck the whole receipt, line by line, against the fixture receipt.txt.\n"


def _experiment(tmp_path: Path, arms: str) -> Path:
    (tmp_path / "exp").mkdir(exist_ok=True)
    path = tmp_path / "exp" / "experiment.yaml"
    path.write_text(f"name: mine\ndataset: ds\narms:\n{textwrap.dedent(arms)}", encoding="utf-8")
    return path


def _resolved(path: Path) -> Experiment:
    experiment, text = load_experiment(path)
    experiment, _, errors = resolve_prompts(experiment, path, text)
    assert errors == []
    return experiment


def _user_prompt(experiment: Experiment, arm: int = 0) -> str:
    options = arm_options(experiment, experiment.arms[arm], "th", None)
    task = AgentTask(instance=example_instance(), view="th", features_dir="features", python_path="/workspace/src",
                     paragraphs=options.paragraphs, template=options.template, prompt_texts=options.prompt_texts)
    return task_messages(task)[1]["content"]


def test_a_paragraph_given_by_a_relative_path_is_in_the_prompt(tmp_path: Path, monkeypatch) -> None:
    path = _experiment(tmp_path, """\
      - {name: mine, model: openai/x, paragraphs: [grounding, ./my.md]}
      - {name: abs, model: openai/x, paragraphs: [%s]}
    """ % (tmp_path / "exp" / "my.md"))
    (tmp_path / "exp" / "my.md").write_text(MINE, encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # relative to the experiment file, not to where the command runs
    experiment = _resolved(path)
    assert experiment.arms[0].paragraphs == ["grounding", str(tmp_path / "exp" / "my.md")]
    user = _user_prompt(experiment)
    assert MINE.strip() in user and paragraph("grounding") in user
    assert user.index(paragraph("grounding")) < user.index(MINE.strip())  # the arm's order
    assert MINE.strip() in _user_prompt(experiment, 1)


def test_an_arm_template_of_its_own_replaces_the_task_template(tmp_path: Path) -> None:
    path = _experiment(tmp_path, "  - {name: t, model: openai/x, paragraphs: [./my.md], template: my_task.md.j2}\n")
    (tmp_path / "exp" / "my.md").write_text(MINE, encoding="utf-8")
    (tmp_path / "exp" / "my_task.md.j2").write_text(
        "Implement {{ requirement.scenario_name }}.\n{% for p in paragraphs %}\n{{ p }}\n{% endfor %}\n", encoding="utf-8")
    user = _user_prompt(_resolved(path))
    assert user.startswith("Implement Adding an item updates the total.\n") and MINE.strip() in user
    assert "# The repository view" not in user  # the shipped template's text is gone


def test_a_missing_path_is_one_located_line_of_the_plan(tmp_path: Path) -> None:
    path = _experiment(tmp_path, """\
      - name: mine
        model: openai/x
        paragraphs: [grounding, ./missing.md]
      - {name: t, model: openai/x, template: ./nope.md.j2, paragraphs: [grounding.md, nosuch]}
    """)
    with pytest.raises(ExperimentError) as info:
        prepare(path)
    lines = str(info.value).splitlines()
    here = tmp_path / "exp"
    assert f"{path}:6: arms[0].paragraphs[1]: no paragraph file {here / 'missing.md'}" in lines
    assert f"{path}:7: arms[1].template: no template file {here / 'nope.md.j2'}" in lines
    assert (f"{path}:7: arms[1].paragraphs[0]: no paragraph file {here / 'grounding.md'} (the shipped paragraph "
            "is named grounding, without .md)") in lines
    assert any(line.startswith(f"{path}:7: arms[1].paragraphs[1]: no paragraph 'nosuch' in ") for line in lines)
    assert not any("Traceback" in line for line in lines)


def _key(path: Path, plan: ExperimentPlan) -> str:
    experiment = _resolved(path)
    return CacheKeys(experiment, plan).generation("generation", arm_options(experiment, experiment.arms[0], "th",
                                                                              None))


def test_editing_the_paragraph_file_changes_the_cache_key(tmp_path: Path) -> None:
    path = _experiment(tmp_path, "  - {name: mine, model: openai/x, paragraphs: [./my.md]}\n")
    mine = tmp_path / "exp" / "my.md"
    mine.write_text(MINE, encoding="utf-8")
    plan = ExperimentPlan(name="mine", file=str(path), experiment={}, dataset_dir=str(tmp_path),
                          dataset_card_sha256="0" * 64, instances=[])
    first = _key(path, plan)
    assert _key(path, plan) == first
    mine.write_text(MINE + "Also check the tax line.\n", encoding="utf-8")
    assert _key(path, plan) != first
    mine.write_text(MINE, encoding="utf-8")
    assert _key(path, plan) == first
    # the text is the key, not where it lies: a moved experiment directory keeps its cache
    moved = tmp_path / "moved"
    (tmp_path / "exp").rename(moved)
    assert _key(moved / "experiment.yaml", plan) == first
    # arms of shipped paragraphs only keep the keys their caches were written under
    assert prompt_key(["grounding"], None, {}) == {"paragraphs": ["grounding"]}


def test_the_run_records_each_file_and_notices_an_edit(tmp_path: Path) -> None:
    path = _experiment(tmp_path, "  - {name: mine, model: openai/x, paragraphs: [grounding, ./my.md]}\n")
    (tmp_path / "exp" / "my.md").write_text(MINE, encoding="utf-8")
    experiment, text = load_experiment(path)
    _, files, _ = resolve_prompts(experiment, path, text)
    assert [(f.entry, f.shipped, f.path) for f in files] == [
        ("grounding", True, str(paragraph_file("grounding"))), ("./my.md", False, str(tmp_path / "exp" / "my.md"))]
    import hashlib

    assert files[1].sha256 == hashlib.sha256(MINE.encode()).hexdigest()
    assert own_files_sha256(files[:1]) is None  # shipped only: what plan.json of earlier runs compares to

    def plan(sha: str | None) -> ExperimentPlan:
        return ExperimentPlan(name="mine", file=str(path), experiment={"name": "mine"}, dataset_dir="d",
                              dataset_card_sha256="0", instances=["a"], prompt_files=files, prompt_files_sha256=sha)

    run = tmp_path / "run"
    claim_run_dir(run, plan(own_files_sha256(files)), text)
    recorded = json.loads((run / "plan.json").read_text(encoding="utf-8"))
    assert recorded["prompt_files"][1]["sha256"] == files[1].sha256
    claim_run_dir(run, plan(own_files_sha256(files)), text)  # the same files: the run resumes
    with pytest.raises(ExperimentError, match="holds a run of another experiment"):
        claim_run_dir(run, plan("edited"), text)


def _app() -> typer.Typer:
    app = typer.Typer(rich_markup_mode="markdown")
    app.command("prompts")(prompts_command)

    @app.callback()
    def _root() -> None:
        """A root of its own: harness.cli registers the real command."""

    return app


def test_req2test_prompts_lists_every_shipped_paragraph() -> None:
    shipped = available_paragraphs()
    assert {"grounding", "setup_grounding", "expected_outcome", "assertion_strength"} <= set(shipped)
    result = CliRunner().invoke(_app(), ["prompts"], terminal_width=200)
    assert result.exit_code == 0, result.output
    for name in shipped:
        line = next(line for line in result.output.splitlines() if f" {name} " in line)
        assert "paragraph" in line
    assert "Setup grounding: reach every Given" in result.output and " task " in result.output
    shown = CliRunner().invoke(_app(), ["prompts", "assertion_strength"])
    assert shown.exit_code == 0 and shown.output == paragraph_file("assertion_strength").read_text(encoding="utf-8")
    wrong = CliRunner().invoke(_app(), ["prompts", "nosuch"], terminal_width=300)
    assert wrong.exit_code == 2 and "no paragraph or template 'nosuch'" in wrong.output
    rendered = CliRunner().invoke(_app(), ["prompts", "expected_outcome", "--render"])
    assert rendered.exit_code == 0 and "===== user message =====" in rendered.output
    assert paragraph("expected_outcome") in rendered.output
    assert "Example" in (CliRunner().invoke(_app(), ["prompts", "--help"]).output)


# ----------------------------------------------------------------------------- from an installed wheel
IN_THE_VENV = """
import json, sys
from pathlib import Path
import harness
from harness.agents.base import AgentTask
from harness.agents.builtin import task_messages
from harness.cli_prompts import example_instance
from harness.experiment.config import load_experiment
from harness.experiment.plan import arm_options
from harness.experiment.prompt_files import resolve_prompts
path = Path(sys.argv[1])
experiment, text = load_experiment(path)
experiment, files, errors = resolve_prompts(experiment, path, text)
options = arm_options(experiment, experiment.arms[0], "th", None)
task = AgentTask(instance=example_instance(), view="th", features_dir="features", python_path="/workspace/src",
                 paragraphs=options.paragraphs, prompt_texts=options.prompt_texts)
print(json.dumps({"harness": harness.__file__, "errors": errors, "files": [f.model_dump() for f in files],
                  "user": task_messages(task)[1]["content"]}))
"""


def test_an_installed_wheel_reads_the_paragraph_beside_the_experiment(tmp_path: Path) -> None:
    started = time.monotonic()
    wheel = build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    for name in ("setup_grounding", "expected_outcome", "assertion_strength"):
        assert f"harness/resources/prompts/paragraphs/{name}.md" in names
    env_dir = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(env_dir)], check=True, timeout=300)
    python = env_dir / "bin" / "python"
    # nothing of this checkout on the path; the dependencies come from the system's site-packages
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    installed = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                                "--ignore-installed", str(wheel)], capture_output=True, text=True, timeout=600,
                               check=False, env=env)
    assert installed.returncode == 0, installed.stderr[-2000:]

    path = _experiment(tmp_path, "  - {name: mine, model: openai/x, paragraphs: [setup_grounding, ./my.md]}\n")
    (tmp_path / "exp" / "my.md").write_text(MINE, encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ran = subprocess.run([str(python), "-c", IN_THE_VENV, str(path)], cwd=elsewhere, env=env, capture_output=True,
                         text=True, timeout=300, check=False)
    assert ran.returncode == 0, ran.stderr[-3000:]
    seen = json.loads(ran.stdout)
    assert str(env_dir) in seen["harness"] and str(REPO) not in seen["harness"]  # the wheel, not this checkout
    assert seen["errors"] == []
    shipped, mine = seen["files"]
    assert shipped["shipped"] and str(env_dir) in shipped["path"]  # shipped names: from site-packages
    assert not mine["shipped"] and mine["path"] == str(tmp_path / "exp" / "my.md")  # the user's: beside the file
    assert MINE.strip() in seen["user"] and "Setup grounding" in seen["user"]
    print(f"wheel test: {time.monotonic() - started:.1f} s")
