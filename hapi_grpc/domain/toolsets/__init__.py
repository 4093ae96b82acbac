"""Tools as the investigation core runs them.

Design notes: docs/internals.md (`domain/toolsets/__init__.py`).
"""
