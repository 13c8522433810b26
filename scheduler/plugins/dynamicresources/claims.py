"""A pod's ResourceClaims as DynamicResources reads them (upstream's foreachPodResourceClaim,
with resourceclaim.Name and IsForPod): each must exist, must not be being deleted, and a claim
generated from a template must belong to the pod. Shared by the plugin and its hints.
"""

from __future__ import annotations

from scheduler.api.errors import MalformedObject
from scheduler.api.objects import PodView
from scheduler.api.resource import ClaimNotCreatedYet, ResourceClaimView, claim_name, is_for_pod
from scheduler.listers.resource_objects import ResourceObjects


class ClaimsNotReady(Exception):
    """The pod cannot be scheduled yet; the message is upstream's."""


def pod_claims(pod: PodView, resources: ResourceObjects) -> list[ResourceClaimView]:
    """The pod's claims in spec order (entries the controller decided need no claim are
    left out); ClaimsNotReady when one is missing, being deleted or not the pod's."""
    claims: list[ResourceClaimView] = []
    for entry in pod.resource_claims:
        try:
            name, must_check_owner = claim_name(
                pod.namespace, pod.name, entry, pod.resource_claim_statuses
            )
        except (ClaimNotCreatedYet, MalformedObject) as err:
            raise ClaimsNotReady(str(err)) from None
        if name is None:
            continue
        claim = resources.claim(pod.namespace, name)
        if claim is None:
            raise ClaimsNotReady(f'resourceclaim.resource.k8s.io "{name}" not found')
        if claim.deleting:
            raise ClaimsNotReady(f'resourceclaim "{claim.name}" is being deleted')
        if must_check_owner and not is_for_pod(claim, pod.uid):
            raise ClaimsNotReady(
                f"ResourceClaim {claim.namespace}/{claim.name} was not created for pod "
                f"{pod.namespace}/{pod.name} (pod is not owner)"
            )
        claims.append(claim)
    return claims
