"""What the service saw: a per-investigation record of what its tools read.

The tools (`kubernetes_*`, `prometheus_*`, `alertmanager_*`) record the data
they parsed themselves, independent of what a model or the built-in analyst
later says about it. The final check evaluates the catalog's preconditions on
this record (`observed` in CEL), so a premise is checked against the cluster
as read, never against prose. Shapes: `docs/preconditions.md`.
"""

from hapi_grpc.domain.observed.record import EMPTY_VIEW, Observed

__all__ = ["EMPTY_VIEW", "Observed"]
