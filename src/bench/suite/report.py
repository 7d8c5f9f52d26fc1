"""The suite-mode report: one row per configuration, then one row per suite of each.

Reads ``RUN/suites/<config>/`` (config.json, suite_summary.json, suite_results.jsonl) as
``req2test run`` writes them in ``mode: suite``.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.suite.evaluate import SuiteResult


def _fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def render_suite_report(suites_dir: Path, title: str) -> str:
    configs = sorted(p for p in suites_dir.iterdir() if (p / "suite_summary.json").is_file()) \
        if suites_dir.is_dir() else []
    lines = [f"# {title}", "",
             ("Validity: share of the feature's scenarios whose generated steps pass on the real code in every "
             "clean run (unimplemented scenarios count as failing). Mutation score: share of the "
             "requirement-targeted mutants that a valid scenario kills. ρ: Spearman between specification "
             "words and the per-suite score. Specification: the feature file, or its documentation (the "
             "ablation: the agent writes its own scenarios; validity is over those)."), "",
             ("| configuration | specification | suites | scenarios | validity (mean) | validity (pooled) | flaky | unimplemented "
             "| mutation score (mean) | mutation score (pooled) | targets | size ratio | ρ(length, mutation) "
             "| cost USD |"),
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    details: list[str] = []
    for directory in configs:
        summary = json.loads((directory / "suite_summary.json").read_text(encoding="utf-8"))
        name = summary.get("config", directory.name)
        lines.append(f"| {name} | {summary.get('specification', 'feature')} | {summary['suites']} | {summary['scenarios']} | {_fmt(summary['validity_mean'])} "
                     f"| {_fmt(summary['validity_pooled'])} | {summary['flaky']} | {summary['unimplemented']} "
                     f"| {_fmt(summary['mutation_score_mean'])} | {_fmt(summary['mutation_score_pooled'])} "
                     f"| {summary['targets']} | {_fmt(summary['size_ratio_mean'])} "
                     f"| {_fmt(summary['spearman_length_mutation']['rho'])} | {summary['cost_usd']:.4f} |")
        details += ["", f"## {name}", "",
                    ("| suite | words | scenarios | valid | flaky | unimplemented | targets killed | validity "
                    "| mutation score |"), "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for line in (directory / "suite_results.jsonl").read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            result = SuiteResult.model_validate_json(line)
            details.append(f"| {result.suite_id} | {result.specification_words} | {result.validity.generated} "
                           f"| {result.validity.valid} | {result.validity.flaky} | {len(result.unimplemented)} "
                           f"| {result.mutation.killed}/{result.mutation.targets} | {_fmt(result.validity.value)} "
                           f"| {_fmt(result.mutation.value)} |")
    if not configs:
        lines.append("| (no suite configuration finished) | | | | | | | | | | | | | |")
    reverse = sorted(p for p in suites_dir.iterdir() if (p / "reverse_summary.json").is_file()) \
        if suites_dir.is_dir() else []
    if reverse:
        lines = [lines[0], "", ("The reverse task: the feature's developer tests are given, the agent implements the "
                 "hidden production code. Score: share of the feature's scenarios whose developer steps pass on it "
                 "(every clean run agreeing)."), "",
                 ("| configuration | suites | scenarios | score (mean) | score (pooled) | suites all passing | flaky "
                 "| cost USD |"), "|---|---:|---:|---:|---:|---:|---:|---:|"]
        details = []
        for directory in reverse:
            summary = json.loads((directory / "reverse_summary.json").read_text(encoding="utf-8"))
            lines.append(f"| {summary.get('config', directory.name)} | {summary['suites']} | {summary['scenarios']} "
                         f"| {_fmt(summary['score_mean'])} | {_fmt(summary['score_pooled'])} "
                         f"| {summary['suites_all_passing']} | {summary['flaky']} | {summary['cost_usd']:.4f} |")
    return "\n".join(lines + details) + "\n"
