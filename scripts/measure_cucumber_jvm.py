"""Measure Cucumber-JVM runs on an assembled java-algorand-sdk corpus (issue 29's figures).

    python scripts/corpora/java_algorand_sdk.py /tmp/jsdk
    python scripts/measure_cucumber_jvm.py /tmp/jsdk OUT [--minutes 40] [--paired 15] [--limit N]

Stages, one JVM at a time (the machine's other work is not disturbed by parallel JVMs):
``mvn test-compile`` and the classpath (timed), a static AppCDS archive from one training run,
the whole unit suite in one JVM (the developers' ``make unit`` without Maven), then
``--paired`` scenarios drawn at random (seed 29) each run three ways back to back (plain JVM,
AppCDS, AppCDS + JaCoCo with the XML report), then every other selected scenario alone with
AppCDS until ``--minutes`` have passed. One JSON line per run in ``OUT/results.jsonl``
(wall and CPU seconds: CPU is what a busy machine does not inflate); a summary at the end.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "scripts" / "corpora"))

import java_algorand_sdk as corpus

from bench.frameworks.cucumber_jvm import toolchain as tc
from bench.frameworks.cucumber_jvm.jacoco import report
from bench.frameworks.cucumber_jvm.pickles import suite_pickles
from bench.frameworks.cucumber_jvm.runner import Jacoco, Suite, create_archive, run_scenario


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("project", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--minutes", type=float, default=40.0)
    parser.add_argument("--paired", type=int, default=15)
    parser.add_argument("--limit", type=int, default=0, help="at most this many scenarios alone (0: all)")
    args = parser.parse_args()
    deadline = time.time() + args.minutes * 60
    root, out = args.project.resolve(), args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    sink = (out / "results.jsonl").open("a", encoding="utf-8")

    def record(**row: object) -> None:
        sink.write(json.dumps(row) + "\n")
        sink.flush()

    toolchain = tc.JavaToolchain.find()
    compiled = tc.compile_tests(root, toolchain)
    record(stage="test-compile", ok=compiled.ok, seconds=compiled.seconds)
    if not compiled.ok:
        sys.exit(compiled.output)
    resolved, dependencies = tc.build_classpath(root, out / "classpath.txt", toolchain)
    record(stage="classpath", ok=resolved.ok, seconds=resolved.seconds, jars=len(dependencies))
    agent, cli = tc.jacoco_jars(toolchain)
    tags = corpus.unit_tags(root)
    suite = Suite(root=root, classpath=tuple(tc.runtime_classpath(root, dependencies)), glue=tuple(corpus.GLUE),
                  tags=tuple(tags))
    pickles = suite_pickles(root, corpus.FEATURES, tags)
    record(stage="pickles", count=len(pickles), outline_rows=sum(p.outline_row for p in pickles))
    first = next(p for p in pickles if p.outline_row)
    archive = create_archive(suite, dependencies, first.feature, first.line, out / "cds")
    record(stage="archive", ok=archive.archive is not None, seconds=archive.seconds, classes=archive.classes,
           problem=archive.problem)
    whole = run_scenario(suite, corpus.FEATURES, 0, out / "whole", archive=archive.archive, timeout=3600)
    record(stage="whole", exit=whole.exit_code, elapsed=whole.elapsed, cpu=whole.cpu, scenarios=len(whole.report.scenarios),
           statuses={f"{s.uri}:{s.line}": s.status for s in whole.report.scenarios})
    order = pickles[:]
    random.Random(29).shuffle(order)
    if args.limit:
        order = order[:args.limit]

    def one(index: int, mode: str, **options: object) -> dict:
        pickle = order[index]
        run_dir = out / "runs" / f"{Path(pickle.feature).stem}_{pickle.line}_{mode}"
        run = run_scenario(suite, pickle.feature, pickle.line, run_dir, **options)  # type: ignore[arg-type]
        scenario = run.scenario
        row = {"stage": "alone", "mode": mode, "feature": pickle.feature, "line": pickle.line, "passed": run.passed,
               "exit": run.exit_code, "elapsed": run.elapsed, "cpu": run.cpu,
               "status": scenario.status if scenario else None, "reported": len(run.report.scenarios),
               "problem": run.report.problem,
               "failed": [(s.text[:120], s.status, s.error[:600]) for s in (scenario.steps if scenario else ())
                          if s.status not in ("passed", "skipped")]}
        if run.exec_file is not None:
            xml = report(toolchain.java, cli, run.exec_file, root / "target" / "classes", root / "src" / "main" / "java",
                         run_dir / "jacoco.xml")
            row.update(report_seconds=xml.seconds, report_problem=xml.problem,
                       covered_lines=sum(len(v) for v in xml.coverage.covered.values()) if xml.coverage else None)
        record(**row)
        return row

    rows: list[dict] = []
    jacoco = Jacoco(agent, (corpus.PRODUCTION_PACKAGE,))
    for index in range(min(args.paired, len(order))):
        rows.append(one(index, "plain"))
        rows.append(one(index, "cds", archive=archive.archive))
        rows.append(one(index, "cds_jacoco", archive=archive.archive, jacoco=jacoco))
    for index in range(min(args.paired, len(order)), len(order)):
        if time.time() > deadline:
            break
        rows.append(one(index, "cds", archive=archive.archive))
    summary: dict[str, object] = {}
    for mode in ("plain", "cds", "cds_jacoco"):
        mine = [r for r in rows if r["mode"] == mode]
        if mine:
            summary[mode] = {"runs": len(mine), "passed": sum(bool(r["passed"]) for r in mine),
                             "median_wall": statistics.median(float(r["elapsed"]) for r in mine),
                             "median_cpu": statistics.median(float(r["cpu"]) for r in mine)}
    record(stage="summary", **summary)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
