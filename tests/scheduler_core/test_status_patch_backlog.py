"""A pod that fails faster than the client lets PodScheduled=False patches out (a gang retried
round after round with SchedulerPopFromBackoffQ) leaves one patch waiting, the newest, not one
per failure: what the API server ends with is the last failure's message, written in at most
two calls (one in flight, then the newest)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness import running_scheduler


async def test_a_pods_status_patches_keep_only_the_newest(tmp_path: Path) -> None:
    async with running_scheduler(tmp_path) as h:
        await h.api.create_pod("p")  # no node: it fails and is patched once
        await h.wait_for(
            lambda: h.api.get_pod("p"),
            what="the pod",
        )
        failures = h.scheduler.binding._failures
        client = failures._client
        patches: list[str] = []
        request = client.request

        async def counting(method: str, path: str, **kwargs: Any) -> Any:
            if method == "PATCH" and path.endswith("/pods/p/status"):
                patches.append(kwargs["body"]["status"]["conditions"][0]["message"])
            return await request(method, path, **kwargs)

        client.request = counting  # type: ignore[method-assign]
        pod = await h.wait_for(
            lambda: h.scheduler.pod_informer.store.get("default/p"), what="informer's pod"
        )
        # Fifty failures in one go, faster than any patch can be sent.
        for i in range(50):
            failures._spawn_status_update(pod, "Unschedulable", f"round {i}", None)

        async def final_message() -> str:
            body = await h.api.get_pod("p")
            for condition in body.get("status", {}).get("conditions") or ():
                if condition["type"] == "PodScheduled":
                    return str(condition["message"])
            return ""

        await h.wait_for(lambda: _equals(final_message(), "round 49"), what="the newest message")
        assert len(patches) <= 2 and patches[-1] == "round 49"
        assert failures._status_updates == {}  # the sender is done and forgot the pod


async def _equals(value: Any, want: str) -> bool:
    return bool(await value == want)
