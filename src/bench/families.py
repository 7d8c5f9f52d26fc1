"""Requirement families: one Gherkin requirement across repositories and languages.

The same scenarios (e.g. algorand/algorand-sdk-testing's) are copied into several SDKs, each built into
its own dataset with its own framework: py-algorand-sdk (behave), js-algorand-sdk (cucumber-js),
go-algorand-sdk (godog), java-algorand-sdk (Cucumber-JVM). An instance's *family* names its requirement
independently of the repository: the Feature's title and the scenario's name, whitespace-normalised and
case-folded, plus the number of runnable rows (SDKs select different Examples tables by tag, and a
scenario run over other rows is not the same requirement). File paths play no part: every corpus keeps
its features somewhere else (``tests/features/unit/``, ``test/features/unit/``,
``src/test/resources/com/algorand/algosdk/unit/``).

The key is computed from the instance's requirement on the fly, so datasets built before it need no
rebuild. Two instances of one dataset may share a key (a feature that repeats a scenario name with as
many rows): such a family is *ambiguous* in that dataset and is left out of cross-dataset pairings.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from bench.model import Instance, ProjectRecord, Requirement

SEPARATOR = " :: "

# framework (the card's runner, first word) → the language its step definitions are written in (cucumber-js
# runs JavaScript too; the algorand SDK it is here for is TypeScript)
LANGUAGES = {"behave": "Python", "cucumber-js": "TypeScript", "godog": "Go", "cucumber-jvm": "Java"}


def normalise(text: str) -> str:
    """Whitespace runs collapsed to one space, the ends stripped, case-folded."""
    return " ".join(text.split()).casefold()


def family_key(item: Requirement | Instance) -> str:
    """``feature title :: scenario name :: runnable rows`` of an instance (or of its requirement)."""
    requirement = item.requirement if isinstance(item, Instance) else item
    return SEPARATOR.join((normalise(requirement.feature_name), normalise(requirement.scenario_name),
                           str(len(requirement.run_lines))))


def families(instances: Iterable[Instance]) -> dict[str, list[str]]:
    """Family key → the ids of the instances of that family (in the given order)."""
    out: dict[str, list[str]] = defaultdict(list)
    for instance in instances:
        out[family_key(instance)].append(instance.id)
    return dict(out)


def unique_families(instances: Iterable[Instance]) -> dict[str, str]:
    """Family key → instance id, for the families exactly one of ``instances`` has (ambiguous ones left out)."""
    return {key: ids[0] for key, ids in families(instances).items() if len(ids) == 1}


def shared_families(members: Mapping[str, Iterable[str]]) -> list[str]:
    """The family keys every member (a dataset, a configuration: name → its keys) has, sorted."""
    sets = [set(keys) for keys in members.values()]
    return sorted(set.intersection(*sets)) if sets else []


def overlaps(members: Mapping[str, Iterable[str]]) -> list[tuple[tuple[str, ...], int]]:
    """How many family keys each pair of members shares, then all of them together (from three members on)."""
    sets = {name: set(keys) for name, keys in members.items()}
    names = list(sets)
    out: list[tuple[tuple[str, ...], int]] = [((a, b), len(sets[a] & sets[b])) for i, a in enumerate(names)
                                               for b in names[i + 1:]]
    if len(names) > 2:
        out.append((tuple(names), len(set.intersection(*sets.values()))))
    return out


def language(project: ProjectRecord) -> str:
    """The language of a project's tests, from its framework (``runner`` is "<framework> <version>");
    an unknown framework is named as itself."""
    return LANGUAGES.get(project.framework, project.framework)


def language_label(projects: Iterable[ProjectRecord]) -> str:
    """``Python (behave 1.3.3)``; several projects' labels joined by ' + '."""
    labels = []
    for project in projects:
        label = f"{language(project)} ({project.runner.strip() or project.framework})"
        if label not in labels:
            labels.append(label)
    return " + ".join(labels) or "—"

