"""kubesim's validation of the Lt / Gt toleration operators under the API server's
TaintTolerationComparisonOperators gate, with upstream's messages.

Cases: pkg/apis/core/validation/validation_test.go (TestNumericTolerationsWithFeatureGate, the
"numeric operator ... requires feature gate" rows of TestValidatePodSpec, v1.36) and
pkg/api/pod/util.go's allowTaintTolerationComparisonOperators (an old pod that uses them may
keep them with the gate off).
"""

import argparse
from typing import Any

import pytest

from kubesim import cli
from kubesim.cluster import Cluster
from kubesim.controllers.daemonset import should_run
from kubesim.controllers.tainteviction import eviction_delay
from kubesim.validation import validate

SLA = "node.kubernetes.io/sla"


def pod(*tolerations: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], "tolerations": list(tolerations)},
    }


def numeric(operator: str, value: str, key: str = SLA) -> dict[str, Any]:
    return {"key": key, "operator": operator, "value": value, "effect": "NoSchedule"}


def errors(obj: dict[str, Any], gate: bool, old: dict[str, Any] | None = None) -> list[str]:
    return [cause.error() for cause in validate("Pod", obj, old, gate)]


def canonical(value: str) -> str:
    return (
        f'spec.tolerations[0].value: Invalid value: "{value}": must be a valid decimal integer '
        "in canonical form"
    )


def syntax(value: str) -> str:
    return (
        f'spec.tolerations[0].value: Invalid value: "{value}": strconv.ParseInt: parsing '
        f'"{value}": invalid syntax'
    )


# (name, toleration, gate, the errors in full; upstream checks one substring of them)
CASES: list[tuple[str, dict[str, Any], bool, list[str]]] = [
    (
        "Gt operator with valid numeric value and feature gate enabled",
        numeric("Gt", "950"),
        True,
        [],
    ),
    (
        "Lt operator with valid numeric value and feature gate enabled",
        numeric("Lt", "800"),
        True,
        [],
    ),
    (
        "Gt operator with negative numeric value and feature gate enabled",
        numeric("Gt", "-100", "test-key"),
        True,
        [],
    ),
    (
        "Gt operator with non-numeric value and feature gate enabled",
        numeric("Gt", "high"),
        True,
        [canonical("high"), syntax("high")],
    ),
    (
        "Gt operator with leading zeros and feature gate enabled",
        numeric("Gt", "0950"),
        True,
        [canonical("0950")],
    ),
    ("Gt operator with value '0' and feature gate enabled", numeric("Gt", "0"), True, []),
    (
        "Gt operator with decimal value and feature gate enabled",
        numeric("Gt", "95.5"),
        True,
        [canonical("95.5"), syntax("95.5")],
    ),
    (
        "Gt operator with just minus sign and feature gate enabled",
        numeric("Gt", "-"),
        True,
        [canonical("-"), syntax("-")],
    ),
    (
        "Gt operator with plus sign and feature gate enabled",
        numeric("Gt", "+100"),
        True,
        [canonical("+100")],
    ),
    (
        "Gt operator with space in value and feature gate enabled",
        numeric("Gt", "95 0"),
        True,
        [canonical("95 0"), syntax("95 0")],
    ),
    (
        "Gt operator with empty value and feature gate enabled",
        numeric("Gt", ""),
        True,
        ['spec.tolerations[0].value: Invalid value: "": must be non-empty', syntax("")],
    ),
    (
        "Lt operator with feature gate disabled",
        numeric("Lt", "950"),
        False,
        [
            'spec.tolerations[0].operator: Unsupported value: "Lt": supported values: "Equal", '
            '"Exists", "Lt", "Gt"'
        ],
    ),
    (
        "Gt operator with feature gate disabled",
        numeric("Gt", "950"),
        False,
        [
            'spec.tolerations[0].operator: Unsupported value: "Gt": supported values: "Equal", '
            '"Exists", "Lt", "Gt"'
        ],
    ),
    (
        "Gt operator with max int64 value and feature gate enabled",
        numeric("Gt", "9223372036854775807"),
        True,
        [],
    ),
    (
        "Gt operator with overflow value and feature gate enabled",
        numeric("Gt", "9223372036854775808"),
        True,
        [
            'spec.tolerations[0].value: Invalid value: "9223372036854775808": strconv.ParseInt: '
            'parsing "9223372036854775808": value out of range'
        ],
    ),
    # Other operators keep their list without Lt / Gt, whatever the gate.
    (
        "unknown operator, feature gate enabled",
        numeric("Ge", "1"),
        True,
        [
            'spec.tolerations[0].operator: Unsupported value: "Ge": supported values: "Equal", '
            '"Exists"'
        ],
    ),
]


@pytest.mark.parametrize(("name", "toleration", "gate", "want"), CASES, ids=[c[0] for c in CASES])
def test_numeric_tolerations(
    name: str, toleration: dict[str, Any], gate: bool, want: list[str]
) -> None:
    assert errors(pod(toleration), gate) == want


def test_template_follows_the_gate() -> None:
    """A Deployment's pod template is validated with the same option."""
    deployment = {
        "metadata": {"name": "d", "namespace": "default"},
        "spec": {"template": {"spec": pod(numeric("Lt", "950"))["spec"]}},
    }
    assert validate("Deployment", deployment, None, True) == []
    assert [c.field for c in validate("Deployment", deployment, None, False)] == [
        "spec.template.spec.tolerations[0].operator"
    ]


@pytest.mark.parametrize(
    ("old_toleration", "want"),
    [
        # the old pod uses Gt: a new Lt toleration is allowed with the gate off
        (numeric("Gt", "950"), []),
        # the old pod does not: refused as on create
        (
            {"key": "k", "operator": "Exists"},
            [
                'spec.tolerations[1].operator: Unsupported value: "Lt": supported values: '
                '"Equal", "Exists", "Lt", "Gt"'
            ],
        ),
    ],
    ids=["old-uses-operators", "old-does-not"],
)
def test_update_keeps_operators_the_old_pod_uses(
    old_toleration: dict[str, Any], want: list[str]
) -> None:
    old = pod(old_toleration)
    new = pod(old_toleration, numeric("Lt", "800"))
    assert errors(new, False, old) == want


# kube-controller-manager's side of the gate: the NoExecute taint eviction and the DaemonSet
# controller hand it to ToleratesTaint (tainteviction's GetMatchingTolerations,
# daemon_controller.go's predicates, v1.36).
NO_EXECUTE_950 = {"key": SLA, "value": "950", "effect": "NoExecute"}


@pytest.mark.parametrize(
    ("gate", "want"), [(True, None), (False, 0.0)], ids=["gate-on", "gate-off"]
)
def test_taint_eviction_compares_values(gate: bool, want: float | None) -> None:
    gt = {"key": SLA, "operator": "Gt", "value": "900", "effect": "NoExecute"}
    assert eviction_delay(pod(gt), [NO_EXECUTE_950], 0.0, gate) == want


@pytest.mark.parametrize(
    ("gate", "want"), [(True, (True, True)), (False, (False, False))], ids=["gate-on", "gate-off"]
)
def test_daemon_pod_placement_compares_values(gate: bool, want: tuple[bool, bool]) -> None:
    node = {"metadata": {"name": "n1", "labels": {}}, "spec": {"taints": [NO_EXECUTE_950]}}
    lt = {"key": SLA, "operator": "Lt", "value": "1000", "effect": "NoExecute"}
    assert should_run(pod(lt)["spec"], node, gate) == want


@pytest.mark.parametrize(
    ("flag", "want"),
    [([], False), (["--feature-gates", "TaintTolerationComparisonOperators=true"], True)],
    ids=["default", "gate-on"],
)
def test_aiosched_cluster_flag_reaches_the_api(flag: list[str], want: bool) -> None:
    """`aiosched cluster --feature-gates TaintTolerationComparisonOperators=true` turns the
    gate on for the API server and its controllers (one value on the Api they share)."""
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    config = cli.config_from_args(parser.parse_args(flag))
    assert config.taint_comparison_operators is want
    assert Cluster(config).api.taint_comparison_operators is want
