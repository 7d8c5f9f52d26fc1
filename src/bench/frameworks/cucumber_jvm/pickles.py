"""The scenarios a Cucumber-JVM suite runs, one per pickle, each with the line that selects it
alone on cucumber-jvm's command line.

cucumber-jvm 6.x (``io.cucumber.core.feature.FeatureWithLines`` + the ``LinePredicate``)
keeps a pickle when ``FILE:LINE`` names the line of its scenario *or* of its Examples row
(``pickle.getLocation()`` is the row's location for an outline row, the scenario's
otherwise; the predicate also accepts the scenario's line for every row of an outline). So a
single Examples row is selected by its own line, with no rewritten copy of the feature (godog
needs one), and the JSON formatter reports the row's line as the element's ``line``.
Verified on java-algorand-sdk: ``transactions.feature:16`` runs only the row at line 16 of the
outline at line 7, one scenario reported at line 16; on a probe, the outline's own line runs
all its rows.

Pickles come from the Gherkin reference compiler (gherkin-official, as ``bench.gherkin_reader``),
so Backgrounds, Rules, ``Scenarios:`` and Examples tags are handled as Gherkin does; the tags
of a pickle are the feature's, the rule's, the scenario's and its Examples table's.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from gherkin.errors import CompositeParserException, ParserException
from gherkin.parser import Parser
from gherkin.pickles.compiler import Compiler
from gherkin.token_scanner import TokenScanner


@dataclass(frozen=True)
class Pickle:
    feature: str  # relative to the project root
    line: int  # what selects it alone: the scenario's line, or its Examples row's
    scenario_line: int
    name: str
    tags: tuple[str, ...]  # with ``@``
    outline_row: bool


def _lines_by_id(node: object, found: dict[str, int]) -> None:
    if isinstance(node, dict):
        if "id" in node and isinstance(node.get("location"), dict):
            found[str(node["id"])] = int(node["location"]["line"])
        for value in node.values():
            _lines_by_id(value, found)
    elif isinstance(node, list):
        for value in node:
            _lines_by_id(value, found)


def feature_pickles(rel: str, text: str) -> list[Pickle]:
    """Every pickle of one feature file, in file order. ``ValueError`` for unparsable Gherkin."""
    try:
        document = Parser().parse(TokenScanner(text))
    except (ParserException, CompositeParserException) as exc:
        raise ValueError(f"{rel}: unparsable feature: {str(exc).splitlines()[0]}") from exc
    if not document.get("feature"):
        return []
    lines: dict[str, int] = {}
    _lines_by_id(document, lines)
    found = []
    for pickle in Compiler().compile({**document, "uri": rel}):
        ids = [str(i) for i in pickle.get("astNodeIds") or []]
        scenario_line = lines.get(ids[0], 0) if ids else 0
        row_line = lines.get(ids[1]) if len(ids) > 1 else None
        found.append(Pickle(feature=rel, line=row_line or scenario_line, scenario_line=scenario_line,
                            name=str(pickle.get("name", "")),
                            tags=tuple(str(t["name"]) for t in pickle.get("tags") or []),
                            outline_row=row_line is not None))
    return found


def selected(pickle: Pickle, tags: list[str]) -> bool:
    """``tags`` joined with " or " (the project's configured tags; none: every pickle)."""
    if not tags:
        return True
    wanted = {t if t.startswith("@") else f"@{t}" for t in tags}
    return any(t in wanted for t in pickle.tags)


def tag_expression(tags: list[str]) -> str:
    """cucumber-jvm's ``--tags`` for "any of these": ``@a or @b``."""
    return " or ".join(t if t.startswith("@") else f"@{t}" for t in tags)


def _tagged(pickle: Pickle, tags: tuple[str, ...]) -> bool:
    wanted = {t if t.startswith("@") else f"@{t}" for t in tags}
    return any(t in wanted for t in pickle.tags)


def is_companion(tags: list[str] | tuple[str, ...], setup_tags: tuple[str, ...],
                 teardown_tags: tuple[str, ...]) -> bool:
    """A scenario with any of these tags (``@``-less or not) is a companion, never an instance."""
    wanted = {t.lstrip("@").lower() for t in (*setup_tags, *teardown_tags)}
    return bool(wanted) and any(t.lstrip("@").lower() in wanted for t in tags)


@lru_cache(maxsize=512)
def _companions(path: str, mtime_ns: int, setup_tags: tuple[str, ...],
                teardown_tags: tuple[str, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    text = Path(path).read_text(encoding="utf-8")
    pickles = feature_pickles(path, text)
    return (tuple(p.line for p in pickles if _tagged(p, setup_tags)),
            tuple(p.line for p in pickles if _tagged(p, teardown_tags) and not _tagged(p, setup_tags)))


def companion_lines(path: Path, setup_tags: tuple[str, ...] = (),
                    teardown_tags: tuple[str, ...] = ()) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(setup lines, teardown lines) of the feature file at ``path``: its pickles tagged with any
    of ``setup_tags`` / ``teardown_tags`` (``settings.CucumberJvmSettings``). () when none is
    configured or the file cannot be read."""
    if not setup_tags and not teardown_tags:
        return (), ()
    try:
        return _companions(str(path.resolve()), path.stat().st_mtime_ns, tuple(setup_tags), tuple(teardown_tags))
    except (OSError, ValueError):
        return (), ()


def companion_steps(root: Path, features: str, setup_tags: tuple[str, ...] = (),
                    teardown_tags: tuple[str, ...] = ()) -> list[str]:
    """The step texts of every companion scenario of the ``*.feature`` files under
    ``root/features`` (unparsable files skipped), sorted, each once: what binds the step methods
    that are infrastructure (``testside.TestSideJava``'s ``fixture_steps``)."""
    tags = (*setup_tags, *teardown_tags)
    if not tags:
        return []
    texts: set[str] = set()
    for path in sorted((root / features).rglob("*.feature")):
        try:
            document = Parser().parse(TokenScanner(path.read_text(encoding="utf-8")))
        except (OSError, ParserException, CompositeParserException):
            continue
        if not document.get("feature"):
            continue
        rel = path.relative_to(root).as_posix()
        for pickle in Compiler().compile({**document, "uri": rel}):
            if is_companion([str(t["name"]) for t in pickle.get("tags") or []], setup_tags, teardown_tags):
                texts.update(str(step.get("text", "")) for step in pickle.get("steps") or [])
    return sorted(texts)


COMPANIONS_ONLY = -1  # a "line" that selects a feature's companions and no scenario of its own


def selection(feature: str, line: int, setup: tuple[int, ...] = (),
              teardown: tuple[int, ...] = ()) -> tuple[str, tuple[int, ...]]:
    """cucumber-jvm's ``FILE:LINE[:LINE...]`` for the scenario at ``line`` with its companions
    (cucumber runs the selected pickles in file order), and the companions' lines. ``line`` 0 is
    the whole file, without companions; ``COMPANIONS_ONLY`` the companions alone (what every
    scenario of the feature runs besides its own: the baseline its coverage leaves out), a
    ``ValueError`` for a feature without any."""
    if line == COMPANIONS_ONLY:
        if not setup and not teardown:
            raise ValueError(f"{feature} has no setup/teardown companion scenarios")
        companions = tuple(sorted({*setup, *teardown}))
        return f"{feature}:{':'.join(str(n) for n in companions)}", companions
    if not line:
        return feature, ()
    companions = tuple(sorted({*setup, *teardown} - {line}))
    return f"{feature}:{':'.join(str(n) for n in sorted({line, *companions}))}", companions


def suite_pickles(root: Path, features: str, tags: list[str]) -> list[Pickle]:
    """The pickles of every ``*.feature`` under ``root/features`` that ``tags`` select, by path then line."""
    found: list[Pickle] = []
    for path in sorted((root / features).rglob("*.feature")):
        rel = path.relative_to(root).as_posix()
        found.extend(p for p in feature_pickles(rel, path.read_text(encoding="utf-8")) if selected(p, tags))
    return found
