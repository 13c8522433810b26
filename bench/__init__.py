"""scheduler_perf-style workloads and their runner."""
