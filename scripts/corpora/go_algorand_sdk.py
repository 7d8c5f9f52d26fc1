"""Assemble the go-algorand-sdk Godog corpus at pinned commits.

go-algorand-sdk v2.12.0 keeps its step definitions in ``test/`` (package ``test``:
``steps_test.go`` and six more ``*_test.go`` files registering steps with
``s.Step(regexp, fn)``, plus ``helpers.go`` and ``utilities.go``) and gets its Gherkin from
algorand-sdk-testing, whose ``features/`` its ``test-harness.sh`` copies into
``test/features`` (``cp -r features/* test/features``); ``make unit`` then runs, in ``test/``,

    go test -timeout 0s --godog.strict=true --godog.format=pretty \\
        --godog.tags=@unit.abijson,@unit.abijson.byname,... --test.v .

(the Makefile's ``awk '{print $2}'`` is make-expanded to ``awk '{print }'``: the tags are the
whole lines of ``test/unit.tags`` joined with commas, godog's "or"). ``TestMain`` binds
godog's options to the ``godog.`` flags and takes the remaining arguments as feature paths
(``opt.Paths = flag.Args()``). This script does the offline-friendly part (unit scenarios
only; the mocks are in-process ``httptest`` servers) and adds ``req2test.toml``:

    [tool.req2test]
    framework = "godog"
    features = "test/features"
    package = "test"              # the Go package whose test binary runs the scenarios
    production = [...]            # the SDK's non-test packages (directories)
    tags = [...]                  # the unit tags of test/unit.tags, any of them selects

The testing commit is 7c67284 (2026-07-14, "remove dryrun"), algorand-sdk-testing's master
head when v2.12.0 was released (2026-08-19; ``.test-env`` names branch ``master``); the SDK
removed its own dryrun support in the same release (dd0c652, eb2de73), so the pair matches.

Usage:
    python scripts/corpora/go_algorand_sdk.py OUT [--sdk GIT] [--testing GIT]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from py_algorand_sdk import checkout_with_features, corpus_main, default_source

__all__ = ["assemble", "default_source", "main", "unit_tags"]  # the tests assemble through this module

SDK_COMMIT = "c91d55b8c1a3b364b3cf61c52972ca549682377f"  # v2.12.0
TESTING_COMMIT = "7c67284b52675257e66c017cc3606bcd4803f4c6"  # master at the release: dryrun removed
TEST_PACKAGE = "test"
FEATURES = "test/features"
# the SDK's importable packages (go list ./... minus test/ and the examples): every directory
# here holds non-test Go files the step files reach
PRODUCTION = ["abi", "auction", "client", "crypto", "encoding", "logic", "mnemonic", "protocol",
              "transaction", "types"]


def unit_tags(sdk: Path) -> list[str]:
    return [t.lstrip("@") for t in (sdk / TEST_PACKAGE / "unit.tags").read_text().split() if t.startswith("@")]


def assemble(out: Path, sdk_source: str, testing_source: str, sdk_commit: str = SDK_COMMIT,
             testing_commit: str = TESTING_COMMIT) -> Path:
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{out} exists and is not empty")
    checkout_with_features(out, sdk_source, sdk_commit, testing_source, testing_commit, FEATURES)
    missing = [p for p in PRODUCTION if not (out / p).is_dir()]
    if missing:
        raise SystemExit(f"production directories missing at {sdk_commit[:7]}: {', '.join(missing)}")
    tags = list(dict.fromkeys(unit_tags(out)))  # unit.tags lists @unit.responses.timestamp twice
    settings = ("[tool.req2test]\n"
                'framework = "godog"\n'
                f'features = "{FEATURES}"\n'
                f'package = "{TEST_PACKAGE}"\n'
                "production = [" + ", ".join(f'"{p}"' for p in PRODUCTION) + "]\n"
                "tags = [" + ", ".join(f'"{t}"' for t in tags) + "]\n")
    (out / "req2test.toml").write_text(settings, encoding="utf-8")
    return out


def main() -> None:
    corpus_main(__doc__, assemble, "go-algorand-sdk", SDK_COMMIT, TESTING_COMMIT)


if __name__ == "__main__":
    main()
