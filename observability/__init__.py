"""Tracing, metrics, structured logs, and the HTTP endpoints /metrics /healthz /readyz /debug."""
