"""Every instance's ground-truth test inside its target-hidden view, in the bwrap sandbox.

Prints how many do not pass and how many fail with "implementation hidden", whether the
all-hidden view imports and initializes behave, and view build times from an empty cache
and from the warm cache (medians, measured in the same run).

Usage:
    python benchmarks/views_check.py DATASET_DIR [--limit N] [--sandbox default]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bench.dataset import load_dataset
from harness.sandbox.policy import load_policy
from harness.viewcheck import check_views, timed_view_builds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--limit", type=int, default=0, help="first N instances only (0: all)")
    parser.add_argument("--sandbox", default="default")
    args = parser.parse_args()
    ds = load_dataset(args.dataset)
    ids = [inst.id for inst in ds.instances][: args.limit or None]
    sample = ids[:: max(1, len(ids) // 20)]
    cold, warm = timed_view_builds(ds, sample, "th")
    cold_median, warm_median = statistics.median(cold), statistics.median(warm)
    print(f"th view build over {len(sample)} instances: empty cache median {cold_median:.3f} s, "
          f"warm cache median {warm_median:.3f} s ({cold_median / warm_median:.0f}x)")
    # the all-hidden view is the same for every instance of a project: built once, then cached
    cold, warm = timed_view_builds(ds, sample, "ah")
    print(f"ah view build: first {cold[0]:.3f} s from an empty cache, then median {statistics.median(warm):.3f} s")
    started = time.perf_counter()

    def progress(done: int, total: int) -> None:
        if done % 20 == 0 or done == total:
            print(f"  {done}/{total} ({time.perf_counter() - started:.0f} s)", flush=True)

    summary = check_views(ds, load_policy(args.sandbox), ids, progress)
    print(f"\n{summary.instances} instances: ground truth does not pass in {summary.not_passing}, "
          f"fails with 'implementation hidden' in {summary.failing_with_hidden_message}")
    print(f"all-hidden view: package imports {summary.ah_imports}, behave initializes {summary.ah_behave_initializes}, "
          f"{summary.ah_kept_import_time} import-time bodies kept")
    for check in summary.exceptions:
        print("EXCEPTION", check.instance_id, "passed" if check.passed_in_view else "no hidden message",
              check.tail.replace("\n", " | ")[-300:])
    sys.exit(1 if summary.exceptions or not summary.ah_imports else 0)


if __name__ == "__main__":
    main()
