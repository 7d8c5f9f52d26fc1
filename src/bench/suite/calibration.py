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
from bench.errors import UserError
from bench.frameworks.registry import get_framework
from bench.judging import UnsupportedByFramework
from bench.model import GoldTest
from bench.suite.instances import SuiteInstance

SUITE_CALIBRATIONS = ("oracle", "empty", "then-stripped")


class SuiteCalibrationError(UserError):
    """A suite whose reference cannot be derived (one line)."""


def suite_calibration_files(dataset: Dataset, suite: SuiteInstance,
                            gold: dict[str, GoldTest]) -> dict[str, dict[str, str]]:
    """{calibration name: {path: content}} for one suite."""
    project = dataset.project(suite.project)
    records = [gold[s] for s in suite.scenarios if s in gold]
    try:
        return get_framework(project.framework).calibration_files(dataset.root / project.snapshot, records,
                                                                   suite=True)
    except UnsupportedByFramework as exc:
        raise SuiteCalibrationError(f"{suite.id}: {exc}") from None


def reference_suite_files(dataset: Dataset, suite: SuiteInstance, gold: dict[str, GoldTest]) -> dict[str, str]:
    """The developers' step files of one suite: the reverse task's given tests."""
    return suite_calibration_files(dataset, suite, gold)["oracle"]
