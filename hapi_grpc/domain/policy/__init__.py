"""Operator policy over decisions: CEL rules that require review, forbid
workflows or rate-limit automated remediations per target.

Design notes: docs/internals.md (`domain/policy/__init__.py`).
"""
