"""A godog project's own settings: which Go package runs the suite, the tags its developers run,
and the godog version its go.mod requires.

A project keeps them in ``req2test.toml`` (a Go project has no pyproject.toml), the table every
framework reads (``bench.project``)::

    [tool.req2test]
    framework = "godog"
    features = "test/features"
    package = "test"          # the Go package whose test binary (TestMain) runs godog
    production = ["abi", "types", ...]
    tags = ["unit.offline", ...]

``package`` may be left out when the features lie in ``<package>/features`` (godog's default
``Paths``, relative to the package directory ``go test`` runs in): the nearest directory above
the features directory that holds ``*_test.go`` files is the package. Where there is none, the
project's suites are its ``testing.T`` suites (``suites.discover``: coddy-agent's layout), and
``skip_build_tags = ["ui"]`` leaves out the suites whose files need one of those build tags.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

GODOG_MODULE = "github.com/cucumber/godog"


class GodogSettingsError(ValueError):
    """The project does not say (and its layout does not show) how its suite runs: one line."""


@dataclass(frozen=True)
class GodogSettings:
    package: str | None  # the flag-driven suite's package directory ("." for the root); None: testing.T suites
    tags: tuple[str, ...]  # godog tags without "@" (any of them selects a scenario); () = all
    skip_build_tags: tuple[str, ...] = ()  # testing.T suites needing one of these build tags are not built
    production: tuple[str, ...] = ()

    @property
    def godog_tags(self) -> list[str]:
        return [f"@{t}" for t in self.tags]


def settings_table(root: Path) -> dict:
    for name in ("pyproject.toml", "req2test.toml"):
        path = root / name
        if path.is_file():
            try:
                table = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get("req2test", {})
            except tomllib.TOMLDecodeError as exc:
                raise GodogSettingsError(f"{path} is not valid TOML: {exc}") from exc
            if table:
                return table if isinstance(table, dict) else {}
    return {}


def read_settings(root: Path, features_dir: str | None = None) -> GodogSettings:
    """The suite's package and tags, from ``[tool.req2test]`` or the layout (see the module)."""
    table = settings_table(root)
    features = features_dir or str(table.get("features", "features"))
    package = table.get("package")
    if package is not None and not isinstance(package, str):
        raise GodogSettingsError(f"{root}: [tool.req2test] package must be a directory (a string), not {package!r}")
    explicit = package is not None
    if package is None:
        package = _find_package(root, features)
    if package is not None:
        package = PurePosixPath(package.strip("/") or ".").as_posix()
        if explicit and (not (root / package).is_dir() or not any((root / package).glob("*_test.go"))):
            raise GodogSettingsError(f"{root}: the godog package {package}/ holds no *_test.go files "
                                     f"(set [tool.req2test] package = \"dir\" to the package whose TestMain runs "
                                     f"godog)")
    return GodogSettings(package=package, tags=_strings(table, "tags", strip="@"),
                         skip_build_tags=_strings(table, "skip_build_tags"),
                         production=_strings(table, "production"))


def _strings(table: dict, key: str, strip: str = "") -> tuple[str, ...]:
    value = table.get(key, [])
    if isinstance(value, str):
        value = [value]
    return tuple(str(v).strip().lstrip(strip) for v in value if str(v).strip())


def _find_package(root: Path, features_dir: str) -> str | None:
    """The nearest directory at or above the features whose test files bind godog's flags (a
    TestMain's ``godog.BindFlags``/``BindCommandLineFlags``); None: there is none."""
    here = PurePosixPath(features_dir.strip("/"))
    for candidate in [here, *here.parents]:
        tests = list((root / candidate).glob("*_test.go"))
        if tests and any(_binds_flags(path) for path in tests):
            return candidate.as_posix()
    return None


def _binds_flags(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return "godog.BindFlags" in text or "godog.BindCommandLineFlags" in text


_REQUIRE = re.compile(r"^\s*(?:require\s+)?" + re.escape(GODOG_MODULE) + r"\s+v(?P<version>\S+)")


def required_godog(root: Path) -> str | None:
    """The godog version ``root/go.mod`` requires (``0.14.1``), None when it requires none."""
    try:
        text = (root / "go.mod").read_text(encoding="utf-8")
    except OSError:
        return None
    for line in text.splitlines():
        match = _REQUIRE.match(line.split("//", 1)[0])
        if match:
            return match["version"]
    return None


def package_of_feature(feature: str) -> tuple[str, str]:
    """(package directory, the feature's path relative to it) by godog's convention, for a
    command that has no project tree at hand: the package is the directory above the path's
    last ``features`` component (godog's default ``Paths``); without one, the feature's own
    directory."""
    parts = PurePosixPath(feature).parts
    if "features" in parts[:-1]:
        k = len(parts) - 1 - parts[:-1][::-1].index("features") - 1
        package = PurePosixPath(*parts[:k]).as_posix() if k else "."
        return package, PurePosixPath(*parts[k:]).as_posix()
    path = PurePosixPath(feature)
    return (path.parent.as_posix() or "."), path.name
