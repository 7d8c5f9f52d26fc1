"""What the evaluation worker prepares once so that every run child loads the test faster —
without running a line of the test in the worker."""

from __future__ import annotations

import re
from pathlib import Path

from bench.frameworks.behave import eval_worker

STEPS = '''
import pathlib
pathlib.Path(__file__).with_name("ran").write_text("the step module ran")  # must never happen in the worker
from behave import given, then, use_step_matcher

@given("a parse pattern with {count:d} items")
def _a(context, count):
    pass

use_step_matcher("re")

@then(r"a regex (?P<word>\\w+) pattern")
def _b(context, word):
    pass
'''


def test_step_patterns_are_compiled_into_res_cache_without_running_the_module(tmp_path: Path) -> None:
    steps = tmp_path / "steps.py"
    steps.write_text(STEPS)
    re.purge()
    warmed = eval_worker._warm_step_patterns({str(steps): steps.read_bytes()})
    assert warmed == 2
    assert not (tmp_path / "ran").exists()
    cached = {key[1] for key in re._cache}  # type: ignore[attr-defined]
    assert any("items" in str(p) for p in cached), "the parse pattern's expression is cached"
    assert any("a regex (?P<word>" in str(p) for p in cached), "the regex matcher's pattern is cached"


def test_unreadable_step_files_and_bad_patterns_are_skipped(tmp_path: Path) -> None:
    sources = {"broken.py": b"def (:\n", "bad.py": b"from behave import given, use_step_matcher\nuse_step_matcher('re')\n"
                                      b"@given('(unclosed')\ndef f(c): pass\n"}
    assert eval_worker._warm_step_patterns(sources) == 0
