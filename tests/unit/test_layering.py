"""The layering contract, read from the source with ``ast`` (nothing is imported):

    core  ←  frameworks  ←  bench  ←  harness  ←  cli

- **core** (``CORE``): the models, the protocol, the judging types, the registries, the core count (``bench.cores``), the Gherkin
  reader. It imports nothing else of ours at run time (``if TYPE_CHECKING:`` imports are types
  only), so a framework and every consumer can depend on it without cycles.
- **frameworks**: ``bench/frameworks/<name>/``. A framework imports core and bench's toolkit
  (builder stages, mutation, isolation, ...), never another framework, never bench's
  orchestration (``ORCHESTRATION``: evaluate, calibrate, suites, reports, ...) and never harness.
- **bench**: nothing outside ``bench/frameworks/<name>/`` imports that package — the rest of
  req2test reaches a framework only through the registry and the protocol. bench never imports
  harness.
- **harness** reaches frameworks the same way, through the protocol.
- **cli**: no library module imports a CLI module (``test_cli_not_imported``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.unit.test_cli_not_imported import SRC, modules

CORE = {"bench", "bench.model", "bench.schema", "bench.judging", "bench.registry", "bench.progress", "bench.cores",
        "bench.gherkin_reader", "bench.frameworks", "bench.frameworks.protocol", "bench.frameworks.registry"}
ORCHESTRATION = ("bench.evaluate", "bench.calibrate", "bench.suite", "bench.history", "bench.report",
                 "bench.explorer", "bench.runs", "bench.runlog", "bench.compare", "bench.cli")
FRAMEWORKS = sorted(p.name for p in (SRC / "bench" / "frameworks").iterdir()
                    if p.is_dir() and (p / "__init__.py").is_file())


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def runtime_imports(path: Path, module: str) -> Iterator[tuple[int, str]]:
    """(line, dotted name) of every import that runs (``if TYPE_CHECKING:`` blocks skipped);
    ``from P import n`` yields P.n too (n may be a submodule)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def walk(node: ast.AST) -> Iterator[ast.AST]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                yield from (n for stmt in child.orelse for n in [stmt, *walk(stmt)])
                continue
            yield child
            yield from walk(child)

    for node in walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - (node.level - 1)]
                base = ".".join([*parts, node.module] if node.module else parts)
            yield node.lineno, base
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"


def _ours(name: str) -> bool:
    return name.split(".", 1)[0] in ("bench", "harness")


def violations() -> list[str]:
    found = []
    for module, path in modules():
        framework = next((f for f in FRAMEWORKS if _under(module, f"bench.frameworks.{f}")), None)
        for line, name in runtime_imports(path, module):
            if not _ours(name):
                continue
            where = f"{path.relative_to(SRC)}:{line}: {module} imports {name}"
            target_framework = next((f for f in FRAMEWORKS if _under(name, f"bench.frameworks.{f}")), None)
            if module in CORE and name not in CORE and not any(_under(name, c) and c != "bench" for c in CORE) \
                    and name != "bench.__version__":
                found.append(f"{where} (core imports only core)")
            if target_framework is not None and target_framework != framework:
                found.append(f"{where} (only bench/frameworks/{target_framework}/ imports it)")
            if framework is not None and any(_under(name, o) for o in ORCHESTRATION):
                found.append(f"{where} (a framework never imports bench's orchestration)")
            if _under(module, "bench") and _under(name, "harness"):
                found.append(f"{where} (bench never imports harness)")
    return found


def test_the_layering_contract_holds() -> None:
    assert violations() == []


def test_the_contract_sees_what_it_forbids(tmp_path: Path) -> None:
    """The checker is not vacuous: it finds the frameworks and reads a forbidden import."""
    assert {"behave", "cucumber_js"} <= set(FRAMEWORKS)
    probe = tmp_path / "probe.py"
    probe.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import bench.cli\n"
                     "from bench.frameworks.behave import verdict\n", encoding="utf-8")
    names = [name for _, name in runtime_imports(probe, "bench.somewhere")]
    assert "bench.frameworks.behave.verdict" in names and "bench.cli" not in names
