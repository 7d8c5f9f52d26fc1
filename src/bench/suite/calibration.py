"""Reference suites built from the ground truth, one per suite instance (the suite-mode
counterpart of ``bench.calibrate``):

- oracle: the developers' step definitions of every scenario of the feature — must be 100 %
  valid and kill every requirement-targeted mutant (they were chosen from its kills);
- empty: every step-definition body is ``pass`` — valid (nothing can fail) and kills nothing;
- then-stripped: the bodies bound to any scenario's Then steps are ``pass`` (a definition a
  Given/When step of any scenario also uses is kept, or the setup itself would break).
"""

from __future__ import annotations

from bench.dataset import Dataset
from bench.model import GoldTest
from bench.suite.instances import SuiteInstance
from bench.testimpl import strip_step_bodies, then_step_targets

SUITE_CALIBRATIONS = ("oracle", "empty", "then-stripped")


class SuiteCalibrationError(Exception):
    """A suite whose reference cannot be derived (one line)."""


def suite_calibration_files(dataset: Dataset, suite: SuiteInstance,
                            gold: dict[str, GoldTest]) -> dict[str, dict[str, str]]:
    """{calibration name: {path: content}} for one suite."""
    project = dataset.project(suite.project)
    if project.framework != "behave":
        raise SuiteCalibrationError(f"{suite.id}: suite calibration is implemented for behave projects only, "
                                    f"not {project.framework}")
    snapshot = dataset.root / project.snapshot
    records = [gold[s] for s in suite.scenarios if s in gold]
    code = sorted({f.path for r in records for f in r.closure if f.role != "data"})
    step_files = sorted({f.path for r in records for f in r.closure if f.role == "step_definitions"})
    then = set().union(*(then_step_targets(r) for r in records)) if records else set()
    elsewhere = {(b.binding.file, b.binding.line) for r in records for b in r.bindings if b.role != "then"}
    oracle = {path: (snapshot / path).read_text(encoding="utf-8") for path in code}
    empty = {**oracle, **strip_step_bodies(snapshot, step_files, None)}
    stripped = {**oracle, **strip_step_bodies(snapshot, code, then - elsewhere)}
    return {"oracle": oracle, "empty": empty, "then-stripped": stripped}


def reference_suite_files(dataset: Dataset, suite: SuiteInstance, gold: dict[str, GoldTest]) -> dict[str, str]:
    """The developers' step files of one suite: the reverse task's given tests."""
    return suite_calibration_files(dataset, suite, gold)["oracle"]
