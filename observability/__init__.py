"""Tracing, metrics, structured logs, and the HTTP endpoints /metrics /healthz /readyz /debug.

A pure library the scheduler calls; it imports nothing else of this project.

- :mod:`observability.metrics` — ``SchedulerMetrics``: upstream's Prometheus metrics.
- :mod:`observability.tracing` — ``setup_tracing()``: pod / attempt / extension-point spans.
- :mod:`observability.logs` — ``setup_logging()``, ``V(n)``: structured text or JSON logs.
- :mod:`observability.http` — ``ObservabilityServer``: /metrics, /healthz, /readyz, /livez, /debug.
- :mod:`observability.resource_metrics` — ``/metrics/resources``: per-pod requests and limits.
- :mod:`observability.explain` — ``ExplainStore``: the last attempt of pods that failed, and a
  ring of recent first-attempt successes per profile (explained on request).
"""
