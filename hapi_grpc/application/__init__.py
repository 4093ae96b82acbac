"""The application layer: what an RPC does, between the transport and the domain.

Servicers convert a request, call one method here and convert the answer
back. Here live the concerns of serving an analysis that are neither wire
format nor domain rules: sharing and keeping investigations (idempotency),
how kept results are encoded, replaying events to a caller that did not
see them, and streaming events while an investigation runs.
"""
