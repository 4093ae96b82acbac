"""The investigation core: from incident to checked result.

Design notes: docs/internals.md (`domain/investigation/__init__.py`).
"""
