"""Assemble the java-algorand-sdk Cucumber-JVM corpus at pinned commits.

java-algorand-sdk v2.10.1 (2025-10-02) runs cucumber-jvm 6.6.0 (cucumber-java, cucumber-junit
on JUnit 4 through the vintage engine, cucumber-picocontainer) with mockito 3.5.7. Its step
definitions are Java classes in ``src/test/java/com/algorand/algosdk/unit`` (the runner
``RunCucumberUnitTest``'s package, cucumber's default glue) and
``com.algorand.algosdk.cucumber.shared`` (the runner's ``extraGlue``); its Gherkin comes from
algorand-sdk-testing, which ``test-harness.sh`` places as

    features/unit/*         -> src/test/resources/com/algorand/algosdk/unit
    features/integration/*  -> src/test/resources/com/algorand/algosdk/integration
    features/resources/*    -> src/test/resources/          (classpath root: mock responses)

after moving ``features/unit/offline.feature`` to ``integration`` ("The Java implementation of
these is too tightly coupled with the integration tests"). ``make unit`` is then

    mvn test -Dcucumber.filter.tags="@unit.abijson or @unit.abijson.byname or ..."

(the Makefile's ``awk '{print $2}'`` is make-expanded to ``awk '{print }'``: whole lines of
``src/test/unit.tags`` joined with " or "). The runner's features default to its package on
the classpath, ``classpath:com/algorand/algosdk/unit``: the unit suite is the unit directory.
This script does the same offline-friendly part and adds ``req2test.toml``:

    [tool.req2test]
    framework = "cucumber-jvm"
    features = "src/test/resources/com/algorand/algosdk/unit"
    glue = ["com.algorand.algosdk.unit", "com.algorand.algosdk.cucumber.shared"]
    production = ["src/main/java"]
    tags = [...]                  # the unit tags of src/test/unit.tags, any of them selects

The testing commit is 0335a56 (2025-07-08, "Exercise group-id filter on main
SearchForTransactions paths"), algorand-sdk-testing's master head from 2025-07-08 until
2026-03-06, so the head ``.test-env``'s ``SDK_TESTING_BRANCH=master`` gave when v2.10.1 (and
2.10.0, 2025-09-12) was released; it still has dryrun, which ``unit.tags`` still lists.

Usage:
    python scripts/corpora/java_algorand_sdk.py OUT [--sdk GIT] [--testing GIT]
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from py_algorand_sdk import checkout_with_features, corpus_main, default_source

__all__ = ["assemble", "default_source", "main"]  # the tests assemble through this module

SDK_COMMIT = "1561fd17a6f229e12cf9d9b1b5cb255052e8f297"  # v2.10.1
TESTING_COMMIT = "0335a56b51cd1c266c5a51954a50774b7e1f1414"  # master at the release
HARNESS_DIR = "src/test/resources/com/algorand/algosdk"  # test-harness.sh's TEST_DIR
TEST_RESOURCES = "src/test/resources"  # test-harness.sh's TEST_RESOURCES_DIR
FEATURES = f"{HARNESS_DIR}/unit"
GLUE = ["com.algorand.algosdk.unit", "com.algorand.algosdk.cucumber.shared"]
PRODUCTION = ["src/main/java"]
PRODUCTION_PACKAGE = "com.algorand.algosdk"


def unit_tags(sdk: Path) -> list[str]:
    tags = [t.lstrip("@") for t in (sdk / "src" / "test" / "unit.tags").read_text().split() if t.startswith("@")]
    return list(dict.fromkeys(tags))


def place_like_the_harness(out: Path) -> None:
    """``features/`` was copied whole into HARNESS_DIR: move what test-harness.sh moves."""
    harness = out / HARNESS_DIR
    offline = harness / "unit" / "offline.feature"
    if offline.is_file():
        (harness / "integration").mkdir(parents=True, exist_ok=True)
        shutil.move(str(offline), str(harness / "integration" / "offline.feature"))
    resources = harness / "resources"
    if resources.is_dir():
        shutil.copytree(resources, out / TEST_RESOURCES, dirs_exist_ok=True)
        shutil.rmtree(resources)
    for entry in harness.iterdir():  # the harness copies only these three
        if entry.name not in ("unit", "integration"):
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()


def assemble(out: Path, sdk_source: str, testing_source: str, sdk_commit: str = SDK_COMMIT,
             testing_commit: str = TESTING_COMMIT) -> Path:
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{out} exists and is not empty")
    checkout_with_features(out, sdk_source, sdk_commit, testing_source, testing_commit, HARNESS_DIR)
    place_like_the_harness(out)
    missing = [p for p in PRODUCTION if not (out / p).is_dir()]
    if missing:
        raise SystemExit(f"production directories missing at {sdk_commit[:7]}: {', '.join(missing)}")
    tags = unit_tags(out)
    settings = ("[tool.req2test]\n"
                'framework = "cucumber-jvm"\n'
                f'features = "{FEATURES}"\n'
                "glue = [" + ", ".join(f'"{g}"' for g in GLUE) + "]\n"
                "production = [" + ", ".join(f'"{p}"' for p in PRODUCTION) + "]\n"
                f'production_package = "{PRODUCTION_PACKAGE}"  # JaCoCo includes={PRODUCTION_PACKAGE}.*\n'
                "tags = [" + ", ".join(f'"{t}"' for t in tags) + "]\n")
    (out / "req2test.toml").write_text(settings, encoding="utf-8")
    return out


def main() -> None:
    corpus_main(__doc__, assemble, "java-algorand-sdk", SDK_COMMIT, TESTING_COMMIT)


if __name__ == "__main__":
    main()
