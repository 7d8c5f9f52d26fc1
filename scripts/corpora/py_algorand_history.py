"""Compose py-algorand-sdk's history with its Gherkin into one git history, for takeover targets.

py-algorand-sdk keeps its step definitions and production code; its feature files live in
algorand-sdk-testing, which its test harness copies into ``tests/features`` from the testing
repository's master (``.test-env``: SDK_TESTING_BRANCH="master"). So the requirement state at an
SDK commit is the testing repository's master *as of that commit* (its newest commit no later
than the SDK commit's committer date), restricted to what the SDK holds itself to: the feature
files with a scenario or feature tag from the SDK commit's ``tests/unit.tags`` (the same
unit-only selection as ``py_algorand_sdk.py``: no test network here).

This script writes one commit per first-parent SDK commit since ``--since``: the SDK tree,
those feature files in ``tests/features``, the mock status seed and the ``[tool.req2test]``
settings of ``py_algorand_sdk.py`` (tags from that commit's unit.tags). Message, author and
dates are the SDK commit's, plus a trailer naming both source commits. A scenario the SDK starts
running (its tag added to unit.tags) thus appears as an added atom in the SDK commit that
enabled it, which is what ``req2test takeover`` looks for:

    python scripts/corpora/py_algorand_history.py OUT [--since 2022-08-01]
    req2test takeover OUT -o TAKEOVER --features tests/features --production algosdk --select 4
"""

from __future__ import annotations

import argparse
import bisect
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from py_algorand_sdk import default_source

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
from bench.history.trees import write_tree

TAG = re.compile(r"@([\w.:-]+)")
SKIPPED = ("docs", ".github", ".circleci")


def _git(repo: Path | str, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}).stdout


def _mirror(source: str, dest: Path) -> Path:
    """A local bare copy: the sources may be URLs or mirrors."""
    subprocess.run(["git", "clone", "-q", "--bare", source, str(dest)], check=True)
    return dest


def _testing_at(testing: Path) -> tuple[list[int], list[str]]:
    """The testing repository's first-parent master chain as (committer times, shas), oldest first."""
    rows = [line.split() for line in _git(testing, "log", "--first-parent", "--format=%ct %H", "master")
            .splitlines()]
    rows.reverse()
    return [int(t) for t, _ in rows], [sha for _, sha in rows]


def unit_tags(text: str) -> set[str]:
    return {token.lstrip("@") for token in text.split() if token.startswith("@")}


def selected(feature_text: str, tags: set[str]) -> bool:
    """A feature file with any tag (feature or scenario level) among the SDK's unit tags."""
    return any(m.group(1) in tags for line in feature_text.splitlines() if line.strip().startswith("@")
               for m in TAG.finditer(line))


def compose(out: Path, sdk_source: str, testing_source: str, since: str) -> int:
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{out} exists and is not empty")
    out.mkdir(parents=True, exist_ok=True)
    _git(out, "init", "-q", "-b", "main")
    with tempfile.TemporaryDirectory(prefix="compose-") as tmp:
        sdk = _mirror(sdk_source, Path(tmp) / "sdk.git")
        testing = _mirror(testing_source, Path(tmp) / "testing.git")
        times, shas = _testing_at(testing)
        commits = [line.split() for line in _git(sdk, "log", "--first-parent", "--reverse", f"--since={since}",
                                                  "--format=%H %ct", "HEAD").splitlines()]
        for number, (sha, ctime) in enumerate(commits, 1):
            index = bisect.bisect_right(times, int(ctime)) - 1
            if index < 0:
                continue
            testing_sha = shas[index]
            tree = Path(tmp) / "tree"
            shutil.rmtree(tree, ignore_errors=True)
            write_tree(sdk, sha, tree, SKIPPED)
            tags_file = tree / "tests" / "unit.tags"
            tags = unit_tags(tags_file.read_text()) if tags_file.is_file() else set()
            features_tree = Path(tmp) / "features"
            shutil.rmtree(features_tree, ignore_errors=True)
            write_tree(testing, testing_sha, features_tree)
            source = features_tree / "features"
            target = tree / "tests" / "features"
            for path in sorted(source.rglob("*")):
                if not path.is_file():
                    continue
                rel = path.relative_to(source)
                if path.suffix == ".feature" and not selected(path.read_text(errors="replace"), tags):
                    continue
                (target / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target / rel)
            (target / "resources").mkdir(parents=True, exist_ok=True)
            (target / "resources" / "mock_response_status").write_text("200", encoding="utf-8")
            pyproject = tree / "pyproject.toml"
            settings = ("\n[tool.req2test]\n"
                        'features = "tests"\n'
                        'python_path = ["."]\n'
                        'production = ["algosdk"]\n'
                        'test_dependencies = ["glom>=20.11", "pytest"]\n'
                        "tags = [" + ", ".join(f'"{t}"' for t in sorted(tags)) + "]\n")
            with pyproject.open("a", encoding="utf-8") as fh:
                fh.write(settings)
            # the composed tree replaces the previous one wholesale
            for entry in out.iterdir():
                if entry.name != ".git":
                    shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
            for entry in tree.iterdir():
                shutil.move(str(entry), out / entry.name)
            meta = _git(sdk, "log", "-1", "--format=%an%x00%ae%x00%aI%x00%cI", sha).strip().split("\x00")
            message = _git(sdk, "log", "-1", "--format=%B", sha).strip()
            message += f"\n\npy-algorand-sdk: {sha}\nalgorand-sdk-testing: {testing_sha}\n"
            env = {"GIT_AUTHOR_NAME": meta[0], "GIT_AUTHOR_EMAIL": meta[1], "GIT_AUTHOR_DATE": meta[2],
                   "GIT_COMMITTER_NAME": meta[0], "GIT_COMMITTER_EMAIL": meta[1], "GIT_COMMITTER_DATE": meta[3]}
            _git(out, "add", "-A", "--force")
            subprocess.run(["git", "-C", str(out), "commit", "-q", "--allow-empty", "--no-verify", "-F", "-"],
                           input=message, text=True, check=True, capture_output=True, env={**os.environ, **env})
            if number % 20 == 0:
                print(f"{number}/{len(commits)} commits", file=sys.stderr)
    return len(commits)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--sdk", default=default_source("py-algorand-sdk"))
    parser.add_argument("--testing", default=default_source("algorand-sdk-testing"))
    parser.add_argument("--since", default="2022-08-01", help="first SDK commit date (git --since)")
    args = parser.parse_args()
    try:
        count = compose(args.out, args.sdk, args.testing, args.since)
    except subprocess.CalledProcessError as exc:
        sys.exit(f"git failed: {' '.join(map(str, exc.cmd))}: {exc.stderr.strip()[:300] if exc.stderr else ''}")
    print(f"{args.out}: {count} commits")


if __name__ == "__main__":
    main()
