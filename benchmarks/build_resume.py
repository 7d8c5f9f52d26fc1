"""What resuming an interrupted godog or Cucumber-JVM build saves: the stages before the mutant
stage (prepare, isolation, validation) of a fresh build (baseline) against the same stages of
the same command after that build was interrupted, which replays the kept isolation and
validation runs (``bench.builder.run_memo``) instead of starting their processes and compiling
their workspaces again. Both builds are stopped as the mutant stage begins, as Ctrl-C would.

It also checks that the resumed build started no isolation or validation run of its own: every
run it needed was replayed, so it saw exactly what the first build saw.

Usage:
    python benchmarks/build_resume.py tests/javashop
    python benchmarks/build_resume.py tests/godogshop --workers 2
    python benchmarks/build_resume.py CORPUS --name N --output DS   # `req2test build CORPUS -o DS --name N` resumes
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bench.builder.pipeline import BuildOptions, build_dataset


class _StopAtMutantStage:
    """A display that ends the build as its mutant stage begins and times what came before."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.seconds = 0.0
        self.lines: list[str] = []

    def stage(self, name: str, total: int | None = None) -> None:
        if name.startswith("mutant runs"):
            self.seconds = time.perf_counter() - self.started
            raise KeyboardInterrupt

    def advance(self, n: int = 1) -> None:
        pass

    def log(self, line: str) -> None:
        self.lines.append(line)


def _until_mutants(project: Path, out: Path, options: BuildOptions) -> tuple[float, list[str]]:
    display = _StopAtMutantStage()
    try:
        build_dataset(str(project), out, options, progress=display)
    except KeyboardInterrupt:
        pass
    else:
        raise SystemExit(f"{project}: the build has no mutant stage (no instance with mutants?)")
    return display.seconds, display.lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("project", type=Path)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3, help="as `req2test build --runs` (the same default)")
    parser.add_argument("--name", default=None, help="as `req2test build --name`: a real build resuming from "
                                                     "--output must use the same name, runs and timeout")
    parser.add_argument("--output", type=Path, default=None,
                        help="the build's output directory, kept afterwards: the real build resumes from its "
                             "checkpoint (default: a scratch directory, removed)")
    args = parser.parse_args()
    if not args.project.is_dir():
        print(f"error: {args.project} is not a project directory", file=sys.stderr)
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="req2test-resume-bench-"))
    try:
        out = args.output or scratch / "dataset"
        kept = out / ".req2test-checkpoint" / "stage-runs"
        options = BuildOptions(workers=args.workers, runs=args.runs, name=args.name)
        fresh, _ = _until_mutants(args.project, out, options)
        kept_after_fresh = len(list(kept.glob("*.pickle")))
        resumed, lines = _until_mutants(args.project, out, options)
        kept_after_resume = len(list(kept.glob("*.pickle")))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    replayed = next((line for line in lines if line.startswith("resumed ")), "resumed nothing")
    print(f"== {args.project}: the stages before the mutant stage, fresh vs resumed (--workers {args.workers})")
    print(f"fresh build    : {fresh:8.1f} s   ({kept_after_fresh} isolation/validation runs kept)")
    print(f"resumed build  : {resumed:8.1f} s   ({replayed})")
    print(f"ratio          : {fresh / max(resumed, 1e-9):8.1f}x")
    same = kept_after_resume == kept_after_fresh and f"resumed {kept_after_fresh} " in replayed
    print(f"the resumed build ran no isolation/validation process of its own: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
