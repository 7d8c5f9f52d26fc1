"""Harness strategies: requirement enrichment, decomposition and candidate selection."""
