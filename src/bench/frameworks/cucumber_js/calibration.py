"""Calibration predictions for a cucumber-js instance, at step-definition granularity.

- oracle: the step files as the developers wrote them (the ground-truth statements back);
- empty: the same files with the instance's step functions emptied (``{}``): every step
  still matches and passes, nothing is checked;
- then-stripped: only the Then steps' functions emptied.
"""

from __future__ import annotations

from pathlib import Path

from bench.frameworks.cucumber_js.runner import step_files
from bench.frameworks.cucumber_js.testside import TestSideJs, strip_bodies
from bench.frameworks.instance_sites import instance_sites
from bench.judging import UnsupportedByFramework
from bench.model import GoldTest


def calibration_files(snapshot: Path, records: list[GoldTest], suite: bool) -> dict[str, dict[str, str]]:
    if suite or len(records) != 1:
        raise UnsupportedByFramework("suite calibration is not implemented for cucumber-js projects")
    record = records[0]
    side = TestSideJs(snapshot, step_files(snapshot))
    sites = instance_sites(side.sites, record)
    then_sites = [s for s in sites if s.keyword == "Then"]
    out: dict[str, dict[str, str]] = {"oracle": {}, "empty": {}, "then-stripped": {}}
    for file in sorted({s.file for s in sites}):
        source = (snapshot / file).read_bytes()
        out["oracle"][file] = source.decode("utf-8")
        out["empty"][file] = strip_bodies(file, source, [s for s in sites if s.file == file]).decode("utf-8")
        out["then-stripped"][file] = strip_bodies(file, source,
                                                  [s for s in then_sites if s.file == file]).decode("utf-8")
    return out
