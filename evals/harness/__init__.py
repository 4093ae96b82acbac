"""The evaluation runner: cases, fixtures, scoring, reports and the `hapi-grpc eval` command."""
