"""What `kubectl get pvc` / `kubectl get pv` print: upstream's columns and cells."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim import tables
from kubesim.resources import lookup

CLAIM_COLUMNS = [
    "Name",
    "Status",
    "Volume",
    "Capacity",
    "Access Modes",
    "StorageClass",
    "VolumeAttributesClass",
    "Age",
    "VolumeMode",
]
VOLUME_COLUMNS = [
    "Name",
    "Capacity",
    "Access Modes",
    "Reclaim Policy",
    "Status",
    "Claim",
    "StorageClass",
    "VolumeAttributesClass",
    "Reason",
    "Age",
    "VolumeMode",
]


@pytest.mark.parametrize(
    ("claim", "cells"),
    [
        (
            {
                "metadata": {"name": "c"},
                "spec": {"storageClassName": "standard"},
                "status": {"phase": "Pending"},
            },
            ["c", "Pending", "", "", "", "standard", "<unset>", "<unknown>", "<unset>"],
        ),
        (
            {
                "metadata": {"name": "c"},
                "spec": {"volumeName": "pv", "storageClassName": "", "volumeMode": "Block"},
                "status": {
                    "phase": "Bound",
                    "capacity": {"storage": "2048Mi"},
                    "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
                },
            },
            ["c", "Bound", "pv", "2Gi", "RWO,RWX", "", "<unset>", "<unknown>", "Block"],
        ),
        (
            {
                "metadata": {
                    "name": "c",
                    "deletionTimestamp": "2024-01-01T00:00:00Z",
                    "annotations": {"volume.beta.kubernetes.io/storage-class": "beta"},
                },
                "spec": {"storageClassName": "spec"},
                "status": {"phase": "Bound"},
            },
            ["c", "Terminating", "", "", "", "beta", "<unset>", "<unknown>", "<unset>"],
        ),
    ],
    ids=["pending", "bound", "terminating-beta-class"],
)
def test_claim_rows(claim: dict[str, Any], cells: list[Any]) -> None:
    resource = lookup("", "v1", "persistentvolumeclaims")
    assert resource is not None
    table = tables.to_table(resource, [claim], "None")
    assert [c["name"] for c in table["columnDefinitions"]] == CLAIM_COLUMNS
    assert table["rows"][0]["cells"] == cells


@pytest.mark.parametrize(
    ("volume", "cells"),
    [
        (
            {
                "metadata": {"name": "v"},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOncePod"],
                    "persistentVolumeReclaimPolicy": "Retain",
                    "storageClassName": "fast",
                    "volumeMode": "Filesystem",
                },
                "status": {"phase": "Available"},
            },
            [
                "v",
                "1Gi",
                "RWOP",
                "Retain",
                "Available",
                "",
                "fast",
                "<unset>",
                "",
                "<unknown>",
                "Filesystem",
            ],
        ),
        (
            {
                "metadata": {"name": "v"},
                "spec": {
                    "capacity": {"storage": "lots"},
                    "claimRef": {"namespace": "ns", "name": "c"},
                    "persistentVolumeReclaimPolicy": "Delete",
                },
                "status": {"phase": "Released", "reason": "Gone"},
            },
            [
                "v",
                "lots",
                "",
                "Delete",
                "Released",
                "ns/c",
                "",
                "<unset>",
                "Gone",
                "<unknown>",
                "<unset>",
            ],
        ),
    ],
    ids=["available", "released-malformed-capacity"],
)
def test_volume_rows(volume: dict[str, Any], cells: list[Any]) -> None:
    resource = lookup("", "v1", "persistentvolumes")
    assert resource is not None
    table = tables.to_table(resource, [volume], "None")
    assert [c["name"] for c in table["columnDefinitions"]] == VOLUME_COLUMNS
    assert table["rows"][0]["cells"] == cells
