"""Compare two calibration (or evaluation) directories arm by arm: every results.jsonl record
field by field, timings (any "seconds" or "*_seconds" key, at any depth) left out.

Usage:
    python scripts/compare_runs.py OLD_DIR NEW_DIR     # prints each differing record, then the count
"""
import json
import sys
from pathlib import Path

MEAS = {"evaluation_seconds", "created"}
def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in MEAS and k != "seconds" and not k.endswith("_seconds")}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v
def load(d):
    out = {}
    for arm in sorted(p.name for p in Path(d).iterdir() if (p / "results.jsonl").is_file()):
        rows = {}
        for line in (Path(d) / arm / "results.jsonl").read_text().splitlines():
            r = json.loads(line)
            rows[r["instance_id"]] = strip(r)
        out[arm] = rows
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
diffs = 0
for arm in sorted(set(a) | set(b)):
    ra, rb = a.get(arm, {}), b.get(arm, {})
    for i in sorted(set(ra) | set(rb)):
        x, y = ra.get(i), rb.get(i)
        if x != y:
            diffs += 1
            keys = sorted(k for k in set(x or {}) | set(y or {}) if (x or {}).get(k) != (y or {}).get(k))
            print(arm, i, {k: ((x or {}).get(k), (y or {}).get(k)) for k in keys[:6]})
    print(arm, len(ra), "vs", len(rb))
print("differences:", diffs)
sys.exit(1 if diffs else 0)
