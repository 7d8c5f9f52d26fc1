"""Write a suite-mode experiment comparing the specification with the documentation ablation on a
built dataset, and the scripted provider the built-in agent is driven by offline.

    python scripts/documentation_ablation.py DATASET -o DIR [--suites N]
    req2test run DIR/experiment.yaml -o DIR/run

Arms: the developers' suite given the feature (oracle), the same given the documentation
(oracle-docs: it writes the developers' feature file as its own), steps that do nothing
(empty-docs), nothing (none-docs), and the built-in agent through the real openai client on the
loopback scripted provider (scripted-docs). The script answers a suite's documentation prompt
with the developers' *first* scenario of that feature as the agent's own, and its step files: a
partial suite, so validity and the mutation score are not trivially 0 or 1. Suites are the N with
the most requirement-targeted mutants (ties by id) whose documentation page no other chosen suite
shares (the script tells suites apart by their page).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import yaml

from bench.dataset import load_dataset
from bench.gherkin_reader import parse_feature
from bench.suite.authored import authored_dir, suite_documentation
from bench.suite.calibration import suite_calibration_files
from bench.suite.instances import suite_instances


def first_scenario_feature(text: str, feature_file: str) -> str:
    """The feature file cut down to its header, background and first scenario (verbatim)."""
    parsed = parse_feature(feature_file, text)
    if parsed.problem or not parsed.requirements:
        raise SystemExit(f"{feature_file}: {parsed.problem or 'no scenario'}")
    return parsed.requirements[0].gherkin + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("-o", "--out", type=Path, required=True)
    parser.add_argument("--suites", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2, help="evaluator workers")
    args = parser.parse_args(argv)
    dataset = load_dataset(args.dataset)
    gold = dataset.load_gold()
    chosen, pages = [], set()
    for suite in sorted(suite_instances(dataset), key=lambda s: (-len(s.targets), s.id)):
        page = suite_documentation(dataset, suite).text
        if suite.targets and page not in pages and len(chosen) < args.suites:
            chosen.append((suite, page))
            pages.add(page)
    turns = []
    for suite, page in chosen:
        project = dataset.project(suite.project)
        text = (dataset.root / project.snapshot / suite.feature_file).read_text(encoding="utf-8")
        files = dict(suite_calibration_files(dataset, suite, gold)["oracle"])
        own = f"{authored_dir(project.features_dir)}/{Path(suite.feature_file).stem}_own.feature"
        files[own] = first_scenario_feature(text, suite.feature_file)
        when = r"# Documentation\s+" + re.escape(page.strip())
        turns.append({"when": when, "cost": 0.02, "tool_calls": [
            {"name": "write_file", "arguments": {"path": p, "content": c}} for p, c in sorted(files.items())]})
        turns.append({"when": when + r"[\s\S]*" + re.escape(own), "cost": 0.01,
                      "tool_calls": [{"name": "submit", "arguments": {"summary": "one scenario"}}]})
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "script.yaml").write_text(yaml.safe_dump({"turns": turns}), encoding="utf-8")
    docs = {"specification": "documentation"}
    experiment = {"name": f"documentation-{dataset.card.name}", "dataset": str(args.dataset.resolve()),
                  "mode": "suite", "views": ["ah"], "instances": {"ids": [s.id for s, _ in chosen]},
                  "evaluation": {"workers": args.workers},
                  "provider": {"script": str((args.out / "script.yaml").resolve())},
                  "arms": [{"name": "oracle", "agent": "oracle"},
                           {"name": "oracle-docs", "agent": "oracle", **docs},
                           {"name": "empty-docs", "agent": "empty", **docs},
                           {"name": "none-docs", "agent": "none", **docs},
                           {"name": "scripted-docs", "agent": "builtin", "model": "openai/scripted", **docs}]}
    (args.out / "experiment.yaml").write_text(yaml.safe_dump(experiment, sort_keys=False), encoding="utf-8")
    for suite, page in chosen:
        print(f"{suite.id}: {len(suite.scenarios)} scenarios, {len(suite.targets)} targets, "
              f"{len(page.split())} words of documentation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
