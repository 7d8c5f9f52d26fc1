"""What a Cucumber-JVM run and a test-side compile cost, and what req2test's two remedies buy,
each against its baseline measured in the same run (interleaved, so load falls on both alike):

1. compiling the glue of a workspace: a cold ``javac`` process per compile (baseline) against
   the warm javac server (``javac_server``) req2test's builder uses;
2. one scenario per JVM: a plain JVM (baseline) against the AppCDS archive of the JDK's and the
   dependencies' classes (``runner.create_archive``); CPU seconds (user+system of the JVM), which
   a busy machine inflates less than wall time.

Usage (a java-algorand-sdk corpus assembled as docs/corpora.md says):
    python benchmarks/java_runs.py /work/corpora/java-algorand-sdk --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bench.frameworks.cucumber_jvm.javac_server import BASE_ARGS, JavacPool
from bench.frameworks.cucumber_jvm.pickles import suite_pickles
from bench.frameworks.cucumber_jvm.runner import create_archive, run_scenario
from bench.frameworks.cucumber_jvm.settings import read_settings
from bench.frameworks.cucumber_jvm.toolchain import JavaToolchain
from bench.frameworks.cucumber_jvm.workspace import compile_variant, prepare


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("project", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    settings = read_settings(args.project)
    toolchain = JavaToolchain.find()
    with tempfile.TemporaryDirectory(prefix="req2test-java-bench-") as tmp_name:
        tmp = Path(tmp_name)
        project = prepare(args.project, settings, toolchain, tmp / "prepare")
        pickles = suite_pickles(args.project, settings.features, list(settings.tags))
        sample = [pickles[i * len(pickles) // args.repeat] for i in range(args.repeat)]

        cold, warm = [], []
        with JavacPool(toolchain.java) as javac:
            compile_variant(project, {}, tmp / "warmup", javac)  # the server's first compile warms it up
            for n in range(args.repeat):
                variant = compile_variant(project, {}, tmp / f"warm-{n}", javac)
                assert variant.compile.ok, variant.compile.output
                warm.append(variant.compile.seconds)
                argfile = tmp / f"warm-{n}" / "sources.txt"
                out = tmp / f"cold-{n}"
                out.mkdir()
                start = time.perf_counter()
                proc = subprocess.run(["javac", *BASE_ARGS, "-d", str(out), "-cp",
                                       ":".join([*project.dependencies, str(project.classes)]),
                                       "-sourcepath", str(tmp / f"warm-{n}" / "src"), "-implicit:class",
                                       f"@{argfile}"], capture_output=True, check=False)
                cold.append(time.perf_counter() - start)
                assert proc.returncode == 0, proc.stderr[-400:]
        print(f"glue compile, {args.repeat} compiles: cold javac median {statistics.median(cold):.2f} s, "
              f"warm server {statistics.median(warm):.2f} s: {statistics.median(cold) / statistics.median(warm):.1f}x")

        suite = project.suite()
        archived = create_archive(suite, list(project.dependencies), sample[0].feature, sample[0].line, tmp / "cds")
        assert archived.archive is not None, archived.problem
        print(f"AppCDS archive: {archived.classes} classes listed, made in {archived.seconds:.1f} s")
        plain, shared = [], []
        for n, pickle in enumerate(sample):
            a = run_scenario(suite, pickle.feature, pickle.line, tmp / f"plain-{n}")
            b = run_scenario(suite, pickle.feature, pickle.line, tmp / f"cds-{n}", archive=archived.archive)
            assert a.passed == b.passed, (a.output[-300:], b.output[-300:])
            plain.append(a.cpu)
            shared.append(b.cpu)
        print(f"scenario JVM, {len(sample)} scenarios: plain median {statistics.median(plain):.2f} s CPU, "
              f"AppCDS {statistics.median(shared):.2f} s CPU: {statistics.median(plain) / statistics.median(shared):.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
