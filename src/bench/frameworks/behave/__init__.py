"""behave (Python): the framework, its warm workers, its judge and its in-process guards.

Nothing outside this package imports it; the rest of req2test reaches behave through
``bench.frameworks.registry.get_framework("behave")`` and the protocol (``bench.frameworks.protocol``).
"""

# ``python -m`` modules of the two warm workers (named here: the package stays import-light,
# the workers import it inside the project's environment)
BUILD_WORKER_MODULE = "bench.frameworks.behave.worker"  # the build's
EVAL_WORKER_MODULE = "bench.frameworks.behave.eval_worker"  # the evaluator's, sandboxed
