"""What-if's reading of a Pod manifest as a user wrote it: one parser for the pod what-if
(`what_if.py`) and each member of a group what-if (`what_if_group.py`)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from observability.http import BadRequest
from scheduler.api.errors import MalformedObject
from scheduler.api.objects import PodView


def pod_from_manifest(obj: Any) -> PodView:
    """The view of a Pod manifest as a user wrote it; BadRequest says what is wrong with it."""
    if not isinstance(obj, Mapping):
        raise BadRequest("the pod must be a Pod object (a YAML or JSON mapping)")
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if kind != "Pod" or api_version not in (None, "v1"):
        raise BadRequest(f"expected kind Pod (apiVersion v1), got kind {kind!r}")
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or not meta.get("name"):
        raise BadRequest("the pod has no metadata.name")
    spec = obj.get("spec")
    if not isinstance(spec, Mapping) or not spec.get("containers"):
        raise BadRequest("the pod has no spec.containers")
    if spec.get("nodeName"):
        raise BadRequest(
            f"the pod already has spec.nodeName {spec['nodeName']!r}: no scheduler places it"
        )
    # A pod not yet created has no uid or namespace; plugins compare uids, so give it one.
    meta = {"namespace": "default", "uid": f"what-if-{uuid.uuid4()}", **meta}
    try:
        return PodView.from_dict({**obj, "metadata": meta})
    except MalformedObject as exc:
        raise BadRequest(f"invalid pod: {exc}") from None
