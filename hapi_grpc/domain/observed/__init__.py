"""What the service saw: a per-investigation record of what its tools read.

Design notes: docs/internals.md (`domain/observed/__init__.py`).
"""

from hapi_grpc.domain.observed.record import EMPTY_VIEW, Observed

__all__ = ["EMPTY_VIEW", "Observed"]
