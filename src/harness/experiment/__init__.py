"""Experiments: an experiment file → generation → evaluation → selection → report, resumable."""
