"""kube-controller-manager's controllers that a scheduler's users exercise, run inside kubesim:
Deployments, ReplicaSets/ReplicationControllers, StatefulSets, DaemonSets, Jobs, the garbage
collector, node lifecycle with NoExecute taint eviction, PodDisruptionBudget status, and the
resourceclaim controller (claims from pods' ResourceClaimTemplates, reservedFor cleaned up).

One ControllerManager (manager.py) owns them: it hears every store event, hands each to the
controllers that watch that kind, and runs their syncs from one queue in one task. Each sync is
level-triggered: it reads the stored state and writes what differs, so a restart with --data-dir
resumes by syncing everything once and duplicates nothing.
"""
