"""How long do `req2test --help` and `req2test --version` take? (issue 30: ≤ 0.5 s)

Prints, in one run on this machine, the median wall time of each over N runs of the installed
`req2test` entry point, beside two baselines measured in the same run:
- `python -c pass` (the interpreter's own start: the floor), and
- the eager CLI: every command's module imported before printing the help, as `req2test` did
  before its commands became lazy (`harness.cli.commands()` then `--help`).

Usage:
    python benchmarks/cli_startup.py            # 15 runs each
    python benchmarks/cli_startup.py --runs 40
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time

EAGER = ("import sys\nfrom harness.cli import app, commands, main\ncommands()\n"
         "sys.argv = ['req2test', '--help']\nmain()\n")


def _median_seconds(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    entry = shutil.which("req2test")
    if entry is None:
        sys.exit("req2test is not on PATH: pip install -e . first")
    # Interleaving would be fairer on a noisy machine; medians over many runs each are close enough
    # here, and every figure comes from this one run.
    cases = {
        "python -c pass (floor)": [sys.executable, "-c", "pass"],
        "eager CLI --help (before)": [sys.executable, "-c", EAGER],
        "req2test --help": [entry, "--help"],
        "req2test --version": [entry, "--version"],
        "python -m harness.cli --help": [sys.executable, "-m", "harness.cli", "--help"],
    }
    medians = {name: _median_seconds(argv, args.runs) for name, argv in cases.items()}
    eager = medians["eager CLI --help (before)"]
    print(f"{'case':34} {'median s':>9} {'vs eager':>9}")
    for name, seconds in medians.items():
        print(f"{name:34} {seconds:9.3f} {eager / seconds:8.1f}×")
    print(f"\n(the entry point {entry} may be a pyenv shim: its own start is part of what a user waits for)")


if __name__ == "__main__":
    main()
