"""The one outgoing HTTP client (`client.HttpClient`), its transport and its retry policy.

Every adapter that speaks HTTP (the language models, Data Storage, Prometheus,
Alertmanager, the Kubernetes API server, token and access reviews) sends
through an `HttpClient`.
"""
