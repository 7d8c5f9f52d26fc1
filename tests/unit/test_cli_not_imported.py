"""The library never imports a CLI module.

A CLI module is one whose file is named ``cli.py`` or ``cli_*.py`` anywhere in the ``bench`` and
``harness`` packages: today bench/cli.py, harness/cli.py, harness/cli_*.py and
harness/provider/cli.py (the ``provider serve`` command). Those may import each other; every
other module may not, not even lazily inside a function, because a CLI pulls in typer, option
parsing and the whole command tree, and because a library function must be usable without one.
What library code needs from the terminal (the consoles, the progress displays) lives in
``bench.console``, and the progress interface in ``bench.progress``.

The check reads the source with ``ast`` (nothing is imported), so a module that is broken or slow
to import is still checked.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGES = ("bench", "harness")


def is_cli(module: str) -> bool:
    last = module.rsplit(".", 1)[-1]
    return module.split(".", 1)[0] in PACKAGES and (last == "cli" or last.startswith("cli_"))


def modules() -> Iterator[tuple[str, Path]]:
    """(dotted name, file) of every module of the two packages; a directory without __init__.py
    is data (the bundled example projects under harness/resources), not part of the package."""
    for package in PACKAGES:
        root = SRC / package
        stack = [root]
        while stack:
            directory = stack.pop()
            for path in sorted(directory.iterdir()):
                if path.is_dir() and (path / "__init__.py").is_file():
                    stack.append(path)
                elif path.suffix == ".py":
                    parts = path.relative_to(SRC).with_suffix("").parts
                    yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def imported(tree: ast.AST, module: str, is_package: bool) -> Iterator[tuple[int, str]]:
    """(line, dotted name) of everything the module imports, relative imports resolved; for
    ``from P import n`` both P and P.n, since n may be a submodule (``from bench import cli``)."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            yield node.lineno, target
            for alias in node.names:
                yield node.lineno, f"{target}.{alias.name}"
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and (getattr(node.func, "attr", None) == "import_module" or getattr(node.func, "id", None)
                   in ("import_module", "__import__"))):
            yield node.lineno, node.args[0].value


def violations() -> list[str]:
    found = []
    for module, path in modules():
        if is_cli(module):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, name in imported(tree, module, path.name == "__init__.py"):
            if is_cli(name):
                found.append(f"{path.relative_to(SRC)}:{line} imports {name}")
    return sorted(set(found))


def test_no_library_module_imports_a_cli_module() -> None:
    found = violations()
    assert not found, ("library code imports a CLI module; move what it needs to bench.console / "
                       "bench.progress:\n" + "\n".join(found))


def test_the_walk_sees_the_cli_modules_and_the_library() -> None:
    names = {module for module, _ in modules()}
    # the rule is only as good as the walk: both CLIs and the modules that used to import them
    assert {"bench.cli", "harness.cli", "harness.cli_run", "harness.provider.cli"} <= names
    assert {"harness.experiment.runner", "bench.report", "bench.console", "bench.progress"} <= names
    assert not any(".resources.examples." in name for name in names)


def test_every_import_form_is_seen() -> None:
    source = """
import bench.cli
from bench import cli
from harness.cli_run import run_command
def later():
    from ..cli import fail
    importlib.import_module("harness.cli_show")
"""
    names = {name for _, name in imported(ast.parse(source), "harness.experiment.runner", False)}
    assert {"bench.cli", "harness.cli_run", "harness.cli", "harness.cli_show"} <= names
    assert {n for n in names if is_cli(n)} == {"bench.cli", "harness.cli_run", "harness.cli", "harness.cli_show"}
    assert not is_cli("bench.console") and not is_cli("harness.client") and not is_cli("click.cli")
