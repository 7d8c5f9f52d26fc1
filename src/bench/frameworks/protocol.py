"""The contract between req2test and a BDD framework (``Framework``) and the language its
production code is written in (``Language``).

bench and harness reach a framework only through these two interfaces, obtained by name
from ``bench.frameworks.registry`` (the dataset card records the name in each project's
``runner``). A third framework is a new module that implements them and registers
itself (``registry.register`` or a ``req2test.frameworks`` entry point); the contract of
every method is stated here, and ``docs/frameworks.md`` walks through one.

The two warm workers (the build's and the evaluator's) are separate *processes* started
with ``python -m <module>`` inside the project's environment: the framework names the
modules, and they speak the JSON-line requests documented in their own docstrings.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from bench.gherkin_reader import FeatureFile
from bench.model import Mutant


@dataclass(frozen=True)
class FreshVerdict:
    """A run of the reference kind: a new runner process, the mutant on disk."""

    verdict: str  # killed | survived | timeout | infra_no_step
    elapsed: float
    detail: str = ""


@dataclass(frozen=True)
class PromptTerms:
    """How prompts and agents name the framework's things (the shipped templates in
    ``prompts/`` use them as ``{{ terms.* }}``; custom templates may ignore them)."""

    runner: str  # "behave": the tool the scenario runs with
    language: str  # "Python": what test files are written in
    step_definitions: str  # "behave step definitions": what a test implementation consists of
    hooks_file: str  # "environment.py": the suite-wide hook module a view keeps
    code_fence: str  # "python": the Markdown fence of a test file
    run_example: str  # "python -m behave ...": how to run scenarios by hand
    # what a hidden body becomes in a view
    placeholder: str = 'raise NotImplementedError("implementation hidden")'
    # the kept shared test infrastructure, when it is not FEATURES_DIR/hooks_file
    infrastructure: str | None = None
    # how step code reaches production, when it is not the PYTHONPATH sentence
    import_note: str | None = None


@dataclass(frozen=True)
class TestAreaSpec:
    """Where a generated test may live in a project (what a workspace diff collects)."""

    __test__ = False  # not a pytest class

    dirs: tuple[str, ...]  # directories (relative) whose files are test code
    suffixes: tuple[str, ...]  # suffixes of test code
    fixed_names: frozenset[str] = frozenset()  # file names a test may not change (hooks)
    fixed_paths: frozenset[str] = frozenset()  # paths a test may not change (shared infrastructure)
    # the documentation ablation: directories where the agent writes its own feature files
    authored_dirs: tuple[str, ...] = ()

    def holds(self, path: str) -> bool:
        if path.endswith(".feature") and any(path.startswith(d.rstrip("/") + "/") for d in self.authored_dirs):
            return True
        return path.endswith(self.suffixes) and any(path.startswith(d.rstrip("/") + "/") for d in self.dirs)

    def is_fixed(self, path: str) -> bool:
        return path in self.fixed_paths or path.rsplit("/", 1)[-1] in self.fixed_names


class Language(ABC):
    """What req2test needs of the language the production code is written in."""

    name: ClassVar[str]
    #: suffixes of the language's source files (production and test side)
    source_suffixes: ClassVar[tuple[str, ...]]

    @abstractmethod
    def generate_mutants(self, root: Path, production: list[str]) -> list[Mutant]:
        """Every mutant of the production files or directories ``production`` (relative to
        ``root``), in a deterministic order with stable ids (SPEC §2 IV operator families).
        Never runs production code."""

    @abstractmethod
    def apply_mutant(self, source: str, mutant: Mutant) -> str:
        """The text of ``mutant.file`` with the mutant applied; ``source`` is the file's
        original text. Raises ``ValueError`` if the mutant does not fit the text."""


class Framework(ABC):
    """What req2test needs of a BDD framework.

    Paths are relative to a project root unless a parameter says otherwise; a
    *selection* is one feature file and the 1-based lines of the scenarios to run.
    """

    name: ClassVar[str]
    language: ClassVar[Language]
    #: files whose presence configures the runner: a prediction may not write them
    runner_config_files: ClassVar[frozenset[str]]
    #: ``python -m`` module of the build's warm worker (ops: init, session, trace, ...)
    build_worker_module: ClassVar[str]
    #: ``python -m`` module of the evaluator's sandboxed worker (ops: init, trace, runs)
    eval_worker_module: ClassVar[str]
    #: the program ``run_command``'s argv is given to
    interpreter: ClassVar[str] = "python"

    def test_area(self, root: Path, features_dir: str) -> TestAreaSpec:
        """Where test code lives in the project at ``root`` (default: Python files under the
        features directory, the hooks module fixed)."""
        return TestAreaSpec(dirs=(features_dir.rstrip("/"),), suffixes=(".py",),
                            fixed_names=frozenset({"environment.py"}))

    @abstractmethod
    def prompt_terms(self) -> PromptTerms:
        """The framework's vocabulary for prompts, agents' tool descriptions and enrichment."""

    @abstractmethod
    def version(self) -> str:
        """The runner's version as installed here (recorded in the dataset card as
        ``runner = "<name> <version>"``)."""

    @abstractmethod
    def runtime_packages(self) -> list[str]:
        """Requirement specifiers the runner itself needs in a project environment
        (pinned to the version req2test runs with, so results are comparable)."""

    @abstractmethod
    def run_command(self, feature: str, lines: list[int], *, stop: bool = False,
                    report: str | None = None) -> list[str]:
        """argv (after the interpreter) that runs exactly the selected scenarios the way
        the developers would; exit status 0 iff every selected scenario passed. ``stop``:
        end at the first scenario that does not pass; ``report``: also write the runner's
        structured result there."""

    @abstractmethod
    def dry_run_command(self, features_dir: str) -> list[str]:
        """argv (after the interpreter) that loads the test side without running a step:
        it fails iff the runner cannot initialise (hooks, step modules, configuration)."""

    @abstractmethod
    def parser_differences(self, root: Path, feature: FeatureFile) -> list[str]:
        """Where the runner's own parser disagrees with the Gherkin reference
        (``bench.gherkin_reader``) about one feature file: a scenario the reference found
        that the runner does not see, other step texts, a file the runner cannot parse.
        Warnings for the build log, never an error."""

    @abstractmethod
    def fresh_run(self, root: Path, python_path: list[str], feature: str, lines: list[int],
                  mutant: Mutant | None, timeout: float, python: str) -> FreshVerdict:
        """The reference run: a new runner process on a copy of ``root`` with ``mutant``
        written to disk (None: the original). Slow and obviously right; the warm workers
        must agree with it on every verdict."""

    # ------------------------------------------------------------------ optional pipelines
    # A framework whose runs cannot go through the two Python workers (another language's
    # runtime, no fork) brings its own build and evaluation here; behave uses neither.

    def build_project(self, source: Any, out_dir: Path, options: Any, progress: Any, timer: Any,
                      tmp: Path) -> Any:
        """Build the dataset of ``source`` (a ``bench.project.ProjectSource``) into ``out_dir``
        and return its ``DatasetCard``; None: the default warm-worker pipeline builds it."""
        return None

    def evaluation(self, dataset_root: Path, project: Any, gold: dict, options: Any) -> Any:
        """An object with ``rejections(files) -> list[str]`` (the submission check) and
        ``judge(instance, prediction) -> bench.verdict.Judgement`` for one project of a
        dataset; None: the default sandboxed warm worker judges it."""
        return None
