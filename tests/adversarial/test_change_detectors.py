"""Change detectors (change_detectors.py) lose on the bundled example: each fails its own clean
run on the session's rewritten production or is caught failing equivalent variants; with the
rewrite and the equivalent variants both off, the same detectors would be kill-complete, which
shows the defence (not the detectors' clumsiness) is what defeats them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.change_detectors import assert_change_detectors_lose, judge_change_detectors

pytestmark = pytest.mark.integration


def test_change_detectors_lose_on_the_example(example_dataset: Path, tmp_path: Path) -> None:
    rows = judge_change_detectors(example_dataset, tmp_path / "on", instances=2)
    assert_change_detectors_lose(rows)
    # the clean run differs from the shipped source for every detector that runs at all
    outcomes = {name: {r["outcome"] for r in results} for name, results in rows.items()}
    assert all(o <= {"assertion_failure", "execution_failure", "tampering", "unstable"} for o in outcomes.values()), \
        outcomes
