"""The application layer: what an RPC does, between the transport and the domain.

Design notes: docs/internals.md (`application/__init__.py`).
"""
