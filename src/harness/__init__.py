"""req2test harness layer: views, sandboxes, model access, agents, strategies, experiments."""

__version__ = "0.1.0"
