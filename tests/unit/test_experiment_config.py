"""The experiment file: every mistake reported once, on its own line, with file:line and the key path."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.experiment.config import ExperimentError, InstanceSelection, load_experiment, select_instances
from harness.experiment.runner import prerequisite_closure, topological_levels


def _errors(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "exp.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ExperimentError) as info:
        load_experiment(path)
    return str(info.value).splitlines()


def test_every_mistake_is_one_located_line(tmp_path: Path) -> None:
    lines = _errors(tmp_path, """\
name: bad
dataset: ds
instances: {sample: 0, idz: [1]}
views: [th, xx]
arms:
  - name: plain
    model: openai/x
    n: 0
  - name: "bad name"
    model: m
  - name: b3
    model: m
    n: 3
    selectors: [static, magic]
    paragraph: [grounding]
""")
    assert lines == [
        f"{tmp_path / 'exp.yaml'}:3: instances.sample: Input should be greater than or equal to 1",
        f"{tmp_path / 'exp.yaml'}:3: instances.idz: unknown field",
        f"{tmp_path / 'exp.yaml'}:4: views[1]: Input should be 'th' or 'ah'",
        f"{tmp_path / 'exp.yaml'}:8: arms[0].n: Input should be greater than or equal to 1",
        f"{tmp_path / 'exp.yaml'}:9: arms[1].name: use letters, digits, '.', '_' or '-' (it names a directory)",
        f"{tmp_path / 'exp.yaml'}:14: arms[2].selectors: unknown selector 'magic': oracle, static, judge, consensus",
        f"{tmp_path / 'exp.yaml'}:15: arms[2].paragraph: unknown field",
    ]


def test_arm_coherence_rules(tmp_path: Path) -> None:
    assert _errors(tmp_path, "dataset: d\narms:\n  - {name: a, n: 3, model: m}\n")[0].endswith(
        "arms[0]: n is 3: list the selectors that pick among the candidates (oracle, static, judge, consensus)")
    assert "needs a model" in _errors(tmp_path, "dataset: d\narms:\n  - {name: a}\n")[0]
    assert "unique" in _errors(tmp_path, "dataset: d\narms:\n  - {name: a, agent: none}\n"
                                         "  - {name: a, agent: none}\n")[0]
    assert "invalid YAML" in _errors(tmp_path, "dataset: [\n")[0]


def test_evaluator_use_is_known_per_arm(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text("dataset: d\narms:\n  - {name: a, model: m, n: 2, selectors: [oracle, static]}\n"
                    "  - {name: b, model: m, decompose: evaluator}\n  - {name: c, model: m, decompose: sandbox}\n")
    experiment, _ = load_experiment(path)
    assert [arm.uses_evaluator for arm in experiment.arms] == [True, True, False]


def test_instance_selection(tmp_path: Path) -> None:
    ids = [f"p{i % 2}/f.feature:{i}" for i in range(10)]
    projects = {i: i.split("/")[0] for i in ids}
    assert select_instances("all", ids, projects, tmp_path) == ids
    assert select_instances(InstanceSelection(project="p1"), ids, projects, tmp_path) == ids[1::2]
    sample = select_instances(InstanceSelection(sample=4, seed=3), ids, projects, tmp_path)
    assert len(sample) == 4 and sample == [i for i in ids if i in sample]  # dataset order kept
    assert sample == select_instances(InstanceSelection(sample=4, seed=3), ids, projects, tmp_path)
    (tmp_path / "ids.txt").write_text(f"# chosen\n{ids[3]}\n{ids[1]}\n")
    assert select_instances(InstanceSelection(file="ids.txt"), ids, projects, tmp_path) == [ids[1], ids[3]]
    with pytest.raises(ValueError, match="not in the dataset"):
        select_instances(InstanceSelection(ids=["nope"]), ids, projects, tmp_path)
    with pytest.raises(ValueError, match="no project"):
        select_instances(InstanceSelection(project="zz"), ids, projects, tmp_path)


def test_prerequisites_come_first() -> None:
    deps = {"a": [], "b": ["a"], "c": ["a", "b"], "d": []}
    assert sorted(prerequisite_closure(["c"], deps)) == ["a", "b", "c"]
    assert topological_levels(["c", "b", "a", "d"], deps) == [["a", "d"], ["b"], ["c"]]
    with pytest.raises(ExperimentError, match="cycle"):
        topological_levels(["x"], {"x": ["y"], "y": ["x"]})


def test_registered_agents_and_selectors_are_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The arm's names are checked against the registries, so a third party's registration is enough."""
    from harness.agents import registry as agents
    from harness.agents.calibration import NoneAgent
    from harness.strategies import selectors

    text = "dataset: d\narms:\n  - {name: a, agent: mine, n: 2, selectors: [best, static]}\n"
    assert _errors(tmp_path, text) == [
        (f"{tmp_path / 'exp.yaml'}:3: arms[0].agent: unknown agent 'mine': builtin, codex, claude-code, aider, "
         "openhands, oracle, empty, then-stripped, none or module:Class"),
        f"{tmp_path / 'exp.yaml'}:3: arms[0].selectors: unknown selector 'best': oracle, static, judge, consensus"]
    monkeypatch.setattr(agents, "REGISTRY", agents.REGISTRY.copy())
    monkeypatch.setattr(selectors, "REGISTRY", selectors.REGISTRY.copy())
    agents.REGISTRY.register("mine", NoneAgent)
    selectors.REGISTRY.register("best", selectors._static)
    path = tmp_path / "ok.yaml"
    path.write_text(text, encoding="utf-8")
    experiment, _ = load_experiment(path)
    assert (experiment.arms[0].agent, experiment.arms[0].selectors) == ("mine", ["best", "static"])
    assert "(oracle, static, judge, consensus, best)" in _errors(
        tmp_path, "dataset: d\narms:\n  - {name: a, agent: mine, n: 2}\n")[0]


def test_registered_executors_are_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.experiment import executors
    from harness.experiment.runner import prepare

    path = tmp_path / "exp.yaml"
    path.write_text("dataset: nowhere\nexecutor: batch:4\narms:\n  - {name: a, agent: none}\n", encoding="utf-8")

    def executor_lines() -> list[str]:
        with pytest.raises(ExperimentError) as info:
            prepare(path)  # the missing dataset is always one of the mistakes
        return [line for line in str(info.value).splitlines() if ": executor " in line]

    assert executor_lines() == [(f"{path}:2: executor: executor 'batch:4': no executor named 'batch'; available: "
                                 f"local, ray; {executors.SPEC_HELP}")]
    monkeypatch.setattr(executors, "REGISTRY", executors.REGISTRY.copy())
    executors.REGISTRY.register("batch", lambda argument: executors.LocalExecutor())
    assert executor_lines() == []
