"""Pace of kubesim's controllers, with upstream-like defaults (kube-controller-manager flags)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ControllerOptions:
    enabled: bool = True
    # seconds between an event and the sync it causes (upstream controllers react at once)
    sync_delay: float = 0.0
    # --node-monitor-grace-period (upstream default 40s) and --node-monitor-period (5s)
    node_monitor_grace_period: float = 40.0
    node_monitor_period: float = 5.0
    # how long a Job's pod runs before the simulated kubelet marks it Succeeded
    job_duration: float = 5.0
    # kube-controller-manager's WorkloadWithJob feature gate (alpha upstream, so off by
    # default): the Job controller creates a Workload and a PodGroup for each new Job
    workload_with_job: bool = False
