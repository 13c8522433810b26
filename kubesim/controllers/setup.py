"""Builds the ControllerManager with every workload controller, and the HTTP endpoints that stop
and start a simulated node's kubelet (POST /kubesim/nodes/{name}/stop and .../start)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from kubesim import errors
from kubesim.api import Api
from kubesim.controllers.daemonset import DaemonSetController
from kubesim.controllers.deployment import DeploymentController
from kubesim.controllers.disruption import DisruptionController
from kubesim.controllers.garbagecollector import GarbageCollector
from kubesim.controllers.job import JobController
from kubesim.controllers.manager import Controller, ControllerManager
from kubesim.controllers.nodelifecycle import NodeLifecycleController
from kubesim.controllers.options import ControllerOptions
from kubesim.controllers.replicaset import ReplicaSetController
from kubesim.controllers.resourceclaim import ResourceClaimController
from kubesim.controllers.statefulset import StatefulSetController
from kubesim.controllers.tainteviction import TaintEvictionController
from kubesim.nodes import NodeSimulator

# (node name, "stop" | "start") -> whether the node exists; a front-end process of
# `--workers N` asks the store process, where the simulated kubelets run
KubeletSwitch = Callable[[str, str], Awaitable[bool]]


def switch_kubelet(simulator: NodeSimulator, name: str, action: str) -> bool:
    return simulator.stop_node(name) if action == "stop" else simulator.start_node(name)


def build_manager(api: Api, options: ControllerOptions) -> ControllerManager:
    controllers: list[Controller] = [
        DeploymentController(api),
        ReplicaSetController(api, "apps/replicasets"),
        ReplicaSetController(api, "replicationcontrollers"),
        StatefulSetController(api),
        DaemonSetController(api),
        JobController(api, options.workload_with_job),
        GarbageCollector(api),
        NodeLifecycleController(api, options),
        TaintEvictionController(api),
        DisruptionController(api),
        ResourceClaimController(api),
    ]
    return ControllerManager(api, options, controllers)


def add_node_routes(app: web.Application, switch: KubeletSwitch) -> None:
    """POST /kubesim/nodes/{name}/stop|start (bearer token as for the API); 404 if no node."""

    async def control(request: web.Request) -> web.Response:
        name, action = request.match_info["name"], request.match_info["action"]
        done = await switch(name, action)
        if not done:
            error = errors.ApiError(
                404, "NotFound", f'nodes "{name}" not found', {"name": name, "kind": "nodes"}
            )
            return web.json_response(error.status(), status=404)
        return web.json_response(
            {"node": name, "kubelet": "stopped" if action == "stop" else "running"}
        )

    app.router.add_post(r"/kubesim/nodes/{name}/{action:stop|start}", control)
