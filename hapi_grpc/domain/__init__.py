"""The domain core: investigation, tools and parameter validation.

Nothing in this package imports gRPC, protobuf or an HTTP library; adapters and
the transport layer depend on it, never the other way round.
"""
