"""The ``event`` label values, as upstream's ClusterEvent.Label() prints them
(staging/src/k8s.io/kube-scheduler/framework/events.go, pkg/scheduler/framework/events.go)."""

from __future__ import annotations

import pytest

from scheduler.framework.events import (
    ASSIGNED_POD_DELETE,
    FORCE_ACTIVATE,
    NODE_ADD,
    UNSCHEDULABLE_TIMEOUT,
    ActionType,
    ClusterEvent,
    EventResource,
)
from scheduler.queue.event_labels import event_label


@pytest.mark.parametrize(
    ("event", "label"),
    [
        (NODE_ADD, "NodeAdd"),
        (ASSIGNED_POD_DELETE, "AssignedPodDelete"),
        (UNSCHEDULABLE_TIMEOUT, "UnschedulableTimeout"),
        (FORCE_ACTIVATE, "ForceActivate"),
        (ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT), "NodeUpdateNodeTaint"),
        (
            ClusterEvent(
                EventResource.NODE, ActionType.UPDATE_NODE_TAINT | ActionType.UPDATE_NODE_LABEL
            ),
            "NodeUpdate",
        ),
        (
            ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.UPDATE_POD_LABEL),
            "UnschedulablePodUpdatePodLabel",
        ),
        (
            ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.UPDATE_OTHER),
            "UnschedulablePodUpdate",
        ),
        (
            ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_DOWN),
            "AssignedPodUpdatePodScaleDown",
        ),
        (
            ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
            "PersistentVolumeClaimAdd",
        ),
        (ClusterEvent(EventResource.CSI_NODE, ActionType.UPDATE), "storage.k8s.io/CSINodeUpdate"),
        (ClusterEvent(EventResource.WILDCARD, ActionType.ALL), "*All"),
    ],
)
def test_event_label(event: ClusterEvent, label: str) -> None:
    assert event_label(event) == label
