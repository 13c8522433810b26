"""A stand-in for kube-scheduler v1.36 under `aiosched bench --scheduler-command`, for machines
without a Go toolchain: it checks what the real one checks before it schedules, then binds
pods round robin (its placements are not what is tested).

What it holds the bench and kubesim to, as kube-scheduler v1.36.2 does:
- with --config, --kubeconfig is ignored and the config's clientConnection.kubeconfig is the
  cluster (cmd/kube-scheduler/app/options/options.go: "invalid configuration: no configuration
  has been provided" without one);
- --secure-port needs --authentication-kubeconfig and --authorization-kubeconfig outside a pod,
  and a port nobody holds;
- before its first cycle it lists every resource its informers watch with the default feature
  gates, and waits for all of them: LISTED below (pkg/scheduler's informer uses, v1.36.2, as
  vendored by openshift/microshift). A resource the API server does not serve stops it here
  with the reflector's message (the real one retries forever and never schedules).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import socket
import ssl
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.kubeapi import read_kubeconfig

#: (API path, the Go type the reflector names) listed before the first scheduling cycle.
LISTED = (
    ("/api/v1/pods", "*v1.Pod"),
    ("/api/v1/nodes", "*v1.Node"),
    ("/api/v1/namespaces", "*v1.Namespace"),
    ("/api/v1/persistentvolumes", "*v1.PersistentVolume"),
    ("/api/v1/persistentvolumeclaims", "*v1.PersistentVolumeClaim"),
    ("/api/v1/services", "*v1.Service"),
    ("/api/v1/replicationcontrollers", "*v1.ReplicationController"),
    ("/apis/apps/v1/replicasets", "*v1.ReplicaSet"),
    ("/apis/apps/v1/statefulsets", "*v1.StatefulSet"),
    ("/apis/policy/v1/poddisruptionbudgets", "*v1.PodDisruptionBudget"),
    ("/apis/storage.k8s.io/v1/storageclasses", "*v1.StorageClass"),
    ("/apis/storage.k8s.io/v1/csinodes", "*v1.CSINode"),
    ("/apis/storage.k8s.io/v1/csidrivers", "*v1.CSIDriver"),
    ("/apis/storage.k8s.io/v1/csistoragecapacities", "*v1.CSIStorageCapacity"),
    ("/apis/storage.k8s.io/v1/volumeattachments", "*v1.VolumeAttachment"),
    ("/apis/resource.k8s.io/v1/deviceclasses", "*v1.DeviceClass"),
    ("/apis/resource.k8s.io/v1/resourceclaims", "*v1.ResourceClaim"),
    ("/apis/resource.k8s.io/v1/resourceslices", "*v1.ResourceSlice"),
)


class Api:
    def __init__(self, kubeconfig: Path) -> None:
        endpoint = read_kubeconfig(kubeconfig)
        self.server = endpoint.server
        self.headers = {
            "Authorization": f"Bearer {endpoint.token}",
            "Content-Type": "application/json",
        }
        self.context = ssl.create_default_context()
        if endpoint.ca_pem:
            self.context = ssl.create_default_context(cadata=endpoint.ca_pem.decode())

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.server + path, data=data, method=method, headers=self.headers
        )
        with urllib.request.urlopen(request, context=self.context, timeout=30) as response:
            return json.loads(response.read() or b"null")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kubeconfig")
    parser.add_argument("--config", required=True)
    parser.add_argument("--secure-port", type=int)
    parser.add_argument("--authentication-kubeconfig")
    parser.add_argument("--authorization-kubeconfig")
    args = parser.parse_args()
    config = yaml.safe_load(Path(args.config).read_text()) or {}
    kubeconfig = (config.get("clientConnection") or {}).get("kubeconfig")
    if not kubeconfig:  # --kubeconfig is ignored with --config, as kube-scheduler ignores it
        print("invalid configuration: no configuration has been provided", file=sys.stderr)
        return 1
    held = None
    if args.secure_port is not None:
        if not (args.authentication_kubeconfig and args.authorization_kubeconfig):
            print(
                "failed to get delegated authentication kubeconfig: failed to get in-cluster "
                "config: unable to load in-cluster configuration",
                file=sys.stderr,
            )
            return 1
        held = socket.socket()
        try:
            held.bind(("127.0.0.1", args.secure_port))
        except OSError:
            print(
                f"failed to create listener: failed to listen on 0.0.0.0:{args.secure_port}: "
                "listen tcp 0.0.0.0: bind: address already in use",
                file=sys.stderr,
            )
            return 1
        # bound, not listening: the port is ours (a second bind fails) and the bench's plain
        # HTTP scrape is refused at once, as a TLS port answers it with an error
    api = Api(Path(kubeconfig))
    for path, go_type in LISTED:
        try:
            api.call("GET", path + "?limit=500")
        except urllib.error.HTTPError as exc:
            print(
                f"failed to list {go_type}: the server could not find the requested resource "
                f"(HTTP {exc.code} for {path})",
                file=sys.stderr,
            )
            return 1
    print("all informers synced; scheduling", flush=True)
    return schedule_round_robin(api)


def schedule_round_robin(api: Api) -> int:
    while True:
        nodes = [n["metadata"]["name"] for n in api.call("GET", "/api/v1/nodes")["items"]]
        pending = api.call("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3D")["items"]
        for pod, node in zip(pending, itertools.cycle(nodes or [""]), strict=False):
            if not node:
                break
            meta = pod["metadata"]
            binding = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node},
            }
            with contextlib.suppress(urllib.error.HTTPError):  # bound or deleted meanwhile
                api.call(
                    "POST",
                    f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/binding",
                    binding,
                )
        time.sleep(0.2)


if __name__ == "__main__":
    sys.exit(main())
