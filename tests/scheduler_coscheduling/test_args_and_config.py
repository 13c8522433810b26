"""CoschedulingArgs (scheduler-plugins' defaults and ValidateCoschedulingArgs) through
`check-config`, and the configuration scheduler-plugins documents for Coscheduling: it loads
(queueSort Coscheduling, PrioritySort disabled) and schedules a gang all or nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml

from scheduler.app.cli import main
from scheduler.framework.interface import CycleState
from scheduler.framework.registry import ArgsError
from scheduler.listers.cluster_objects import ClusterObjects
from scheduler.plugins.coscheduling import CoschedulingArgs
from scheduler.plugins.coscheduling.args import decode_coscheduling_args
from scheduler.testing import (
    MakeNode,
    framework_from_config,
    handle_deps,
    make_list_snapshot,
    node_infos,
)
from tests.scheduler_coscheduling.kit import member, pod_group

# scheduler-plugins' pkg/coscheduling/README.md ("Advanced Configuration"), verbatim.
DOCUMENTED = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 60
      podGroupBackoffSeconds: 10
      podGroupRejectPercentage: 10
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
"""

# The same with the points named one by one, as older scheduler-plugins manifests do.
EXPLICIT = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: PrioritySort
    preFilter:
      enabled:
      - name: Coscheduling
    postFilter:
      enabled:
      - name: Coscheduling
    permit:
      enabled:
      - name: Coscheduling
    reserve:
      enabled:
      - name: Coscheduling
"""


def test_defaults() -> None:
    assert decode_coscheduling_args(None) == CoschedulingArgs(60, 0, 10)
    assert decode_coscheduling_args(None).to_config() == {
        "permitWaitingTimeSeconds": 60,
        "podGroupBackoffSeconds": 0,
        "podGroupRejectPercentage": 10,
    }


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"permitWaitingTimeSeconds": -1},
         "permitWaitingTimeSeconds: Invalid value: -1: must be greater than 0"),
        ({"podGroupBackoffSeconds": -1},
         "podGroupBackoffSeconds: Invalid value: -1: must be greater than 0"),
        ({"podGroupRejectPercentage": 101},
         "podGroupRejectPercentage: Invalid value: 101: must be between 0 and 100"),
        ({"kubeMaster": "x"}, "kubeMaster: unknown field"),
        ({"permitWaitingTimeSeconds": "60"},
         "permitWaitingTimeSeconds: expected an integer, got '60'"),
    ],
)  # fmt: skip
def test_validation(raw: dict[str, object], message: str) -> None:
    with pytest.raises(ArgsError) as err:
        decode_coscheduling_args(raw)
    assert str(err.value) == message


def _check_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> tuple[int, str, str]:
    file = tmp_path / "config.yaml"
    file.write_text(text)
    code = main(["check-config", str(file)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_check_config_accepts_the_documented_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _check_config(tmp_path, capsys, DOCUMENTED)
    assert (code, err) == (0, "")
    profile = yaml.safe_load(out)["profiles"][0]
    assert profile["pluginConfig"]["Coscheduling"] == {
        "permitWaitingTimeSeconds": 60,
        "podGroupBackoffSeconds": 10,
        "podGroupRejectPercentage": 10,
    }


def test_check_config_rejects_bad_args(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = DOCUMENTED.replace("podGroupBackoffSeconds: 10", "podGroupBackoffSeconds: -3")
    code, out, err = _check_config(tmp_path, capsys, bad)
    assert (code, out) == (1, "")
    assert "podGroupBackoffSeconds: Invalid value: -3: must be greater than 0" in err


def test_coscheduling_is_not_in_the_default_profile() -> None:
    fwk = framework_from_config(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    )
    assert "Coscheduling" not in fwk.plugins
    assert [plugin.name for plugin in fwk.queue_sort_plugins] == ["PrioritySort"]


@pytest.mark.parametrize("config", [DOCUMENTED, EXPLICIT], ids=["multiPoint", "explicit"])
async def test_documented_configuration_loads_and_schedules_a_gang(config: str) -> None:
    nodes = [MakeNode(f"node{i}").capacity({"cpu": "4"}).obj() for i in range(2)]
    pods = [member(f"w{i}", "ns", "pg").req({"cpu": "1"}).obj() for i in range(3)]
    objects = ClusterObjects()
    objects.pod_groups.add(pod_group("pg", "ns", 3), *pods)
    fwk = framework_from_config(
        config, handle_deps(make_list_snapshot(nodes), cluster_objects=objects)
    )
    assert [p.name for p in fwk.queue_sort_plugins] == ["Coscheduling"]
    assert "PrioritySort" not in fwk.plugins
    for point in ("pre_filter", "post_filter", "permit", "reserve"):
        assert "Coscheduling" in [p.name for p in getattr(fwk, f"{point}_plugins")], point
    # Members reach Permit one by one: the first two wait, the third allows them all.
    infos = node_infos(nodes)
    waits = []
    for index, pod in enumerate(pods):
        state = CycleState()
        _, status, _ = fwk.run_pre_filter_plugins(state, pod, infos)
        assert status.is_success, status
        assert fwk.run_reserve_plugins_reserve(state, pod, "node0").is_success
        permit = fwk.run_permit_plugins(state, pod, "node0")
        if index < 2:
            assert permit.is_wait
            waits.append(asyncio.ensure_future(fwk.wait_on_permit(pod)))
        else:
            assert permit.is_success
    assert all(s.is_success for s in await asyncio.gather(*waits))
