"""The built-in analyst: the deterministic decider used when no language model is configured.

Design notes: docs/internals.md (`analyst/__init__.py`).
"""

from hapi_grpc.analyst.provider import BuiltinAnalyst

__all__ = ["BuiltinAnalyst"]
