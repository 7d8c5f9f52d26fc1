"""bench.families: the requirement family of an instance (one Gherkin requirement across repositories and
languages), on synthetic instances built with the real models; and, slow, the families the real
algorand SDK datasets share when they are on this machine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.families import (
    families,
    family_key,
    language,
    language_label,
    normalise,
    overlaps,
    shared_families,
    unique_families,
)
from bench.model import ExamplesTable, Instance, ProjectRecord, Requirement, Step, ViewSpec
from bench.model import TestLevel as Level


def requirement(feature_file: str, feature: str, scenario: str, rows: int | None = None, line: int = 5,
                tables: int = 1) -> Requirement:
    """A scenario (``rows`` None) or an outline with ``rows`` runnable rows over ``tables`` Examples tables."""
    examples = []
    if rows is not None:
        per_table = [rows // tables + (1 if k < rows % tables else 0) for k in range(tables)]
        next_line = line + 4
        for k, count in enumerate(per_table):
            examples.append(ExamplesTable(name=f"t{k}", line=next_line, header=["x"],
                                          rows=[[str(r)] for r in range(count)],
                                          row_lines=list(range(next_line + 2, next_line + 2 + count))))
            next_line += count + 3
    return Requirement(
        feature_file=feature_file, feature_name=feature, feature_description="", scenario_name=scenario,
        scenario_keyword="Scenario Outline" if rows is not None else "Scenario", scenario_line=line,
        steps=[Step(keyword="When", type="when", text="I do <x>" if rows is not None else "I do it", line=line + 1),
               Step(keyword="Then", type="then", text="it is done", line=line + 2)],
        examples=examples, gherkin=f"Feature: {feature}\n  Scenario: {scenario}\n")


def instance(project: str, req: Requirement) -> Instance:
    instance_id = f"{project}/{req.feature_file}:{req.scenario_line}"
    return Instance(id=instance_id, project=project, requirement=req, target_interfaces=[],
                    test_level=Level.component, group=instance_id,
                    view=ViewSpec(target_hidden=[], hidden_rule="", all_hidden_scope=[]))


def project(runner: str, name: str = "p") -> ProjectRecord:
    return ProjectRecord(
        name=name, version="1", source=".", source_sha256="0", snapshot="snapshot", features_dir="features",
        python_path=[], production=[], runner=runner, instances=0, features_total=0, scenarios_total=0,
        exclusions={}, test_levels={}, depends_on_pairs=0, variant_of_pairs=0, groups=0,
        empty_interface_instances=0, shadowed_step_matches=0, statistics={})


def test_normalise_collapses_whitespace_and_folds_case() -> None:
    assert normalise("  Serialize\tMethod   object\n") == "serialize method object"
    assert normalise("STRASSE Straße") == "strasse strasse"  # case-folded, not just lower-cased
    assert family_key(requirement("a.feature", " ABI  JSON ", "Check  Selector")) == \
        family_key(requirement("b.feature", "abi json", "check selector"))


def test_key_is_feature_title_scenario_name_and_runnable_rows() -> None:
    key = family_key(requirement("x/abijson.feature", "AbiJson", "Serialize method", rows=8))
    assert key == "abijson :: serialize method :: 8"
    assert family_key(requirement("x/abijson.feature", "AbiJson", "Check selector")) == \
        "abijson :: check selector :: 1"  # a plain scenario is one runnable unit
    # rows over several Examples tables count together; another number of rows is another requirement
    assert family_key(requirement("f", "F", "S", rows=5, tables=2)).endswith(":: 5")
    assert family_key(requirement("f", "F", "S", rows=3)) != family_key(requirement("f", "F", "S", rows=4))
    # the scenario's name and the feature's title both count
    assert family_key(requirement("f", "F", "S")) != family_key(requirement("f", "F", "T"))
    assert family_key(requirement("f", "F", "S")) != family_key(requirement("f", "G", "S"))


def test_same_scenario_in_two_repositories_gets_the_same_key_whatever_the_path() -> None:
    py = instance("py-algorand-sdk", requirement("tests/features/unit/abijson.feature", "AbiJson",
                                                 "Serialize Method object from sig into json", rows=8))
    java = instance("java-algorand-sdk",
                    requirement("src/test/resources/com/algorand/algosdk/unit/abijson.feature", "AbiJson",
                                "Serialize  method object from sig into JSON", rows=8, line=40, tables=2))
    go = instance("go-algorand-sdk", requirement("test/features/unit/renamed.feature", "AbiJson",
                                                 "Serialize Method object from sig into json", rows=8, line=7))
    assert family_key(py) == family_key(java) == family_key(go) == family_key(py.requirement)
    assert py.id != java.id != go.id
    # nothing of the path: the same feature file path with another title is another requirement
    other = instance("go-algorand-sdk", requirement("tests/features/unit/abijson.feature", "Other",
                                                    "Serialize Method object from sig into json", rows=8))
    assert family_key(other) != family_key(py)


def test_families_unique_shared_and_overlaps() -> None:
    a = [instance("a", requirement("f.feature", "F", "one", line=3)),
         instance("a", requirement("f.feature", "F", "two", line=9)),
         instance("a", requirement("f.feature", "F", "two", line=20)),  # the name again: ambiguous in a
         instance("a", requirement("f.feature", "F", "three", rows=2, line=30))]
    b = [instance("b", requirement("g.feature", "F", "one")), instance("b", requirement("g.feature", "F", "two")),
         instance("b", requirement("g.feature", "F", "three", rows=3, line=30))]  # other rows: not shared
    c = [instance("c", requirement("h.feature", "f", "ONE"))]
    grouped = families(a)
    assert grouped["f :: two :: 1"] == ["a/f.feature:9", "a/f.feature:20"]
    assert unique_families(a) == {"f :: one :: 1": "a/f.feature:3", "f :: three :: 2": "a/f.feature:30"}
    named = {"a": unique_families(a), "b": unique_families(b), "c": unique_families(c)}
    assert shared_families(named) == ["f :: one :: 1"]
    assert shared_families({"a": named["a"], "b": named["b"]}) == ["f :: one :: 1"]
    assert shared_families({}) == []
    assert overlaps(named) == [(("a", "b"), 1), (("a", "c"), 1), (("b", "c"), 1), (("a", "b", "c"), 1)]
    assert overlaps({"a": families(a), "b": families(b)}) == [(("a", "b"), 2)]


def test_language_from_the_cards_runner() -> None:
    assert [language(project(r)) for r in ("behave 1.2.6", "cucumber-js 11.0.1", "godog 0.14.1",
                                           "cucumber-jvm 6.6.0", "", "mytool 2")] == \
        ["Python", "TypeScript", "Go", "Java", "Python", "mytool"]
    assert language_label([project("godog 0.14.1"), project("godog 0.14.1", "q")]) == "Go (godog 0.14.1)"
    assert language_label([project("")]) == "Python (behave)"


def test_dataset_api_exposes_families(tmp_path: Path) -> None:
    from bench.dataset import load_dataset
    from tests.unit.test_report_languages import write_dataset

    root = write_dataset(tmp_path / "ds", "py-x", "behave 1.2.6", "tests/features/unit",
                         [("ABI", "one", None), ("ABI", "two", 2), ("ABI", "two", 2)])
    dataset = load_dataset(root)
    first = dataset.instances[0].id
    assert dataset.family(first) == "abi :: one :: 1"
    assert dataset.families() == {"abi :: one :: 1": [first],
                                  "abi :: two :: 2": [i.id for i in dataset.instances[1:]]}
    assert dataset.families(scored_only=True) == {"abi :: one :: 1": [first]}  # the card scores the first only
    assert dataset.language == "Python (behave 1.2.6)"


# ----------------------------------------------------------------------------- the real datasets
REAL = {"py-algorand-sdk": "/work/datasets/algo-main2", "go-algorand-sdk": "/work/datasets/go-algo",
        "java-algorand-sdk": "/tmp/jslice/ds", "js-algorand-sdk": "/work/datasets/js-algo"}


def _real_datasets() -> dict[str, Path]:
    """NAME=DIR,... from REQ2TEST_ALGORAND_DATASETS, else where this project's machines keep them."""
    spec = os.environ.get("REQ2TEST_ALGORAND_DATASETS")
    named = dict(item.split("=", 1) for item in spec.split(",") if "=" in item) if spec else REAL
    return {name: Path(path) for name, path in named.items() if (Path(path) / "dataset.json").is_file()}


@pytest.mark.slow
def test_real_algorand_datasets_share_requirement_families() -> None:
    from bench.dataset import load_dataset

    found = _real_datasets()
    if len(found) < 2:
        pytest.skip(f"fewer than two algorand SDK datasets here ({', '.join(found) or 'none'}; "
                    f"set REQ2TEST_ALGORAND_DATASETS=py-algorand-sdk=DIR,go-algorand-sdk=DIR,...)")
    unique = {}
    for name, root in found.items():
        dataset = load_dataset(root)
        assert dataset.card.name == name
        unique[name] = unique_families(dataset.instances)
        # a family is almost always one instance: the datasets repeat a scenario name at most a few times
        assert len(unique[name]) >= len(dataset.instances) - 4
    counts = dict(overlaps(unique))
    print({" + ".join(k): v for k, v in counts.items()})
    # the SDKs copy algorand-sdk-testing's scenarios: every pair shares requirements
    assert all(count > 0 for count in counts.values())
    if {"py-algorand-sdk", "go-algorand-sdk"} <= set(unique):
        # the path-based key benchmarks/framework_costs.py used before matched 115 scenarios between these two
        # builds (one of them a scenario name the feature repeats): the families keep 114 of them
        assert counts[("py-algorand-sdk", "go-algorand-sdk")] >= 100
    for name, keys in unique.items():  # the Java slice's 15 are all shared with the others
        if name == "java-algorand-sdk" and len(keys) <= 20:
            assert all(counts[pair] == len(keys) for pair in counts if name in pair)
