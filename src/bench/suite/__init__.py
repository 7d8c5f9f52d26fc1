"""Suite mode (TestSuiteBench-style): a whole generated suite per project, scored on
requirement-targeted mutants.

Pure computation only: ``targets`` picks the mutants each feature's requirement is judged
on from the reference suite's kill matrix, ``metrics`` scores a generated suite against
them. Running scenarios and mutants is the evaluator's job, not this package's.
"""
