"""Tamper screens for untrusted test code (static AST scan, runtime audit hook, runner integrity)."""
