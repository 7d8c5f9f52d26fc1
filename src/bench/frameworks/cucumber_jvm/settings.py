"""A Cucumber-JVM project's own settings: where its features and glue are, the tags its
developers run, and which sources are production.

A Maven project has no pyproject.toml; it keeps them in ``req2test.toml``, the table every
framework reads (``bench.project``)::

    [tool.req2test]
    framework = "cucumber-jvm"
    features = "src/test/resources/com/algorand/algosdk/unit"
    glue = ["com.algorand.algosdk.unit", "com.algorand.algosdk.cucumber.shared"]
    production = ["src/main/java"]
    production_package = "com.algorand.algosdk"   # JaCoCo's includes (default: from the sources)
    tags = ["unit.abijson", ...]                   # any of them selects a scenario; [] = all

``glue`` is what the JUnit runner's ``@CucumberOptions(glue=..., extraGlue=...)`` names (its
own package when it names none); req2test runs cucumber's command line with exactly these.
``test_sources`` (default ``src/test/java``) is where the step classes' sources live.

What surefire's configuration gives the developers' JVM and cucumber's command line does not,
and what a suite's scenarios need of each other:

    jvm_args = ["--add-opens=java.base/java.lang=ALL-UNNAMED", "-Dcommons.db.schema=kapuadb"]
    setup_tags = ["setup"]        # these scenarios run before every selected one of their feature
    teardown_tags = ["teardown"]  # and these after it, in the same JVM

    reload_groups = ["org.eclipse.kapua", "org.mockito", "org.objenesis"]

``reload_groups`` (Maven groupIds): the builder's warm runner loads these jars afresh in every
run's class loader, with the project's classes, instead of once in the JVM's. A multi-module
project's library modules load glue classes by name (Kapua's ``KapuaLocator`` reads
``locator.class.impl`` and would not see the glue's ``MockedLocator`` from the parent loader)
and keep static state (the locator instance); Mockito 1's cglib caches proxy classes by name
across loaders (the second run's mock of the same class fails with a ``ClassCastException``).

``jvm_args`` (surefire's ``argLine`` and ``systemPropertyVariables``) go on every scenario JVM,
the warm runner's and the judge's alike. ``setup_tags``/``teardown_tags`` name *companion*
scenarios: Kapua's features open with an ``@setup`` scenario that builds the JVM-wide state
(system properties, the Guice locator) every later scenario of the file relies on, and close
with a ``@teardown`` one; a run selects ``FILE:SETUP:LINE:TEARDOWN`` (cucumber runs them in file
order) and passes when the scenario and its companions pass. Companions are never instances.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from bench.frameworks.cucumber_jvm.syntax import java_parser, package_name

DEFAULT_TEST_SOURCES = "src/test/java"
DEFAULT_PRODUCTION = ("src/main/java",)
_PACKAGE = re.compile(r"^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$")


class CucumberJvmSettingsError(ValueError):
    """The project does not say how its suite runs: one line for the user."""


@dataclass(frozen=True)
class CucumberJvmSettings:
    features: str
    glue: tuple[str, ...]  # Java packages
    tags: tuple[str, ...]  # without "@"
    production: tuple[str, ...]  # source directories (or files) of production
    production_package: str  # JaCoCo includes: ``PKG.*``
    test_sources: str = DEFAULT_TEST_SOURCES
    jvm_args: tuple[str, ...] = ()  # on every scenario JVM (surefire's argLine, systemPropertyVariables)
    setup_tags: tuple[str, ...] = ()  # without "@": companions run before the selected scenario
    teardown_tags: tuple[str, ...] = ()  # ... and after it
    reload_groups: tuple[str, ...] = ()  # Maven groupIds whose jars the warm runner reloads per run

    def reloaded_jar(self, path: str) -> bool:
        """Whether a dependency jar (a Maven repository path) belongs to ``reload_groups``."""
        where = "/" + path.replace("\\", "/").lstrip("/")
        return any(f"/{group.replace('.', '/')}/" in where for group in self.reload_groups)

    @property
    def glue_dirs(self) -> list[str]:
        """The source directories of the glue packages (relative to the project root)."""
        return [f"{self.test_sources}/{package.replace('.', '/')}" for package in self.glue]


def settings_table(root: Path) -> dict:
    path = root / "req2test.toml"
    if not path.is_file():
        return {}
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get("req2test", {})
    except tomllib.TOMLDecodeError as exc:
        raise CucumberJvmSettingsError(f"{path} is not valid TOML: {exc}") from exc
    return table if isinstance(table, dict) else {}


def _strings(table: dict, key: str, strip: str = "") -> tuple[str, ...]:
    value = table.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise CucumberJvmSettingsError(f"[tool.req2test] {key} must be a list of strings, not {value!r}")
    return tuple(str(v).strip().lstrip(strip) for v in value if str(v).strip())


def read_settings(root: Path, features_dir: str | None = None) -> CucumberJvmSettings:
    table = settings_table(root)
    if not (root / "pom.xml").is_file():
        raise CucumberJvmSettingsError(f"{root} has no pom.xml: req2test runs Cucumber-JVM projects built by Maven")
    features = (features_dir or str(table.get("features", ""))).strip("/")
    if not features:
        raise CucumberJvmSettingsError(f"{root}: set [tool.req2test] features = \"src/test/resources/...\" in "
                                       f"req2test.toml (the directory of the suite's feature files)")
    glue = _strings(table, "glue")
    if not glue:
        raise CucumberJvmSettingsError(f"{root}: set [tool.req2test] glue = [\"com.example.steps\"] in req2test.toml "
                                       f"(the packages the JUnit runner's @CucumberOptions glue names)")
    for package in glue:
        if not _PACKAGE.match(package):
            raise CucumberJvmSettingsError(f"{root}: glue {package!r} is not a Java package name")
    production = _strings(table, "production") or DEFAULT_PRODUCTION
    test_sources = str(table.get("test_sources", DEFAULT_TEST_SOURCES)).strip("/")
    production_package = str(table.get("production_package", "")).strip() or _common_package(root, production)
    jvm_args = _strings(table, "jvm_args")
    for argument in jvm_args:
        if not argument.startswith("-"):
            raise CucumberJvmSettingsError(f"{root}: jvm_args {argument!r} is not a JVM option (they start with -)")
    return CucumberJvmSettings(features=features, glue=glue, tags=_strings(table, "tags", strip="@"),
                               production=production, production_package=production_package,
                               test_sources=test_sources, jvm_args=jvm_args,
                               setup_tags=_strings(table, "setup_tags", strip="@"),
                               teardown_tags=_strings(table, "teardown_tags", strip="@"),
                               reload_groups=_strings(table, "reload_groups"))


def _common_package(root: Path, production: tuple[str, ...]) -> str:
    """The longest package every production source file lies in (JaCoCo's ``includes``)."""
    packages: set[str] = set()
    for entry in production:
        base = root / entry
        for path in ([base] if base.is_file() else sorted(base.rglob("*.java"))[:400]):
            packages.add(package_name(java_parser().parse(path.read_bytes()).root_node))
    parts = [p.split(".") for p in packages if p]
    if not parts:
        return ""
    common: list[str] = []
    for names in zip(*parts):
        if len(set(names)) != 1:
            break
        common.append(names[0])
    return ".".join(common)


__all__ = ["CucumberJvmSettings", "CucumberJvmSettingsError", "read_settings", "settings_table"]
