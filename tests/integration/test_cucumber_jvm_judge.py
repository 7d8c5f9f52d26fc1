"""The Cucumber-JVM judge on the real corpus (slow): java-algorand-sdk's TEAL-signing scenarios
(``tags = ["unit.tealsign"]``, production unchanged) built with mutants, then judged.

- calibration: the oracle passes and is kill-complete on every instance with kills, with its
  coverage and API calls exact; the empty test kills nothing and, reaching none of the kills,
  runs only a sample of them; the then-stripped test lies in between; every verdict ran in
  bubblewrap without ``/proc``;
- attacks, each a real judged prediction of one instance (the oracle's files with a detector
  called from the Then step), that try to tell a mutant run from a clean one without looking at
  behaviour:

  (a) the switch's private field read by reflection → the screen: ``tampering``;
  (b) a production class file read as a resource (by a name built at run time) and compared with
      the shipped build → every run's class files are the schemata's, the clean run's too: the
      detector fails its own clean run, no kill;
  (c) ``System.exit(0)`` in a step → the screen; and ``Runtime.halt`` reached through
      ``java.beans.Statement`` (a reflective route the screen does not list) → no report, not
      ``pass``;
  (d) the switch's public helper probed through a route the screen does not list (Jackson's
      ``TypeFactory.findClass`` + ``java.beans.Expression``: "is any number active?") → the
      clean run runs a null number: the detector fails its own clean run, no kill;
  (e) chance: the check fails at random half the time → a failed clean run, or failed null
      variants (retried beside clean runs: unstable, or tampering when chance repeats the
      pattern of a switch reader) → never a kill-complete pass;
  (f) memory across runs, aimed at verdict JVMs restored from one checkpoint (``restored``): a
      test that leaves a mark (a daemon thread, a file beside its working directory and in
      ``/tmp``) and fails when it finds one → every run starts from the same image in a fresh sandbox: it
      never finds one, and stays the oracle (kill-complete);
  (g) what a restored JVM could reach that a fresh one cannot: ``/proc`` (criu mounts it to
      restore), the zygote's image (written, it would carry state into later restores) and the
      command file that held the number → ``/proc`` is unmounted before the JVM resumes, the
      image is read-only, the command deleted before the test's classes load: the oracle with
      these checks stays kill-complete.

``REQ2TEST_JVM_JUDGE_DATASET`` names a dataset built this way to reuse (the build takes ~10 min).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from bench.builder.pipeline import BuildOptions, build_dataset
from bench.builder.schemata_stage import UNREACHED_SAMPLE
from bench.calibrate import calibration_predictions
from bench.dataset import load_dataset
from bench.evaluate import EvaluateOptions, ProjectJudging, evaluate, ground_truth_files
from bench.frameworks.cucumber_jvm.restored import criu_binary
from bench.frameworks.cucumber_jvm.screen import screen
from bench.model import Outcome, Prediction
from tests.integration.recipes import recipe

pytestmark = [pytest.mark.integration, pytest.mark.slow]

corpus = recipe("java_algorand_sdk")
TAGS = ["unit.tealsign"]
STEPS = "src/test/java/com/algorand/algosdk/unit/TealSign.java"
THEN = "    public void the_signature_should_equal_the_golden(String golden) throws IOException {\n"


@pytest.fixture(scope="module")
def jvm_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    reused = os.environ.get("REQ2TEST_JVM_JUDGE_DATASET")
    if reused and (Path(reused) / "dataset.json").is_file():
        return Path(reused)
    if shutil.which("java") is None or shutil.which("mvn") is None or shutil.which("bwrap") is None:
        pytest.skip("needs java, mvn and bwrap")
    base = tmp_path_factory.mktemp("jvmjudge")
    try:
        project = corpus.assemble(base / "java-algorand-sdk", corpus.default_source("java-algorand-sdk"),
                                  corpus.default_source("algorand-sdk-testing"))
    except (subprocess.CalledProcessError, SystemExit) as exc:
        pytest.skip(f"the java-algorand-sdk corpus cannot be fetched here: {exc}")
    settings = project / "req2test.toml"
    text = re.sub(r"(?m)^tags = \[.*\]$", f"tags = {json.dumps(TAGS)}", settings.read_text())
    assert f"tags = {json.dumps(TAGS)}" in text
    settings.write_text(text)
    out = base / "dataset"
    build_dataset(str(project), out, BuildOptions(name="java-algorand-sdk", workers=2, runs=1))
    return out


def _scored(dataset: Path) -> list[str]:
    gold = load_dataset(dataset).load_gold()
    return sorted(i for i, g in gold.items() if g.kills)


def test_calibration_is_exact(jvm_dataset: Path, tmp_path: Path) -> None:
    scored = _scored(jvm_dataset)
    assert scored
    sets = calibration_predictions(jvm_dataset, ("oracle", "empty", "then-stripped"))
    summaries, rows = {}, {}
    for name in ("oracle", "empty", "then-stripped"):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(p.model_dump_json() + "\n" for p in sets[name] if p.instance_id in scored))
        started = time.monotonic()
        summaries[name] = evaluate(jvm_dataset, path, tmp_path / name,
                                   EvaluateOptions(instances=scored, resamples=200, workers=2, isolation="bwrap"))
        rows[name] = {r["instance_id"]: r for r in map(json.loads, (tmp_path / name / "results.jsonl")
                                                       .read_text().splitlines())}
        seconds = [r["evaluation_seconds"] for r in rows[name].values()]
        jvms = [r["confirmation"].get("jvms", 0) for r in rows[name].values()]
        print(f"\n{name}: {time.monotonic() - started:.0f} s for {len(scored)} predictions; per prediction "
              f"{min(seconds):.0f}-{max(seconds):.0f} s, {min(jvms)}-{max(jvms)} JVMs")
    oracle, empty = summaries["oracle"], summaries["empty"]
    assert oracle["pass_at_1"]["value"] == 1.0, json.dumps(oracle["outcomes"])
    assert oracle["kill_complete_at_1"]["value"] == 1.0, json.dumps(oracle["outcomes"])
    assert empty["kill_complete_at_1"]["value"] == 0.0 and empty["mutant_recall"]["value"] == 0.0
    for instance_id, row in rows["oracle"].items():
        assert row["coverage_jaccard"] == 1.0 and row["api_f1"] in (1.0, None), row
        confirmation = row["confirmation"]
        assert confirmation["sandbox"] == "bwrap-no-proc", confirmation
        if criu_binary() is not None:  # every verdict run but the traced one restored (restored.py)
            assert confirmation["restored_jvms"] == confirmation["jvms"] - 1, confirmation
        else:
            assert confirmation["restored_jvms"] == 0 and confirmation["zygote"], confirmation
        assert confirmation["null_variants"] >= 2 and confirmation["reproduced_kills"] >= 1, confirmation
        assert confirmation["decoys"] >= 1, confirmation
        stripped, nothing = rows["then-stripped"][instance_id], rows["empty"][instance_id]
        assert stripped["outcome"] == "pass" and nothing["outcome"] == "pass", (stripped, nothing)
        assert nothing["generated_kills"] == 0, nothing
        assert confirmation.get("unreached_not_run", 0) == 0, confirmation  # the oracle reaches its kills
        held = nothing["confirmation"]  # the empty test reaches none: a sample of its kills ran, no more
        assert held["unreached_not_run"] == max(0, held["unreached_kills"] - UNREACHED_SAMPLE), held
        assert nothing["generated_kills"] <= stripped["generated_kills"] <= row["generated_kills"], stripped
        assert stripped["generated_kills"] < row["generated_kills"], stripped  # its assertions did the killing


# --------------------------------------------------------------------------- attacks
def _attack(dataset: Path, instance_id: str, detector: str) -> dict[str, str]:
    """The oracle's files, the Then step calling ``detect()`` first."""
    files = dict(next(p for p in calibration_predictions(dataset, ("oracle",))["oracle"]
                      if p.instance_id == instance_id).files)
    text = files[STEPS]
    assert THEN in text
    text = text.replace(THEN, THEN + "        detect();\n")
    files[STEPS] = text[:text.rstrip().rfind("}")] + detector + "}\n"
    return files


SWITCH_FIELD = """
    private static void detect() {
        try {
            java.lang.reflect.Field f = Class.forName("req2test.schema.S").getDeclaredField("ACTIVE");
            f.setAccessible(true);
            if (f.getInt(null) != 0) {
                throw new AssertionError("a mutant is active");
            }
        } catch (ReflectiveOperationException e) {
            // the plain build (the traced run) has no switch
        }
    }
"""
CLASS_BYTES = """
    private static void detect() {
        String name = "com/algorand/algosdk/account/Account" + ".cl" + "ass";
        try (java.io.InputStream in = TealSign.class.getClassLoader().getResourceAsStream(name)) {
            String text = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.ISO_8859_1);
            if (text.contains("req" + "2test")) {
                throw new AssertionError("production differs from the shipped build");
            }
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }
"""
EXIT = """
    private static void detect() {
        System.exit(0);
    }
"""
HALT = """
    private static void detect() {
        try {
            new java.beans.Statement(Runtime.getRuntime(), "ha" + "lt", new Object[] {0}).execute();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }
"""
PROBE = """
    private static void detect() {
        try {
            Class<?> s = com.fasterxml.jackson.databind.type.TypeFactory.defaultInstance()
                    .findClass("req" + "2test.schema." + "S");
            for (int n = 1; n < 20000; n++) {
                if ((Boolean) new java.beans.Expression(s, "on", new Object[] {n}).getValue()) {
                    throw new AssertionError("mutant number " + n + " is active");
                }
            }
        } catch (ClassNotFoundException e) {
            // the plain build (the traced run) has no switch
        } catch (AssertionError e) {
            throw e;
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }
"""

CHANCE = """
    private static void detect() {
        if (new java.security.SecureRandom().nextBoolean()) {
            throw new AssertionError("heads");
        }
    }
"""

MEMORY = """
    private static void detect() {
        String mark = "seen-" + "before";
        java.io.File near = new java.io.File(new java.io.File("").getAbsoluteFile().getParentFile(), mark);
        java.io.File shared = new java.io.File("/t" + "mp", mark);
        ThreadGroup root = Thread.currentThread().getThreadGroup();
        while (root.getParent() != null) {
            root = root.getParent();
        }
        Thread[] threads = new Thread[root.activeCount() + 16];
        for (int i = 0, n = root.enumerate(threads, true); i < n; i++) {
            if (threads[i].getName().equals(mark)) {
                throw new AssertionError("an earlier run left a thread");
            }
        }
        if (near.exists() || shared.exists()) {
            throw new AssertionError("an earlier run left a file");
        }
        Thread keeper = new Thread(() -> {
            try {
                Thread.sleep(Long.MAX_VALUE);
            } catch (InterruptedException e) {
                // the JVM ends
            }
        }, mark);
        keeper.setDaemon(true);
        keeper.start();
        try {
            near.createNewFile();
            shared.createNewFile();
        } catch (IOException e) {
            // not writable there: the thread is the mark
        }
    }
"""
REACH = """
    private static void detect() {
        if (new java.io.File("/pr" + "oc/self").exists()) {
            throw new AssertionError("/proc is visible");
        }
        if (new java.io.File("/run/out/com" + "mand").exists()) {
            throw new AssertionError("the command file is still there");
        }
        java.io.File image = new java.io.File("/run/req" + "2test-zygote");
        java.io.File[] pages = image.listFiles();
        if (pages != null) {
            for (java.io.File page : pages) {
                try (java.io.FileOutputStream out = new java.io.FileOutputStream(page, true)) {
                    throw new AssertionError("the zygote's image is writable: " + page);
                } catch (IOException e) {
                    // read-only, as it must be
                }
            }
        }
    }
"""


@pytest.fixture(scope="module")
def attacked(jvm_dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[ProjectJudging, str]:
    dataset = load_dataset(jvm_dataset)
    gold = dataset.load_gold()
    # the instance with the fewest kills: an attack that passed its clean run would run them all
    instance_id = min((i for i in _scored(jvm_dataset) if "/tealsign.feature:" in i), key=lambda i: len(gold[i].kills))
    judging = ProjectJudging(dataset, dataset.instances[0].project, gold,
                             EvaluateOptions(workers=1, isolation="bwrap", timeout=300),
                             tmp_path_factory.mktemp("attacks"), ground_truth_files(gold))
    judging.prepare()
    return judging, instance_id


def _judge(jvm_dataset: Path, attacked: tuple[ProjectJudging, str], detector: str) -> tuple[object, int]:
    judging, instance_id = attacked
    dataset = load_dataset(jvm_dataset)
    gold = dataset.load_gold()[instance_id]
    inst = dataset.instance(instance_id)
    prediction = Prediction(instance_id=instance_id, files=_attack(jvm_dataset, instance_id, detector))
    assert judging.rejections(prediction) == (None, [])
    return judging.judge(inst, prediction, gold), len(gold.kills)


def test_the_unscreened_attacks_pass_the_screen(jvm_dataset: Path, attacked: tuple[ProjectJudging, str]) -> None:
    """What stops (b), (c2) and (d) is the construction, not a pattern."""
    _, instance_id = attacked
    for detector in (CLASS_BYTES, HALT, PROBE, CHANCE, MEMORY, REACH):
        assert screen(_attack(jvm_dataset, instance_id, detector)) == [], detector
    for detector in (SWITCH_FIELD, EXIT):
        assert screen(_attack(jvm_dataset, instance_id, detector)), detector


def test_reading_the_switch_by_reflection_is_tampering(jvm_dataset: Path,
                                                       attacked: tuple[ProjectJudging, str]) -> None:
    judgement, _ = _judge(jvm_dataset, attacked, SWITCH_FIELD)
    assert judgement.outcome is Outcome.tampering and "setAccessible" in " ".join(judgement.evidence), judgement


def test_a_class_file_compared_with_the_shipped_build_gains_nothing(
        jvm_dataset: Path, attacked: tuple[ProjectJudging, str]) -> None:
    judgement, _ = _judge(jvm_dataset, attacked, CLASS_BYTES)
    assert judgement.outcome is Outcome.assertion_failure and "differs from the shipped" in judgement.detail, judgement
    assert not judgement.kills


def test_exiting_the_jvm_is_never_a_pass(jvm_dataset: Path, attacked: tuple[ProjectJudging, str]) -> None:
    screened, _ = _judge(jvm_dataset, attacked, EXIT)
    assert screened.outcome is Outcome.tampering and "System.exit" in screened.detail, screened
    halted, _ = _judge(jvm_dataset, attacked, HALT)
    assert halted.outcome not in (Outcome.passed, Outcome.infrastructure_failure), halted
    assert not halted.kills


def test_probing_the_switch_fails_its_own_clean_run(jvm_dataset: Path, attacked: tuple[ProjectJudging, str]) -> None:
    judgement, _ = _judge(jvm_dataset, attacked, PROBE)
    assert judgement.outcome is Outcome.assertion_failure and "is active" in judgement.detail, judgement
    assert not judgement.kills


def test_chance_is_never_kill_complete(jvm_dataset: Path, attacked: tuple[ProjectJudging, str]) -> None:
    judgement, kills = _judge(jvm_dataset, attacked, CHANCE)
    assert judgement.outcome is not Outcome.infrastructure_failure, judgement
    assert not (judgement.outcome is Outcome.passed and len(judgement.kills) == kills), judgement
    if judgement.outcome is not Outcome.assertion_failure:  # its clean run passed: nulls failed, or a replay
        # A null variant that fails, fails again on its retry and whose two clean controls pass
        # looks exactly like a test that reads the switch (chance: 1/2 · 1/4 of the time); every
        # judge calls that tampering, so either label is right here, and neither is a pass.
        assert judgement.outcome in (Outcome.unstable, Outcome.tampering), judgement


@pytest.mark.parametrize("detector", [MEMORY, REACH], ids=["memory-across-runs", "what-a-restore-could-reach"])
def test_a_restored_jvm_remembers_and_reaches_nothing(jvm_dataset: Path, attacked: tuple[ProjectJudging, str],
                                                      detector: str) -> None:
    judgement, kills = _judge(jvm_dataset, attacked, detector)
    assert judgement.outcome is Outcome.passed and len(judgement.kills) == kills, judgement
    if criu_binary() is not None:
        assert judgement.confirmation["restored_jvms"] == judgement.confirmation["jvms"] - 1, judgement.confirmation
