"""What the service saw: a per-investigation record of what its tools read.

The tools (`kubernetes_*`, `prometheus_*`, `alertmanager_*`) record the data
they parsed themselves, independent of what a model or the built-in analyst
later says about it: each kind of fact is typed once (`facts`), filled by the
toolset that reads it (`hapi_grpc/toolsets/<name>/facts.py`), and kept bounded
here (`record`). The final check evaluates the catalog's preconditions on this
record (`observed` in CEL), so a premise is checked against the cluster as
read, never against prose. Fields: `docs/preconditions.md`.
"""

from hapi_grpc.domain.observed.record import EMPTY_VIEW, Observed, object_key

__all__ = ["EMPTY_VIEW", "Observed", "object_key"]
