"""Read-only Kubernetes access for the `kubernetes` investigation toolset."""
