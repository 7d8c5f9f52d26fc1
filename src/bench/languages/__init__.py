"""Languages production code is written in (``bench.frameworks.protocol.Language``)."""
