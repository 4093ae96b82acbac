"""hapi-grpc: a gRPC service that turns a Kubernetes incident into a validated remediation decision."""

__version__ = "0.1.0"
