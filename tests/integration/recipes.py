"""The recipes that assemble the fetched real corpora live outside the repository.

The tool library's rule: nothing that builds a fetched project's code is committed, neither its
code nor a script that would build it. The real-corpus tests therefore import each recipe from
``$REQ2TEST_RECIPES`` (default ``/work/recipes``, beside the project on the developers' machines
and CI's) and are skipped, saying so, where it is absent. What a recipe pins (SDK release, the
Gherkin repository's commit) is written in docs/frameworks.md so anyone can assemble the same
corpus by hand.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest


def recipes_dir() -> Path:
    return Path(os.environ.get("REQ2TEST_RECIPES", "/work/recipes"))


def recipe(name: str) -> ModuleType:
    """The recipe module ``name`` (e.g. ``go_algorand_sdk``), or a skip of the calling test module
    when it is not on this machine."""
    directory = recipes_dir()
    if not (directory / f"{name}.py").is_file():
        pytest.skip(f"the corpus recipe {name}.py is not in {directory} (set REQ2TEST_RECIPES): "
                    "recipes that build fetched projects are kept out of the repository",
                    allow_module_level=True)
    if str(directory) not in sys.path:
        sys.path.insert(0, str(directory))
    return importlib.import_module(name)
