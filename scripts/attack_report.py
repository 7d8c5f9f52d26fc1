"""Evaluate every attack of tests/adversarial/attacks.py and print what it achieves.

    python scripts/attack_report.py                       # all attacks, markdown table on stdout
    python scripts/attack_report.py -o /tmp/attack_report_before.md
    python scripts/attack_report.py step_run_patch daemon # some attacks only
    python scripts/attack_report.py --src /tmp/r2t-head/src   # another checkout's evaluator, e.g.
                                                          # `git archive HEAD src | tar -x -C /tmp/r2t-head`

Each attack is evaluated with ``bench.evaluate.evaluate`` in its own run directory
(workers=1, timeout 20 s): its target instance(s), then its companion instance(s) with their
oracle prediction. Datasets are built once, as tests/conftest.py builds them: minicalc into
/tmp/adv-mini, the tinyshop example into /tmp/adv-shop (only when a selected attack needs it).
The last column says whether the result already meets the attack's NEW expectation.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
if "--src" in sys.argv[:-1]:  # before anything imports bench: evaluate with that checkout's bench package
    sys.path.insert(0, str(Path(sys.argv[sys.argv.index("--src") + 1]).resolve()))

from tests.adversarial.attacks import ATTACKS, CLASSES, Attack, AttackRun, oracle_files, run_attack, violations

DATASETS = {"mini": Path("/tmp/adv-mini"), "shop": Path("/tmp/adv-shop")}


def build(kind: str) -> Path:
    from tests.conftest import EXAMPLE, MINI_FILES, write_project

    from bench.builder.pipeline import BuildOptions, build_dataset

    out = DATASETS[kind]
    if (out / "dataset.json").is_file():
        return out
    source = Path(f"{out}-src")
    shutil.rmtree(source, ignore_errors=True)
    if kind == "mini":
        project = write_project(source / "minicalc", MINI_FILES)
        build_dataset(str(project), out, BuildOptions(workers=2, timeout=30))
    else:
        source.mkdir(parents=True)
        shutil.copytree(EXAMPLE, source / "tinyshop")
        build_dataset(str(source / "tinyshop"), out, BuildOptions(workers=2, timeout=60))
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").replace("\r", " ")


def row(attack: Attack, run: AttackRun) -> list[str]:
    target = run.target(attack)
    outcome = target["outcome"] if target else "—"
    kill_complete = str(target.get("kill_complete")) if target else "—"
    notes = []
    if run.error:
        notes.append(f"RUN ABORTED: {run.error}" + (" (again on resume)" if run.resume_error else ""))
    if target:
        if target.get("detail"):
            notes.append(target["detail"][:110])
        if target.get("mutant_recall") is not None and target["outcome"] == "pass":
            notes.append(f"recall {target['mutant_recall']:.2f} ({target.get('generated_kills')}/"
                         f"{target.get('ground_truth_kills')})")
    for other in attack.targets[1:]:
        record = run.results.get(other)
        notes.append(f"{other.split('/')[-1]}: " + (f"{record['outcome']} kc={record.get('kill_complete')}"
                                                    if record else "no result"))
    for companion in attack.companions:
        record = run.results.get(companion)
        notes.append(f"next ({companion.split('/')[-1]}): " +
                     (f"{record['outcome']} kc={record.get('kill_complete')}"
                      + (f" [{record['detail'][:60]}]" if record.get("detail") else "") if record else "no result"))
    notes.append(f"{run.seconds:.1f}s")
    problems = violations(attack, run)
    meets = "yes" if not problems else "no"
    return [attack.name, str(attack.klass), outcome, kill_complete, _cell("; ".join(notes)), meets]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="attacks to run (default: all)")
    parser.add_argument("-o", "--out", type=Path, help="also write the markdown table here")
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--keep", type=Path, help="keep the run directories here")
    parser.add_argument("--src", type=Path, help="the src/ directory whose bench package evaluates "
                                                 "(default: the installed one)")
    args = parser.parse_args()
    attacks = [a for a in ATTACKS if not args.names or a.name in args.names]
    unknown = set(args.names) - {a.name for a in attacks}
    if unknown:
        parser.error(f"unknown attack(s): {', '.join(sorted(unknown))}")
    datasets = {kind: build(kind) for kind in sorted({a.dataset for a in attacks})}
    oracles = {kind: oracle_files(path) for kind, path in datasets.items()}
    base = args.keep or Path(tempfile.mkdtemp(prefix="attack-report-"))
    import bench

    print(f"evaluator: {Path(bench.__file__).parent}", file=sys.stderr)
    header = ["attack", "class", "outcome", "kill_complete", "detail", "meets new expectation"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    print(lines[0], flush=True)
    print(lines[1], flush=True)
    started = time.monotonic()
    for attack in attacks:
        run = run_attack(attack, datasets[attack.dataset], base / attack.name, oracles[attack.dataset],
                         timeout=args.timeout)
        line = "| " + " | ".join(row(attack, run)) + " |"
        lines.append(line)
        print(line, flush=True)
    legend = ["", f"evaluator: {Path(bench.__file__).parent}",
              f"{len(attacks)} attacks, {time.monotonic() - started:.0f}s; classes: " +
              "; ".join(f"{k} {v}" for k, v in CLASSES.items()),
              ("kill_complete: of the attacked instance; 'next': the oracle prediction of the companion instance "
               "evaluated after the attack on the same worker.")]
    print("\n".join(legend))
    if args.out:
        args.out.write_text("\n".join(lines + legend) + "\n", encoding="utf-8")
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
