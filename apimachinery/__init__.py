"""Kubernetes primitives that both the scheduler and kubesim use, as kube-scheduler and
kube-apiserver share k8s.io/apimachinery: resource quantities, label selectors, name and label
validation, self-signed serving certificates, and the event-loop runner both processes start
with (upstream's component-base cli.Run).

The bottom layer of the repository: it imports nothing of ours (import-linter checks it), so
either side may use it without pulling in the other.
"""
