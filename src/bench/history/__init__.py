"""Requirement state over a repository's history (ReqMemBench-style requirement atoms).

``atoms`` replays the Gherkin feature files of a git history, commit by commit along the
first-parent chain, into lifecycle events of requirement atoms (one scenario each) with the
commit evidence behind every event, and folds those events into the gold state of all live
atoms at any commit. Reading history only: nothing here checks out, writes to, or runs the
repository.
"""
