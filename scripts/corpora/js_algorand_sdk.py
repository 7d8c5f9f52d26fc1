"""Assemble the js-algorand-sdk cucumber-js corpus at pinned commits.

js-algorand-sdk v3.5.2 keeps its step definitions in ``tests/cucumber/steps`` (every
definition in ``steps.js``, registered by ``index.js``) and gets its Gherkin from
algorand-sdk-testing, whose ``features/`` its ``test-harness.sh`` copies into
``tests/cucumber/features``; ``make unit`` then runs cucumber-js with the unit tags of
``tests/cucumber/unit.tags``. The same Gherkin (same testing commit) is the py-algorand-sdk
behave corpus, so one requirement can be compared across two frameworks.

This script does that offline-friendly part (unit scenarios only) and makes three changes
a new user of req2test makes:

- cucumber-js 12.9.0 instead of the project's cucumber 5 (its step files ``require
  ('cucumber')``, which 12.x names ``@cucumber/cucumber``); tsx runs the TypeScript sources;
- ``cucumber.json``: the default profile that runs the unit suite as ``make unit`` does
  (the step files, ``tsx/cjs``, the tag expression; the features are named on the command
  line, ``npx cucumber-js tests/cucumber/features/unit``);
- ``req2test.toml``: the project's req2test settings (framework, features, production,
  tags).

With ``--install`` it also runs ``npm install --ignore-scripts`` and adds what req2test
needs in a cucumber-js project (``CucumberJsFramework.runtime_packages()``: cucumber-js,
Stryker and its cucumber runner, pinned).

Usage:
    python scripts/corpora/js_algorand_sdk.py OUT [--install] [--sdk GIT] [--testing GIT]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from py_algorand_sdk import TESTING_COMMIT, checkout_with_features, default_source  # noqa: E402

SDK_COMMIT = "80252be98a883800377a92a41694ac1c1f1fd9bf"  # v3.5.2
STEPS = "tests/cucumber/steps"
FEATURES = "tests/cucumber/features"


def unit_tags(sdk: Path) -> list[str]:
    return [t.lstrip("@") for t in (sdk / "tests" / "cucumber" / "unit.tags").read_text().split()
            if t.startswith("@")]


def assemble(out: Path, sdk_source: str, testing_source: str, sdk_commit: str = SDK_COMMIT,
             testing_commit: str = TESTING_COMMIT) -> Path:
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{out} exists and is not empty")
    checkout_with_features(out, sdk_source, sdk_commit, testing_source, testing_commit, FEATURES)
    for name in ("index.js", "steps.js"):
        path = out / STEPS / name
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("require('cucumber')", "require('@cucumber/cucumber')"), encoding="utf-8")
    tags = unit_tags(out)
    # no "paths": cucumber-js 12 merges them with the CLI's, and req2test selects feature:line
    profile = {"default": {"require": [f"{STEPS}/index.js"],
                           "requireModule": ["tsx/cjs"], "tags": " or ".join(f"@{t}" for t in tags),
                           "format": []}}
    (out / "cucumber.json").write_text(json.dumps(profile, indent=2) + "\n", encoding="utf-8")
    # the project's cucumber 5 profile would be merged with ours; cucumber 12 reads cucumber.json
    (out / "tests" / "cucumber" / "cucumber.js").unlink(missing_ok=True)
    settings = ("[tool.req2test]\n"
                'framework = "cucumber-js"\n'
                f'features = "{FEATURES}"\n'
                'production = ["src"]\n'
                "tags = [" + ", ".join(f'"{t}"' for t in tags) + "]\n")
    (out / "req2test.toml").write_text(settings, encoding="utf-8")
    return out


def install(out: Path) -> None:
    """The project's own packages, then req2test's pinned runner packages as dev dependencies."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
    from bench.frameworks.cucumber_js.framework import CucumberJsFramework

    subprocess.run(["npm", "uninstall", "--ignore-scripts", "--no-audit", "--no-fund", "cucumber"], cwd=out,
                   check=True, capture_output=True)
    subprocess.run(["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", "--save-dev", "--save-exact",
                    *CucumberJsFramework().runtime_packages()], cwd=out, check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--install", action="store_true", help="also npm install the packages")
    parser.add_argument("--sdk", default=default_source("js-algorand-sdk"))
    parser.add_argument("--testing", default=default_source("algorand-sdk-testing"))
    parser.add_argument("--sdk-commit", default=SDK_COMMIT)
    parser.add_argument("--testing-commit", default=TESTING_COMMIT)
    args = parser.parse_args()
    try:
        path = assemble(args.out, args.sdk, args.testing, args.sdk_commit, args.testing_commit)
        if args.install:
            install(path)
    except subprocess.CalledProcessError as exc:
        sys.exit(f"failed: {' '.join(map(str, exc.cmd))}\n{(exc.stderr or b'').decode(errors='replace')[-800:]}")
    print(path)


if __name__ == "__main__":
    main()
