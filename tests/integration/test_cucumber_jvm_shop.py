"""Cucumber-JVM end to end on a project written for it (``tests/javashop``: Kapua's layout in
miniature: a ``@setup`` scenario that opens the catalog every other scenario reads, a
``@teardown`` one that closes it, two scenarios and an outline of two rows), with mutants, then
calibrated in bubblewrap. Needs no fetched corpus: java, mvn (cucumber-java 6.11.0 from the
req2test Maven cache or Maven Central) and bwrap.

What it pins down beyond the java-algorand-sdk tests: **the companions' work is not the
scenario's**. The lines the setup/teardown scenarios run on their own (opening and filling the
catalog) are left out of the ground truth's covered lines, as the judge leaves them out of a
prediction's, so the empty test covers nothing (Kapua's empty arm scored 0.29 before).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench.builder.pipeline import BuildOptions, build_dataset
from bench.calibrate import calibration_predictions
from bench.dataset import load_dataset
from bench.evaluate import EvaluateOptions, evaluate
from bench.frameworks.cucumber_jvm import restored
from bench.mutation.executor import load_manifest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[1] / "javashop"
FEATURE = "src/test/resources/features/cart.feature"
CATALOG = "src/main/java/shop/Catalog.java"


def _lines(path: Path, *needles: str) -> set[int]:
    """The 1-based lines of ``path`` holding any of ``needles``."""
    return {n for n, text in enumerate(path.read_text().splitlines(), 1) if any(x in text for x in needles)}


@pytest.fixture(scope="module")
def shop_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("java") is None or shutil.which("mvn") is None or shutil.which("bwrap") is None:
        pytest.skip("needs java, mvn and bwrap")
    base = tmp_path_factory.mktemp("javashop")
    project = base / "javashop"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("target"))
    out = base / "dataset"
    build_dataset(str(project), out, BuildOptions(workers=2, runs=2))
    return out


def test_build_leaves_the_companions_work_out(shop_dataset: Path) -> None:
    dataset = load_dataset(shop_dataset)
    assert [i.id for i in dataset.instances] == [f"javashop/{FEATURE}:{n}" for n in (8, 13, 19)]
    assert {e.id.split(":")[-1]: e.reason for e in dataset.card.exclusions} == \
        {"5": "companion_scenario", "30": "companion_scenario"}
    # only the setup and teardown steps call these; every scenario's JVM runs them
    companions_only = _lines(PROJECT / CATALOG, "current = new Catalog()", "prices.put(", "current = null;")
    assert len(companions_only) == 3
    gold = dataset.load_gold()
    for instance in dataset.instances:
        record = gold[instance.id]
        covered = set(record.covered_lines[CATALOG])
        assert not covered & companions_only, (instance.id, sorted(covered))
        assert _lines(PROJECT / CATALOG, "if (current == null)") <= covered  # Catalog.current(), the scenario's own call
        assert record.kills, instance.id
        assert [s.qualname.split(".")[0] for s in record.step_definitions] == ["CartSteps"] * 3


def test_calibration_is_exact_and_the_empty_test_covers_nothing(shop_dataset: Path, tmp_path: Path) -> None:
    sets = calibration_predictions(shop_dataset, ("oracle", "empty"))
    rows = {}
    for name in ("oracle", "empty"):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(p.model_dump_json() + "\n" for p in sets[name]))
        summary = evaluate(shop_dataset, path, tmp_path / name,
                           EvaluateOptions(resamples=200, workers=2, isolation="bwrap"))
        assert summary["pass_at_1"]["value"] == 1.0, summary["outcomes"]
        rows[name] = [json.loads(line) for line in (tmp_path / name / "results.jsonl").read_text().splitlines()]
    assert len(rows["oracle"]) == 3
    for row in rows["oracle"]:
        assert row["kill_complete"] and row["coverage_jaccard"] == 1.0 and row["api_f1"] == 1.0, row
        assert row["confirmation"]["sandbox"] == "bwrap-no-proc", row["confirmation"]
    for row in rows["empty"]:
        assert row["outcome"] == "pass" and row["generated_kills"] == 0, row
        assert row["coverage_jaccard"] == 0.0, row  # was the companions' share before they were left out


def test_a_restore_that_leaves_proc_mounted_is_never_a_verdict(shop_dataset: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail-closed: if criu's action script did not take ``/proc`` away, the restored zygote
    refuses its command (no ``RESTORED`` marker) and every verdict run is made by a started JVM,
    with the same verdict (``restored.py``)."""
    if restored.criu_binary() is None:
        pytest.skip("needs criu 4.x (scripts/install-criu.sh)")
    monkeypatch.setattr(restored, "HIDE_PROC", "#!/bin/sh\nexit 0\n")  # /proc stays mounted
    oracle = calibration_predictions(shop_dataset, ("oracle",))["oracle"][0]
    path = tmp_path / "oracle.jsonl"
    path.write_text(oracle.model_dump_json() + "\n")
    evaluate(shop_dataset, path, tmp_path / "out", EvaluateOptions(instances=[oracle.instance_id], resamples=10,
                                                                   workers=1, isolation="bwrap"))
    row = json.loads((tmp_path / "out" / "results.jsonl").read_text().splitlines()[0])
    assert row["outcome"] == "pass" and row["kill_complete"], row
    confirmation = row["confirmation"]
    assert confirmation["restored_jvms"] == 0, confirmation
    assert confirmation["restore_failures"] == confirmation["jvms"] - 1, confirmation  # all but the traced run


class _StopInMutantRuns:
    """A display that raises KeyboardInterrupt when the mutant stage finishes its first instance
    (as Ctrl-C would arrive) and keeps the build's log lines."""

    def __init__(self, stop: bool) -> None:
        self.stop, self.stage_name, self.lines = stop, "", []

    def stage(self, name: str, total: int | None = None) -> None:
        self.stage_name = name

    def advance(self, n: int = 1) -> None:
        if self.stop and self.stage_name.startswith("mutant runs"):
            raise KeyboardInterrupt

    def log(self, line: str) -> None:
        self.lines.append(line)


def test_a_killed_build_resumes_without_running_its_scenarios_again(shop_dataset: Path, tmp_path: Path) -> None:
    """After a build died in its mutant stage, the same command replays the isolation and
    validation runs it had finished (``bench.builder.run_memo``) instead of starting a JVM for
    each again, and ends with the uninterrupted build's instances and gold."""
    project = tmp_path / "javashop"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("target"))
    out = tmp_path / "ds"
    with pytest.raises(KeyboardInterrupt):
        build_dataset(str(project), out, BuildOptions(workers=2, runs=2), progress=_StopInMutantRuns(stop=True))
    kept = list((out / ".req2test-checkpoint" / "stage-runs").glob("*.pickle"))
    # 3 instances x 2 repetitions (isolation) + positive and negative x 2 (validation), the outline's 2 rows each
    assert len(kept) == (3 + 1) * 2 * 3, len(kept)
    resumed = _StopInMutantRuns(stop=False)
    build_dataset(str(project), out, BuildOptions(workers=2, runs=2), progress=resumed)
    assert f"resumed {len(kept)} isolation/validation runs" in "\n".join(resumed.lines), resumed.lines
    assert not (out / ".req2test-checkpoint").exists()
    ours, reference = load_dataset(out), load_dataset(shop_dataset)
    assert [i.id for i in ours.instances] == [i.id for i in reference.instances]
    assert {i: (g.kills, g.covered_lines, g.pool) for i, g in ours.load_gold().items()} == \
        {i: (g.kills, g.covered_lines, g.pool) for i, g in reference.load_gold().items()}



HOOK = """package shop.steps;

import io.cucumber.java.After;
import shop.Cart;
import shop.Catalog;

/** Infrastructure every scenario but the companions runs after its steps: the empty test keeps
 * it (a Before hook's failure is a run in which no step ran, excluded from the kills). */
public class Hooks {
    @After("not @setup and not @teardown")
    public void aCartCountsWhatIsAdded() {
        Cart probe = new Cart(Catalog.current());
        probe.add("pen", 1);
        if (probe.count() != 1) {
            throw new IllegalStateException("the cart miscounts");
        }
    }
}
"""
CART = "src/main/java/shop/Cart.java"


def test_the_empty_test_runs_only_the_kills_its_own_runs_reach(tmp_path: Path) -> None:
    """The empty test runs a kill only in the rows whose traced run of the empty test reached the
    mutant's lines. A hook that every scenario runs after its steps (and the empty test keeps) reaches
    ``Cart.add``, ``count`` and ``Catalog.current``: their mutants are still found as infrastructure kills, while the kills in
    ``Cart.total`` and ``totalAfterDiscount``, which only the emptied step methods reach, are never
    run against the empty test."""
    project = tmp_path / "javashop"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("target"))
    (project / "src/test/java/shop/steps/Hooks.java").write_text(HOOK)
    out = tmp_path / "ds"
    build_dataset(str(project), out, BuildOptions(workers=2, runs=1))
    dataset = load_dataset(out)
    gold = dataset.load_gold()
    mutants = load_manifest(out, "javashop")
    source = (project / CART).read_text().splitlines()
    # 1-based lines: add and count (what the hook calls), then total and totalAfterDiscount
    hooked = set(range(source.index("    public void add(String item, int quantity) {") + 1,
                       source.index("    public int total() {") + 1))
    sums = set(range(source.index("    public int total() {") + 1, len(source) + 1))
    infrastructure = {m for record in gold.values() for m in record.infrastructure_kills}
    assert infrastructure, "the hook's mutants are the empty test's kills too"
    current = _lines(project / CATALOG, "if (current == null)")  # Catalog.current(), which the hook calls too
    assert all((mutants[m].file, mutants[m].line) in {(CART, n) for n in hooked} | {(CATALOG, n) for n in current}
               for m in infrastructure), \
        sorted((mutants[m].file, mutants[m].line) for m in infrastructure)
    for record in gold.values():
        assert not set(record.kills) & infrastructure
    not_reached = [m for record in gold.values() for m in record.kills
                   if mutants[m].file == CART and mutants[m].line in sums]
    assert not_reached
    assert dataset.card.mutation["empty_runs_not_reached"] >= len(not_reached), dataset.card.mutation
