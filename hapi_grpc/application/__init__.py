"""The application layer: what an RPC does, between the transport and the domain.

The servicer converts a request, builds its `Caller` and `Budget`, calls one
method of `service.Application` and converts the answer back. Here live the
concerns of serving an analysis that are neither wire format nor domain
rules: sharing and keeping investigations (`idempotency`, `kept_results`),
replaying events to a caller that did not see them, streaming events while an
investigation runs, what a caller may see of them, and keeping decisions and
outcomes in the remediation history (`outcomes`).
"""
