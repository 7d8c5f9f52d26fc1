"""The evaluation worker's messages, typed once for both ends.

STANDARD LIBRARY ONLY: the worker imports this module inside the project's environment,
where pydantic may be missing. The verdict process validates every reply against these
types with pydantic in strict mode (``bench.frameworks.behave.eval_sandbox``): a reply that does
not fit is a broken worker (``WorkerLost``), never a coerced value — ``"yes"`` is not
``True``. What a run child reported stays inside ``RunClaim.result`` as the child wrote
it: a claim the verdict process reads defensively, key by key.

Wire format: one JSON object a line; requests carry ``op``.
"""

from __future__ import annotations

import sys
from typing import Any, Literal

if sys.version_info >= (3, 12):
    from typing import NotRequired, TypedDict
else:  # pydantic needs typing_extensions' TypedDict before 3.12; the worker may not have it
    try:
        # NotRequired beside that TypedDict, as pydantic is given them together
        from typing_extensions import NotRequired, TypedDict  # noqa: UP035
    except ImportError:  # pragma: no cover - the worker side only reads the names
        from typing import NotRequired, TypedDict


class EvalInit(TypedDict):
    op: Literal["init"]
    root: str  # the workspace (writable inside the sandbox)
    features_dir: str
    python_path: list[str]
    production_dirs: list[str]  # read-only inside the sandbox
    import_packages: list[str]  # imported once in a warm worker; [] in a cold one
    preload: bool  # always False here: the evaluator never loads the test into the worker
    pristine: str  # what every run starts from (read-only)
    preimport: list[str]  # a cold worker's non-production imports
    fixed: list[str]  # paths inside the workspace the reset never touches (production)
    prediction_files: list[str]
    isolated: bool  # inside a sandbox of our own: the worker may kill strays and empty /tmp
    scratch: list[str]  # emptied before every run
    mounts: list[str]  # bound dirs inside a scratch dir that clearing must step around
    limits: dict[str, int]  # setrlimit values for every run child: fsize, as, core, nofile
    untrusted_production: bool  # the reverse task: production is the prediction (integrity baseline first)


class EvalInitReply(TypedDict):
    ok: bool
    import_lines: dict[str, list[int]]  # production lines that ran while importing
    dependencies: list[str]  # non-production top-level modules the import pulled in
    import_errors: dict[str, str]  # package -> why it did not import (the runs report the same)
    load_error: str | None
    behave_version: NotRequired[str]
    python: NotRequired[str]


class WorkerErrorReply(TypedDict):
    """The reply to a request the worker could not serve (a bug or a broken environment)."""

    error: str
    traceback: NotRequired[str]


class TraceRequest(TypedDict):
    op: Literal["trace"]
    feature: str
    lines: list[int]
    timeout: float


class WireMutant(TypedDict):
    """What a run needs to swap a variant's code in, and nothing else (no id, no operator)."""

    file: str
    line: int
    col: int
    end_line: int
    end_col: int
    replacement: str
    function: str
    function_line: int
    function_end: int
    scope: list[int]  # first and last line of the enclosing module-level statement


class Variant(TypedDict):
    token: str  # one-time name of the run; only the verdict process knows what it means
    mutant: WireMutant | None  # None: no swap at all


class RunsRequest(TypedDict):
    op: Literal["runs"]
    feature: str
    lines: list[int]
    limit: float  # seconds per run
    variants: list[Variant]
    # several variants per forked child, each swapped in and back out in turn: only for runs
    # that re-observe what a pristine child (one variant, forked from the worker) already showed
    batched: NotRequired[bool]


class RunClaim(TypedDict):
    """One run as the worker saw it from outside the child."""

    elapsed: float
    findings: list[dict[str, Any]]  # the screens' findings, as the child streamed them
    garbled: int  # lines on the run's channel that were not one JSON object
    results: int  # result records written (one expected)
    oversized: bool
    exit: Literal["ok", "timeout", "crashed"]
    result: NotRequired[dict[str, Any]]  # the child's claim, read defensively
    error: NotRequired[str]


class Resets(TypedDict):
    killed: int
    restored: int
    removed: int


class RunsReply(TypedDict):
    runs: dict[str, RunClaim]
    resets: Resets



# ----------------------------------------------------------------------------- the build worker
# Requests only: the build's worker runs the developers' own tests (trusted), and its
# replies are still read as JSON objects by the builder (bench.builder, bench.mutation).


class BuildInit(TypedDict):
    op: Literal["init"]
    root: str
    features_dir: str
    python_path: list[str]
    production_dirs: list[str]
    import_packages: list[str]
    preload: bool  # load the project's hooks and step modules into the worker (its own suite)


class RunWorkspace(TypedDict):
    """A copy of the test tree a run uses instead of the worker's own (validation, the
    then-stripped test): the keep-listed Python files of the features tree, plus files."""

    key: str  # cache key: one materialised copy per distinct workspace
    keep_py: list[str]
    files: NotRequired[dict[str, str]]  # path -> text written over the copy


class RunRequest(TypedDict):
    op: Literal["run"]
    feature: str
    lines: list[int]
    trace: bool  # coverage and direct calls (the first isolation run)
    timeout: float
    workspace: NotRequired[RunWorkspace]


class SessionRequest(TypedDict):
    """One test against a pool: a traced clean run, then a run per mutant."""

    op: Literal["session"]
    feature: str
    lines: list[int]
    timeout: float
    mutants: list[dict[str, Any]]  # bench.model.Mutant, as JSON
    workspace: NotRequired[RunWorkspace]
    session_timeout: NotRequired[float]  # the whole session (default 7200 s)
    mutant_timeout_factor: NotRequired[float]  # a mutant run's limit: factor x the clean run ...
    mutant_timeout_min: NotRequired[float]  # ... and at least this many seconds


class ImportRun(TypedDict):
    key: str
    feature: str
    lines: list[int]
    workspace: RunWorkspace | None
    timeout: float


class ImportMutantRequest(TypedDict):
    """A mutant whose lines run at import time: production imported with it, then runs."""

    op: Literal["import_mutant"]
    mutant: dict[str, Any]  # bench.model.Mutant, as JSON
    packages: list[str]
    runs: list[ImportRun]
    session_timeout: NotRequired[float]  # the whole request, as a session's (default 7200 s)


class StaticBindingsRequest(TypedDict):
    op: Literal["static_bindings"]


BuildRequest = BuildInit | RunRequest | SessionRequest | ImportMutantRequest | StaticBindingsRequest
