"""toyrun: the toy BDD runner of the toy framework (``tests/toyfw``).

``python toyrun.py FEATURE:LINE ...`` loads every ``*.py`` of ``features/toysteps`` (step
functions registered with ``@step("regex")`` from this module), runs the selected scenarios'
steps in order and exits 0 when all passed, 1 when a step failed, 2 when a step is undefined or
the steps do not load. One line per problem on stderr. Standard library and bench's Gherkin
reader only.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

STEPS_DIR = "features/toysteps"
_REGISTRY: list[tuple[re.Pattern[str], Callable[..., Any]]] = []


def step(pattern: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        _REGISTRY.append((re.compile(pattern), function))
        return function

    return register


def _load_steps(root: Path) -> None:
    sys.modules["toyrun"] = sys.modules[__name__]
    for path in sorted((root / STEPS_DIR).glob("*.py")):
        spec = importlib.util.spec_from_file_location(f"toysteps_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


def main(argv: list[str]) -> int:
    from bench.gherkin_reader import read_feature_file

    root = Path.cwd()
    try:
        _load_steps(root)
    except Exception as exc:  # noqa: BLE001 - a step module that does not load: exit 2
        print(f"load error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    status = 0
    for selection in argv:
        feature, _, line = selection.rpartition(":")
        parsed = read_feature_file(root, root / feature)
        scenario = next((r for r in parsed.requirements if r.scenario_line == int(line)), None)
        if scenario is None:
            print(f"no scenario at {selection}", file=sys.stderr)
            return 2
        context: dict[str, Any] = {}
        for each in [*scenario.background_steps, *scenario.steps]:
            match = next(((m, f) for p, f in _REGISTRY if (m := p.fullmatch(each.text))), None)
            if match is None:
                print(f"undefined step: {each.text}", file=sys.stderr)
                return 2
            found, function = match
            try:
                function(context, *found.groups())
            except Exception:  # noqa: BLE001 - a failing step fails the scenario
                print(f"step failed: {each.text}\n{traceback.format_exc(limit=-1)}", file=sys.stderr)
                status = 1
                break
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
