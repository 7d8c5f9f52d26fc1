"""Assemble the coddy-agent Godog corpus at a pinned commit: one of the paper's eight projects.

coddy-agent (github coddy-project/coddy-agent, module github.com/EvilFreelancer/coddy-agent)
keeps its Gherkin in ``features/`` (36 files) and runs each feature from a plain Go test of the
package it exercises, godog v0.15.1 in its documented ``TestingT`` style::

    func TestConfigToolsFeature(t *testing.T) {
        suite := godog.TestSuite{
            Name: "config-tools", ScenarioInitializer: initializeConfigToolsScenario,
            Options: &godog.Options{Format: "pretty", Paths: []string{"../../features/config_tools.feature"},
                                    TestingT: t, Strict: true},
        }
        ...

38 such suites in nine packages (``internal/tools``, ``external/httpserver``, ...), the ones of
``external/`` behind build tags (``//go:build http``, ``cli``), some restricted by ``Options.Tags``
(``@acp``, ``@http``, ``@openai``). Their fakes are in-process (``httptest``, temporary git
repositories, shell commands). req2test finds the suites by reading the test files
(``bench.frameworks.godog.suites``); the project is used exactly as it is, only req2test.toml
is added: production = the module's packages, and the ``ui`` build tag is skipped (it embeds an
npm build the repository does not hold; no suite needs it).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["assemble", "default_source", "main"]

COMMIT = "aaaea77a9bac7a149c357a178ebbcebc6352adcc"  # main, 2026-08-18 (PR #119 merged)
MIRROR = Path("/work/.mirror/coddy-project+coddy-agent/repo")
PRODUCTION = ["cmd", "external", "internal"]
SETTINGS = ("[tool.req2test]\n"
            'framework = "godog"\n'
            'features = "features"\n'
            "production = [" + ", ".join(f'"{p}"' for p in PRODUCTION) + "]\n"
            'skip_build_tags = ["ui"]  # the embedded web UI needs an npm build\n')


def default_source() -> str:
    return str(MIRROR) if MIRROR.is_dir() else "https://github.com/coddy-project/coddy-agent"


def assemble(out: Path, source: str, commit: str = COMMIT) -> Path:
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{out} exists and is not empty")
    subprocess.run(["git", "clone", "-q", "--no-checkout", source, str(out)], check=True)
    subprocess.run(["git", "-C", str(out), "-c", "advice.detachedHead=false", "checkout", "-q", commit], check=True)
    shutil.rmtree(out / ".git")
    (out / "req2test.toml").write_text(SETTINGS, encoding="utf-8")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--source", default=default_source())
    parser.add_argument("--commit", default=COMMIT)
    args = parser.parse_args()
    try:
        print(assemble(args.out, args.source, args.commit))
    except subprocess.CalledProcessError as exc:
        sys.exit(f"git failed: {' '.join(map(str, exc.cmd))}")


if __name__ == "__main__":
    main()
