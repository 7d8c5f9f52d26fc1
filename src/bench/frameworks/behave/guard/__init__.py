"""Tamper screens for untrusted test code (static AST scan, the run child's deny-by-default
audit hook ``strict_hook``, runner integrity)."""
