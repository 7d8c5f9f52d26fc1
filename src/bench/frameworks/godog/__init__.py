"""Godog (Go) as a req2test framework — issue 28, in progress. ``framework.GodogFramework`` is
registered as ``godog``: it runs scenarios, gives the test side's views and calibration files,
and builds datasets *without* mutants (``req2test build DIR --no-mutants``: ``build.py``); a
build with mutants and any evaluation (``judge``) say in one line that they are not implemented.

- the project's settings (``package``, tags, the godog version of go.mod): ``settings.py``;
- the Go toolchain and the suite's test binary: ``toolchain.py``; scratch trees: ``tree.py``;
- one scenario per process, read from godog's cucumber JSON, an Examples row from a one-row
  copy of its feature, per-scenario coverage profiles: ``runner.py``, ``cucumber_json.py``,
  ``outline.py``, ``coverprofile.py``, ``definitions.py`` (godog's first-match binding);
- the test side at registration granularity: ``testside.py``; production declarations, the
  handlers' calls and target interfaces: ``declarations.py``, ``interfaces.py``;
- the Go production language: mutants (``language.py``), body hiding (``hiding.py``) and
  mutant schemata, every mutant compiled into one build and one selected per process through
  a descriptor the test never sees (``schemata.py``) — not yet used by the builder.
"""
