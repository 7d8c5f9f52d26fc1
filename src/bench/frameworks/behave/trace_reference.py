"""The traced run as it was before issue 26 item 7 (tracing cost): the reference that the
faster recorder in ``behave_worker`` must match, record for record.

Reachable only on purpose: ``benchmarks/trace_cost.py`` and the unit test that compares
the two start a worker with ``REQ2TEST_REFERENCE_TRACE=1`` in its environment, and the
worker then records traced runs with :class:`ReferenceRunRecorder`. Nothing else uses it.

Standard library only (it runs in the project's environment, like the worker).
"""

from __future__ import annotations

import os
from typing import Any

from bench.frameworks.behave import worker as bw

ENV_FLAG = "REQ2TEST_REFERENCE_TRACE"


def wanted() -> bool:
    return os.environ.get(ENV_FLAG) == "1"


class ReferenceRunRecorder(bw.RunRecorder):
    """``RunRecorder`` with the previous traced-run callbacks (profile and audit hook) and
    classification cache (code objects as keys)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._code_kinds: dict[Any, int] = {}

    def _traced_profile(self):
        return self._profile

    def _audit_hook(self):
        return self._audit

    def _audit(self, event, args):
        if event == "open" and args:
            path = args[0]
            mode = args[1] if len(args) > 1 else "r"
            if isinstance(mode, str) and any(c in mode for c in "wax+"):
                return
            if isinstance(mode, int) and mode & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
                return
            if isinstance(path, bytes):
                path = path.decode(errors="replace")
            if isinstance(path, str):
                self.opened.add(os.path.abspath(path))

    # code classification: 0 other, 1 production, 2 test-side (not hooks)
    def _kind(self, code) -> int:
        kind = self._code_kinds.get(code)  # keyed by the code object: the cost being measured
        if kind is None:
            kind = self._file_kind(code.co_filename)
            self._code_kinds[code] = kind
        return kind

    def _profile(self, frame, event, arg):  # sys.setprofile callback: keep it lean
        if event != "call":
            if event == "return":
                self._call_point_after(frame)
            return
        code = frame.f_code
        kind = self._kind(code)
        if kind == 2:
            self.test_files.add(code.co_filename)
            return
        if kind != 1:
            if code.co_name == "__init__" and code.co_filename == "<string>":
                self._generated_init(frame)
            return
        key = (code.co_filename, code.co_firstlineno, code.co_qualname)
        if self.top_role in ("when", "then") and not self.in_background:
            self.executed_when_then.add(key)
        else:
            self.executed_other.add(key)
        caller = frame.f_back
        if caller is None:
            return
        ckind = self._kind(caller.f_code)
        direct = ckind == 2
        if not direct and ckind == 1 and caller.f_code.co_name in bw.TRAMPOLINES:
            outer = caller.f_back
            direct = outer is not None and self._kind(outer.f_code) == 2
        if direct and code.co_name not in bw.TRAMPOLINES and "<" not in code.co_qualname:
            self.direct.setdefault(self.top_index, set()).add(key)
