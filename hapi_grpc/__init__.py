"""hapi-grpc: turns a Kubernetes incident into a validated remediation decision, over gRPC."""

__version__ = "0.1.0"
