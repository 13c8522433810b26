"""Tracing, metrics, structured logs, and the HTTP endpoints /metrics /healthz /readyz /debug.

A pure library the scheduler calls; it imports nothing else of this project.

- :mod:`observability.metrics` — ``SchedulerMetrics``: upstream's Prometheus metrics.
- :mod:`observability.tracing` — ``setup_tracing()``: pod / attempt / extension-point spans.
- :mod:`observability.logs` — ``setup_logging()``, ``V(n)``: structured text or JSON logs.
- :mod:`observability.http` — ``ObservabilityServer``: /metrics, /healthz, /readyz, /livez, /debug.
- :mod:`observability.explain` — ``ExplainStore``: the last attempt per pending pod.
"""
