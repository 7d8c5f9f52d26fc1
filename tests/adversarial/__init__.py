"""Adversarial tests: predictions a reward-hacking agent would submit (see attacks.py)."""
