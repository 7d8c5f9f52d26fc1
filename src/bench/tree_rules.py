"""Names that are never part of a project's tree, wherever a tree is copied, walked or hashed.

A name is matched against a single path component (a file's or a directory's name). Each
group below is one reason to skip; ``NOT_PROJECT_CONTENT`` is all of them, the rule views
and the enrichment walk use. Callers that must skip less (a dataset's snapshot, an
evaluation base) or more (an agent's workspace) build their set from these and say why
beside it, so the difference stays visible.
"""

from __future__ import annotations

VCS_DATA = frozenset({".git", ".hg", ".svn"})
BYTECODE_DIRS = frozenset({"__pycache__"})
BYTECODE_SUFFIXES = (".pyc", ".pyo")
TOOL_CACHES = frozenset({".mypy_cache", ".pytest_cache", ".ruff_cache"})
TEST_ENVIRONMENTS = frozenset({".tox", ".nox"})  # tox's and nox's virtualenvs
VIRTUALENVS = frozenset({".venv", "venv"})
INSTALLED_PACKAGES = frozenset({"node_modules"})  # provisioned from a lockfile, never copied
BUILD_OUTPUT = frozenset({"build", "dist", ".eggs"})
COVERAGE_DATA = frozenset({".coverage"})
EDITOR_STATE = frozenset({".idea", ".vscode"})

# Never part of a project's tree: VCS data, bytecode, caches, virtualenvs, installed packages,
# build output, coverage data and editor state.
NOT_PROJECT_CONTENT = (VCS_DATA | BYTECODE_DIRS | TOOL_CACHES | TEST_ENVIRONMENTS | VIRTUALENVS
                       | INSTALLED_PACKAGES | BUILD_OUTPUT | COVERAGE_DATA | EDITOR_STATE)
