"""Issue 26 item 3: ``exec``'s own bookkeeping in ``builtins`` is not a runner change.

behave execs step files without ``__name__`` in their globals, so a class defined there has
``__module__ == "builtins"``, and ``dataclasses`` execs the class's generated methods with
``builtins``' dict as globals: ``exec`` then adds ``__builtins__`` (that very dict) to it.
"""

from __future__ import annotations

import builtins
import dataclasses

from bench.frameworks.behave.guard import integrity


def test_a_dataclass_defined_where_behave_execs_step_files_changes_nothing() -> None:
    had = "__builtins__" in vars(builtins)
    snap = integrity.snapshot()
    try:
        namespace: dict[str, object] = {"dataclass": dataclasses.dataclass}  # no __name__, as behave's exec_file
        exec(compile("@dataclass\nclass Expected:\n    total: int\n", "steps.py", "exec"), namespace)  # noqa: S102
        assert namespace["Expected"].__module__ == "builtins"  # type: ignore[attr-defined]
        assert "__builtins__" in vars(builtins) and vars(builtins)["__builtins__"] is vars(builtins)
        assert integrity.changes(snap) == []
        builtins.__builtins__ = {}  # type: ignore[attr-defined] - anything else is still a change
        assert "builtins.__builtins__ added" in integrity.changes(snap)
    finally:
        if not had:
            vars(builtins).pop("__builtins__", None)
