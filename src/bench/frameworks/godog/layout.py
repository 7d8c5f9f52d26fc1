"""A godog project as req2test runs it: its settings, its suites (``suites``), which suite runs
each scenario, and the test side of each test package (``testside.TestSideGo``).

A flag-driven project (``package`` set or found) has one suite that runs every scenario its
tags select. A project of testing.T suites has one per ``godog.TestSuite`` literal; its test
packages are often production packages too (coddy-agent's ``internal/tools``), so their test
side is their ``*_test.go`` files only.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from bench.frameworks.godog.settings import GodogSettings, GodogSettingsError, read_settings
from bench.frameworks.godog.suites import GoSuite, SuitePlan, discover, plan
from bench.frameworks.godog.testside import RegistrationSite, TestSideGo


@dataclass
class GodogLayout:
    root: Path
    settings: GodogSettings
    suites: list[GoSuite]
    skipped: list[tuple[GoSuite, str]] = field(default_factory=list)  # suites not built, and why
    _plans: dict[str, SuitePlan] = field(default_factory=dict)
    _assignment: dict[tuple[str, int], GoSuite] | None = None
    _shared: dict[tuple[str, int], list[str]] = field(default_factory=dict)
    _sides: dict[str, TestSideGo] = field(default_factory=dict)
    # one lock for the lazily made parts (a judge's threads share the layout)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    @classmethod
    def of(cls, root: Path, features_dir: str | None = None) -> GodogLayout:
        """``GodogSettingsError`` (one line) when the project shows no way to run its suite."""
        settings = read_settings(root, features_dir)
        if settings.package is not None:
            return cls(root, settings, [GoSuite(package=settings.package)])
        found = discover(root)
        if not found:
            raise GodogSettingsError(f"{root}: no godog suite: no package's TestMain binds godog's flags at or above "
                                     f"the features, and no test runs godog.TestSuite with Options.TestingT (set "
                                     f"[tool.req2test] package = \"dir\")")
        skip = set(settings.skip_build_tags)
        kept = [s for s in found if not skip & set(s.build_tags)]
        skipped = [(s, f"needs build tag {', '.join(sorted(skip & set(s.build_tags)))} (skip_build_tags)")
                   for s in found if skip & set(s.build_tags)]
        return cls(root, settings, kept, skipped)

    @property
    def flag_driven(self) -> bool:
        return self.settings.package is not None

    @property
    def packages(self) -> list[str]:
        return sorted({s.package for s in self.suites})

    def plan(self, suite: GoSuite) -> SuitePlan | None:
        """The testing.T suite's pickles and subtest names (None for the flag-driven suite)."""
        if suite.flag_driven:
            return None
        with self._lock:
            if suite.key not in self._plans:
                self._plans[suite.key] = plan(self.root, suite)
            return self._plans[suite.key]

    def _assign(self) -> dict[tuple[str, int], GoSuite]:
        # built whole, then published (a judge's threads ask at once: a half-filled map said
        # "no suite runs" a scenario a suite does run)
        with self._lock:
            if self._assignment is None:
                assignment: dict[tuple[str, int], GoSuite] = {}
                shared: dict[tuple[str, int], list[str]] = {}
                for suite in self.suites:
                    suite_plan = self.plan(suite)
                    for unit in (suite_plan.subtests if suite_plan is not None else {}):
                        if unit in assignment:
                            shared.setdefault(unit, []).append(suite.key)
                        else:
                            assignment[unit] = suite
                self._shared = shared
                self._assignment = assignment
            return self._assignment

    def suite_of(self, feature: str, lines: list[int]) -> GoSuite | None:
        """The suite that runs every one of ``lines`` of ``feature`` (None: no one suite does)."""
        if self.flag_driven:
            return self.suites[0]
        assignment = self._assign()
        chosen = {assignment.get((feature, line)) for line in lines}
        return chosen.pop() if len(chosen) == 1 else None

    def also_run_by(self, feature: str, line: int) -> list[str]:
        self._assign()
        return self._shared.get((feature, line), [])

    def suites_naming(self, feature: str) -> list[GoSuite]:
        return [s for s in self.suites if feature in s.paths]

    def skipped_naming(self, feature: str) -> list[tuple[GoSuite, str]]:
        return [(s, why) for s, why in self.skipped if feature in s.paths]

    def side(self, package: str) -> TestSideGo:
        with self._lock:
            if package not in self._sides:
                self._sides[package] = TestSideGo(self.root, package, tests_only=self.tests_only(package))
            return self._sides[package]

    def side_of_file(self, rel: str) -> TestSideGo:
        return self.side(PurePosixPath(rel).parent.as_posix() or ".")

    def tests_only(self, package: str) -> bool:
        """A test package that is also production (its non-test files are the product)."""
        return any(package == p.strip("/") or package.startswith(p.strip("/") + "/")
                   for p in self.settings.production if p.strip("/") not in ("", "."))


def suite_sites(suite: GoSuite, side: TestSideGo) -> list[RegistrationSite]:
    """A testing.T suite's registrations in the order its ScenarioInitializer makes them: the
    statements of the functions it names (a func literal's calls), else of the suite's file."""
    names = set(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:\(|$)", suite.initializer.strip()))
    sites = sorted(side.sites(), key=lambda s: (s.file, s.start_byte))
    chosen = [s for s in sites if s.initializer.rsplit(".", 1)[-1] in names]
    return chosen or [s for s in sites if s.file == suite.file] or sites


def pattern_matches(pattern: str, text: str) -> bool:
    """Whether godog's regexp ``pattern`` matches step ``text`` (Python's re reads Go's RE2 alike
    for step patterns; a pattern it cannot read matches nothing)."""
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return False


__all__ = ["GodogLayout", "pattern_matches", "suite_sites"]
