"""The project's tag selection, as its runner applies it: an outline that only some of its Examples
tables select (py-algorand-sdk's responses.feature: ``@unit`` on the feature, a
``@unit.responses.*`` tag on each of its 22 tables) is an instance of exactly those tables' rows.

Before, only feature and scenario tags were read, and the 140 rows that ``behave --tags`` runs
from the suite's unit tags were excluded as ``not_selected_by_tags`` (as were godog's).
"""

from __future__ import annotations

from pathlib import Path

from bench.builder.pipeline import BuildOptions, collect_candidates
from bench.project import ProjectSource
from tests.conftest import write_project

FEATURE = """\
@unit
Feature: Responses

  @unit.responses
  Scenario Outline: <endpoint> answers
    Given a mock response for <endpoint>
    Then it decodes

    @unit.responses.genesis
    Examples:
      | endpoint |
      | genesis  |

    @unit.responses.sync
    Examples:
      | endpoint |
      | sync     |
      | sync2    |

  Scenario Outline: only some tables carry a selected tag
    Given a mock response for <endpoint>
    Then it decodes

    @unit.responses.blocks
    Examples:
      | endpoint |
      | blocks   |

    @unit.responses.ledger
    Examples:
      | endpoint |
      | ledger   |
      | ledger2  |

  @unit.other
  Scenario Outline: no table selected
    Given a mock response for <endpoint>

    @unit.other.table
    Examples:
      | endpoint |
      | other    |
"""


class _Framework:
    def parser_differences(self, root: Path, feature: object) -> list[str]:
        return []


def _collect(tmp_path: Path, tags: list[str]) -> tuple[dict[str, list[int]], dict[str, str]]:
    root = write_project(tmp_path, {"features/responses.feature": FEATURE})
    source = ProjectSource(name="p", version="0", spec=str(root), root=root, sha256="", features_dir="features",
                           python_path=["."], production=["p"], dependencies=[], tags=tags)
    candidates, exclusions, _, _, scenarios = collect_candidates(root, source, "p", _Framework(), BuildOptions())
    assert scenarios == 3
    return ({c.instance_id: c.requirement.run_lines for c in candidates},
            {e.id: e.reason for e in exclusions})


def test_an_outline_selected_by_some_examples_tables_runs_their_rows_alone(tmp_path: Path) -> None:
    runs, excluded = _collect(tmp_path, ["unit.responses.sync", "unit.responses.ledger"])
    # the first outline: its scenario tag is not selected, its second table is
    assert runs["p/features/responses.feature:5"] == [17, 18]
    assert runs["p/features/responses.feature:20"] == [32, 33]
    assert excluded == {"p/features/responses.feature:36": "not_selected_by_tags"}


def test_a_selected_scenario_tag_keeps_every_table(tmp_path: Path) -> None:
    runs, _ = _collect(tmp_path, ["unit.responses"])
    assert runs == {"p/features/responses.feature:5": [12, 17, 18]}


def test_without_a_selection_every_row_runs(tmp_path: Path) -> None:
    runs, excluded = _collect(tmp_path, [])
    assert runs["p/features/responses.feature:20"] == [27, 32, 33] and excluded == {}
