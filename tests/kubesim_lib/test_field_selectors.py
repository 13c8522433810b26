"""kubesim.selectors: per-kind field selectors (label selectors: tests/apimachinery)."""

import pytest

from kubesim.selectors import SelectorError, parse_field_selector

POD = {
    "metadata": {"name": "p1", "namespace": "ns1"},
    "spec": {"nodeName": "n1", "schedulerName": "default-scheduler", "restartPolicy": "Always"},
    "status": {"phase": "Running", "podIP": "10.0.0.1"},
}


@pytest.mark.parametrize(
    ("kind", "text", "obj", "matches"),
    [
        ("Pod", "spec.nodeName=n1", POD, True),
        ("Pod", "spec.nodeName==n1", POD, True),
        ("Pod", "spec.nodeName!=n1", POD, False),
        ("Pod", "spec.nodeName=", POD, False),
        ("Pod", "spec.nodeName=", {"metadata": {"name": "x"}, "spec": {}}, True),
        ("Pod", "status.phase!=Succeeded,status.phase!=Failed", POD, True),
        ("Pod", "metadata.name=p1,metadata.namespace=ns1", POD, True),
        ("Pod", "spec.schedulerName=other", POD, False),
        ("Pod", "status.podIP=10.0.0.1", POD, True),
        ("Pod", "spec.hostNetwork=false", POD, True),
        ("Pod", "", POD, True),
        ("Node", "spec.unschedulable=false", {"metadata": {"name": "n"}, "spec": {}}, True),
        ("Node", "spec.unschedulable=true", {"spec": {"unschedulable": True}}, True),
        ("Namespace", "status.phase=Active", {"status": {"phase": "Active"}}, True),
        (
            "Event",
            "involvedObject.name=p1,reason=Scheduled",
            {"involvedObject": {"name": "p1"}, "reason": "Scheduled"},
            True,
        ),
        (
            "Event",
            "source=default-scheduler",
            {"source": {}, "reportingComponent": "default-scheduler"},
            True,
        ),
        ("ConfigMap", "metadata.name=a\\,b", {"metadata": {"name": "a,b"}}, True),
    ],
)
def test_field_matches(kind: str, text: str, obj: dict[str, object], matches: bool) -> None:
    assert parse_field_selector(text, kind).matches(obj) is matches


@pytest.mark.parametrize(
    ("kind", "text", "message"),
    [
        ("Pod", "spec.foo=bar", "field label not supported: spec.foo"),
        ("Node", "spec.nodeName=x", "field label not supported: spec.nodeName"),
        ("ConfigMap", "status.phase=x", "field label not supported: status.phase"),
        (
            "Pod",
            "spec.nodeName",
            "invalid selector: 'spec.nodeName'; can't understand 'spec.nodeName'",
        ),
    ],
)
def test_field_errors(kind: str, text: str, message: str) -> None:
    with pytest.raises(SelectorError) as err:
        parse_field_selector(text, kind)
    assert str(err.value) == message
