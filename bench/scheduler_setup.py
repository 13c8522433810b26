"""What the bench hands the scheduler (its configuration, its flags) and reads back from it
(the gated queue's length, its API requests per pod)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from bench import workloads as wl
from kubesim.request_metrics import Key

SCHEDULER_CLIENT = "aiosched"  # the scheduler's User-Agent product token


def scheduler_config(parallelism: int | None = None, kubeconfig: Path | None = None) -> str:
    """The scheduler's config: a client as fast as scheduler_perf's, no leader election,
    `parallelism` when given (else the scheduler's default), and the cluster's kubeconfig:
    kube-scheduler ignores --kubeconfig when --config is given."""
    where = "" if kubeconfig is None else f"  kubeconfig: {json.dumps(str(kubeconfig))}\n"
    return (
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        + (f"parallelism: {parallelism}\n" if parallelism is not None else "")
        + "leaderElection:\n"
        "  leaderElect: false\n"
        "clientConnection:\n"
        f"{where}"
        "  qps: 5000\n"
        "  burst: 5000\n"
    )


def scheduler_config_for(
    workload: wl.Workload, parallelism: int | None = None, kubeconfig: Path | None = None
) -> str:
    """scheduler_config() plus the workload's own profiles (upstream's schedulerConfigPath)."""
    return scheduler_config(parallelism, kubeconfig) + workload.scheduler_profiles


def feature_gates_args(workload: wl.Workload) -> list[str]:
    """`--feature-gates` turning on the workload's gates (none: no flag)."""
    if not workload.feature_gates:
        return []
    return ["--feature-gates", ",".join(f"{gate}=true" for gate in workload.feature_gates)]


def gated_pending_pods(metrics: str) -> int:
    """scheduler_pending_pods{queue="gated"} from a /metrics text; 0 when absent."""
    match = _GATED_PENDING.search(metrics)
    return int(float(match.group(1))) if match else 0


_GATED_PENDING = re.compile(
    r'^scheduler_pending_pods\{[^}]*queue="gated"[^}]*\}\s+(\S+)', re.MULTILINE
)


def per_pod_requests(
    before: dict[Key, int], after: dict[Key, int], pods: int
) -> dict[str, float] | None:
    """The scheduler's requests between two counts, per pod, by "VERB resource[/sub]"."""
    if not after or pods <= 0:
        return None
    totals: dict[str, int] = {}
    for key, count in after.items():
        client, verb, resource, subresource, _code = key
        delta = count - before.get(key, 0)
        if client != SCHEDULER_CLIENT or delta <= 0:
            continue
        name = f"{verb} {resource}/{subresource}" if subresource else f"{verb} {resource}"
        totals[name] = totals.get(name, 0) + delta
    return {name: round(total / pods, 3) for name, total in sorted(totals.items())}
