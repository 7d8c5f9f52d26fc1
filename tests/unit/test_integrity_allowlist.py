"""Python's own bookkeeping in a module's globals is not tampering (found by the full
python-docx calibration: a warning issued inside behave.matchers under one mutant)."""

from __future__ import annotations

import warnings

from bench.frameworks.behave.guard import integrity


def test_a_warning_issued_by_behave_is_not_a_runner_change() -> None:
    import behave.matchers

    snap = integrity.snapshot()
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        exec(compile("import warnings\nwarnings.warn('from behave', UserWarning)\n",  # noqa: S102
                     behave.matchers.__file__, "exec"), vars(behave.matchers))
    vars(behave.matchers).setdefault("__warningregistry__", {})
    assert integrity.changes(snap) == []
    original = behave.matchers.Match.run
    behave.matchers.Match.run = lambda self, context: None  # a real patch still shows
    try:
        assert "behave.matchers.Match.run replaced" in integrity.changes(snap)
    finally:
        behave.matchers.Match.run = original
