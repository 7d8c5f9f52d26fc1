"""Godog (Go) as a req2test framework — issue 28, in progress: the parts below work and are
tested on go-algorand-sdk v2.12.0, but there is no ``Framework`` yet (no builder, judge or
views), so the registry does not offer ``godog`` and a project asking for it gets the usual
"not a known test framework" line.

- the Go toolchain and the suite's test binary: ``toolchain.py``;
- one scenario per process, read from godog's cucumber JSON, an Examples row from a one-row
  copy of its feature, per-scenario coverage profiles: ``runner.py``, ``cucumber_json.py``,
  ``outline.py``, ``coverprofile.py``, ``definitions.py`` (godog's first-match binding);
- the Go production language: mutants (``language.py``), body hiding (``hiding.py``) and
  mutant schemata, every mutant compiled into one build and one selected per process through
  a descriptor the test never sees (``schemata.py``).
"""
