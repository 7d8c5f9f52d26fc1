"""The contract between req2test and a BDD framework (``Framework``, with its ``Builder`` and
``Judge``) and the language its production code is written in (``Language``, with its
``BodyHider``).

The builder, the evaluator, views, the harness and calibration reach a framework only through
these interfaces, obtained by name from ``bench.frameworks.registry`` (the dataset card records
the name in each project's ``runner``). Every method is abstract: a framework implements all of
them, and there is no default pipeline another framework falls back to. A new framework is a
package ``bench/frameworks/<name>/`` (or one of its own) plus a registry entry or a
``req2test.frameworks`` entry point; ``docs/frameworks.md`` walks through one, and
``tests/integration/test_toy_framework.py`` builds, evaluates and views a toy framework that
lives entirely in its test.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, ClassVar, Protocol

from bench.gherkin_reader import FeatureFile
from bench.judging import Judge, JudgeContext, RunVerdict
from bench.model import GoldTest, Mutant

if TYPE_CHECKING:  # the builder's types: a framework module imports them itself
    from bench.builder.pipeline import BuildOptions, StageTimer
    from bench.model import DatasetCard
    from bench.progress import Progress
    from bench.project import ProjectSource


@dataclass(frozen=True)
class FreshVerdict:
    """A run of the reference kind: a new runner process, the mutant on disk."""

    verdict: RunVerdict  # killed | survived | timeout | infra_no_step
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


MAX_FILES = 200  # files of one submission
MAX_FILE_BYTES = 1 << 20  # a test file is source text: anything larger is not one
MAX_PATH_BYTES = 1024


@dataclass(frozen=True)
class TestAreaSpec:
    """Where a generated test may live in a project, and the one submission check made from it:
    the harness's workspace diff collects exactly the paths this admits as test code, and every
    framework's judge rejects what ``rejections`` names (``Judge.rejections`` starts with it)."""

    __test__ = False  # not a pytest class

    dirs: tuple[str, ...]  # directories (relative) whose files are test code
    suffixes: tuple[str, ...]  # suffixes of test code
    fixed_names: frozenset[str] = frozenset()  # file names a test may not change (hooks)
    fixed_paths: frozenset[str] = frozenset()  # paths a test may not change (shared infrastructure)
    # the documentation ablation: directories where the agent writes its own feature files
    authored_dirs: tuple[str, ...] = ()
    # existing files of the area that are not test code (fixtures, data, feature files): never replaced
    protected: frozenset[str] = frozenset()
    directories: frozenset[str] = frozenset()  # existing directories of the project's area
    runner_config_files: frozenset[str] = frozenset()  # names that configure the runner
    language: str = "source"  # how a rejection names test code ("Python", "JavaScript/TypeScript")

    def holds(self, path: str) -> bool:
        """Whether ``path`` is test code a prediction may write (fixed paths aside)."""
        if self._authored(path):
            return True
        return path.endswith(self.suffixes) and any(path.startswith(d.rstrip("/") + "/") for d in self.dirs)

    def is_fixed(self, path: str) -> bool:
        return path in self.fixed_paths or path.rsplit("/", 1)[-1] in self.fixed_names

    def rejections(self, files: dict[str, str]) -> list[str]:
        """Why the submission's files cannot be laid out as a test (empty: they can)."""
        reasons = _layout_rejections(files)
        area = ", ".join(d.rstrip("/") + "/" for d in self.dirs)
        for raw in files:
            path = PurePosixPath(raw)
            if any(ord(c) < 32 or ord(c) == 127 for c in raw) or not _encodable(raw):
                reasons.append(f"{raw!r}: a control character or undecodable name in a path")
            elif path.is_absolute() or ".." in path.parts or raw != path.as_posix() or raw in ("", "."):
                reasons.append(f"{raw}: not a plain relative path")
            elif raw in self.directories:
                reasons.append(f"{raw}: a directory of the project, not a file")
            elif not self._authored(raw) and not any(raw.startswith(d.rstrip("/") + "/") for d in self.dirs):
                kind = "runner configuration" if path.name in self.runner_config_files else "outside the test area"
                reasons.append(f"{raw}: {kind} (only files under {area} are test code)")
            elif path.suffix == ".feature" and not self._authored(raw):
                reasons.append(f"{raw}: feature files are the requirement, not test code" + (
                    f" (authored feature files go under {self.authored_dirs[0]}/)" if self.authored_dirs else ""))
            elif self.is_fixed(raw):
                reasons.append(f"{raw}: shared test infrastructure (hooks) cannot be replaced")
            elif raw in self.protected:
                reasons.append(f"{raw}: shared fixture/test data cannot be replaced")
            elif "__pycache__" in path.parts or path.suffix in (".pyc", ".pyo"):
                reasons.append(f"{raw}: bytecode is not test code")
            elif not self.holds(raw):
                reasons.append(f"{raw}: not a {self.language} file ({', '.join(self.suffixes)})")
            elif len(raw.encode("utf-8")) > MAX_PATH_BYTES or any(len(p.encode()) > 255 for p in path.parts):
                reasons.append(f"{raw[:80]}…: path too long")
        return reasons

    def _authored(self, raw: str) -> bool:
        return raw.endswith(".feature") and raw not in self.protected and \
            any(raw.startswith(d.rstrip("/") + "/") for d in self.authored_dirs)


def _layout_rejections(files: dict[str, str]) -> list[str]:
    reasons = []
    if len(files) > MAX_FILES:
        reasons.append(f"{len(files)} files (at most {MAX_FILES})")
    names = set(files)
    for raw, content in files.items():
        for parent in PurePosixPath(raw).parents:
            if parent.as_posix() in names:
                reasons.append(f"{raw}: its directory {parent.as_posix()} is also submitted as a file")
                break
        if not _encodable(content):
            reasons.append(f"{raw}: content is not valid UTF-8 text (e.g. a lone surrogate)")
        elif len(content.encode("utf-8")) > MAX_FILE_BYTES:
            reasons.append(f"{raw}: larger than {MAX_FILE_BYTES >> 20} MiB")
    return reasons


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


HIDDEN_MESSAGE = "implementation hidden"  # what every hidden body raises, in every language


@dataclass
class HidingReport:
    hidden: list[str] = field(default_factory=list)  # qualnames whose bodies were replaced
    kept_stubs: list[str] = field(default_factory=list)  # nothing to hide (stub, overload, abstract)


class BodyHider(Protocol):
    """Hides function bodies of one language (a view's production code)."""

    language: str
    source_suffixes: tuple[str, ...]
    test_suffixes: tuple[str, ...]  # files of those suffixes are tests, whatever directory holds them

    def hide_bodies(self, source: str, should_hide: Callable[[str, int], bool]) -> tuple[str, HidingReport]:
        """The source with every body ``should_hide(qualname, def_line)`` selects replaced
        by a placeholder that raises with ``HIDDEN_MESSAGE``; declarations stay verbatim."""


@dataclass(frozen=True)
class TestSideView:
    """What a repository view does to the test side (every scenario's implementation goes,
    what the whole suite shares stays)."""

    __test__ = False

    removed_files: frozenset[str]  # files left out of the view (file-granularity test code)
    rewritten: dict[str, bytes]  # files whose step definitions were cut out (statement granularity)
    removed: list[str]  # the manifest's list: files, or FILE:LINE step-definition statements
    infrastructure: frozenset[str]  # test-side files kept: hooks and what they import


class Language(ABC):
    """What req2test needs of the language the production code is written in."""

    name: ClassVar[str]
    #: suffixes of the language's source files (production and test side)
    source_suffixes: ClassVar[tuple[str, ...]]

    @abstractmethod
    def generate_mutants(self, root: Path, production: list[str]) -> list[Mutant]:
        """Every mutant of the production files or directories ``production`` (relative to
        ``root``), in a deterministic order with stable ids (docs/building.md, mutation operators).
        Never runs production code."""

    @abstractmethod
    def apply_mutant(self, source: str, mutant: Mutant) -> str:
        """The text of ``mutant.file`` with the mutant applied; ``source`` is the file's
        original text. Raises ``ValueError`` if the mutant does not fit the text."""

    @abstractmethod
    def hider(self) -> BodyHider:
        """The body hider of this language (views of production code)."""


class Builder(ABC):
    """Builds the dataset of one project (``Framework.builder``)."""

    @abstractmethod
    def build(self, source: ProjectSource, out_dir: Path, options: BuildOptions, progress: Progress,
              timer: StageTimer, tmp: Path) -> DatasetCard:
        """Build the dataset of ``source`` into ``out_dir`` (empty or absent) and return its card;
        ``tmp`` is scratch removed afterwards; ``timer(stage)`` times the build's stages. Raises
        ``bench.builder.pipeline.BuildError`` (one line) for what the user must fix."""


class Framework(ABC):
    """What req2test needs of a BDD framework: every method is implemented by every
    framework; nothing outside ``bench/frameworks/<name>/`` knows which one it talks to.

    Paths are relative to a project root unless a parameter says otherwise; a
    *selection* is one feature file and the 1-based lines of the scenarios to run.
    """

    name: ClassVar[str]
    language: ClassVar[Language]
    #: files whose presence configures the runner: a prediction may not write them
    runner_config_files: ClassVar[frozenset[str]]
    #: the program ``run_command``'s argv is given to ("python" runs in the project's environment)
    interpreter: ClassVar[str] = "python"

    # ------------------------------------------------------------------ the runner
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
        written to disk (None: the original). Slow and obviously right; every faster
        executor must agree with it on every verdict."""

    # ------------------------------------------------------------------ the test side
    @abstractmethod
    def test_area(self, root: Path, features_dir: str) -> TestAreaSpec:
        """Where test code lives in the project at ``root``: what a workspace diff collects
        and what every submission check admits (``TestAreaSpec.rejections``)."""

    @abstractmethod
    def view_test_side(self, snapshot: Path, features_dir: str, gold_test_files: set[str]) -> TestSideView:
        """What a repository view removes of the test side (every scenario's implementation,
        ``gold_test_files`` included) and what it keeps (shared infrastructure)."""

    @abstractmethod
    def calibration_files(self, snapshot: Path, records: list[GoldTest], *,
                          suite: bool = False) -> dict[str, dict[str, str]]:
        """The reference predictions of one instance (one record) or of one suite (``suite``: the
        records of its scenarios):
        ``{"oracle": files, "empty": files, "then-stripped": files}`` — the ground truth, every
        step body emptied, the Then steps' bodies emptied. Raises
        ``bench.judging.UnsupportedByFramework`` for what the framework cannot derive."""

    @abstractmethod
    def workspace_links(self, snapshot: Path) -> dict[str, Path]:
        """Read-only directories an agent's workspace links by name (outside the test area,
        never collected), made on first need; e.g. Node's ``node_modules``. Raises
        ``RuntimeError`` (one line) when they cannot be made."""

    @property
    def needs_python_runtime(self) -> bool:
        """An agent's sandbox needs a Python environment with the project's dependencies
        (``runtime_packages`` included) to run scenarios."""
        return self.interpreter == "python"

    # ------------------------------------------------------------------ build and judge
    @abstractmethod
    def builder(self) -> Builder:
        """The dataset builder of a project of this framework."""

    @abstractmethod
    def judge(self, context: JudgeContext) -> Judge:
        """The judge of one project's predictions. Raises
        ``bench.judging.UnsupportedByFramework`` for a task it does not implement (e.g. a
        predicted production, ``context.snapshot``)."""
