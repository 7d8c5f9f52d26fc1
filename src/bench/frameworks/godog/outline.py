"""Select one scenario of a feature file the way godog can: by its ``Scenario`` line.

godog v0.14.1 (internal/parser/parser.go, ``parsePath``) keeps the pickles whose *scenario*
starts at the line of ``FILE:LINE``; an outline row's line selects nothing. So a run of one
row gets a generated copy of the feature in which every other body row of that outline is a
blank line: the row keeps its line (so do all other lines, so reported lines need no mapping
back), the Examples headers and tags stay (an Examples table with a header and no body is
valid Gherkin and yields no pickle), and the copy is selected by the outline's line. godog's
Gherkin parser (gherkin/go v26) skips blank lines inside a table.

The locations come from the Gherkin reference parser (gherkin-official, as
``bench.gherkin_reader``), so dialects, ``Scenarios:`` and Rules are handled as Gherkin does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from gherkin.errors import CompositeParserException, ParserException
from gherkin.parser import Parser
from gherkin.token_scanner import TokenScanner


@dataclass(frozen=True)
class ScenarioLocation:
    scenario_line: int  # the Scenario / Scenario Outline keyword's line
    row_line: int | None  # the Examples row selected, None for a plain scenario or a whole outline
    rows: tuple[int, ...]  # every Examples body row of the scenario (empty: not an outline)


def scenario_locations(text: str) -> list[ScenarioLocation]:
    """Every scenario of a feature file with its Examples rows (one entry per scenario)."""
    try:
        # gherkin's TypedDicts type a feature's children as a keyless ``Envelope``: the document is
        # read as the plain dict it is
        document = cast(dict[str, Any], Parser().parse(TokenScanner(text)))
    except (ParserException, CompositeParserException) as exc:
        raise ValueError(f"unparsable feature: {str(exc).splitlines()[0]}") from exc
    feature = document.get("feature") or {}
    found: list[ScenarioLocation] = []
    for child in feature.get("children", []):
        nested = child["rule"].get("children", []) if "rule" in child else [child]
        for node in nested:
            scenario = node.get("scenario")
            if scenario is None:
                continue
            rows = tuple(int(row["location"]["line"]) for examples in scenario.get("examples", [])
                         for row in examples.get("tableBody", []))
            found.append(ScenarioLocation(int(scenario["location"]["line"]), None, rows))
    return found


def locate(text: str, line: int) -> ScenarioLocation:
    """What ``line`` selects: a scenario (its keyword line) or one outline row. ``ValueError``
    for a line that is neither."""
    for scenario in scenario_locations(text):
        if line == scenario.scenario_line:
            return scenario
        if line in scenario.rows:
            return ScenarioLocation(scenario.scenario_line, line, scenario.rows)
    raise ValueError(f"line {line} is neither a scenario nor an Examples row")


def one_row_feature(text: str, location: ScenarioLocation) -> str:
    """``text`` with every Examples body row of ``location``'s outline blanked except its row;
    every line keeps its number (line endings and all other lines verbatim)."""
    if location.row_line is None:
        return text
    blank = set(location.rows) - {location.row_line}
    # "\n" only, as both Gherkin scanners count lines (splitlines would also split at \f, \x1c, ...)
    lines = text.split("\n")
    for number in blank:
        lines[number - 1] = "\r" if lines[number - 1].endswith("\r") else ""
    return "\n".join(lines)
