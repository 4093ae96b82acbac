"""Read-only clients for metrics and alerts: the Prometheus HTTP API and Alertmanager."""
