"""Agents: the protocol (``base``), the built-in agent, calibration agents, external adapters."""
