"""Protobuf request bodies, as kubectl 1.32's imperative creates and kube-scheduler send them.

The hex bodies were captured from `kubectl create ... -v=9` and `kube-scheduler -v=9` (the
"Request Body" dump).
"""

from __future__ import annotations

from typing import Any

import pytest

from kubesim import protobuf

NAMESPACE = (
    "6b3873000a0f0a02763112094e616d657370616365121c0a140a046578703412001a0022002a003200380042"
    "0012001a020a001a002200"
)
CONFIGMAP = (
    "6b3873000a0f0a0276311209436f6e6669674d617012270a130a03636d3212001a0022002a00320038004200"
    "12060a016112016212080a027a7a120279791a002200"
)
PRIORITY_CLASS = (
    "6b3873000a250a147363686564756c696e672e6b38732e696f2f7631120d5072696f72697479436c617373"
    "122c0a130a0370633212001a0022002a0032003800420010e8071800220968696768207072696f2a054e6576"
    "65721a002200"
)
SERVICE_CLUSTER_IP = (
    "6b3873000a0d0a027631120753657276696365128b010a210a047376633212001a0022002a00320038004200"
    "5a0b0a0361707012047376633212620a1b0a0738302d38303830120354435018502207080010903f1a002800"
    "0a1d0a083434332d38343433120354435018bb032207080010fb411a002800120b0a03617070120473766332"
    "1a002209436c757374657249503a00420052005a00600068001a020a001a002200"
)
SERVICE_NODE_PORT = (
    "6b3873000a0d0a02763112075365727669636512700a210a047376633312001a0022002a0032003800420"
    "05a0b0a0361707012047376633312470a200a0738302d6874747012035443501850220a080110001a046874"
    "74702880eb01120b0a036170701204737663331a0022084e6f6465506f72743a00420052005a0060006800"
    "1a020a001a002200"
)
PDB = (
    "6b3873000a200a09706f6c6963792f76311213506f6444697372757074696f6e427564676574123b0a140a04"
    "7064623212001a0022002a0032003800420012170a09080110001a03353025120a0a080a03617070120178"
    "1a0a080018002000280030001a002200"
)

# kube-scheduler v1.36.2's Scheduled event for default/ev (its client's -v=9 dump)
SCHEDULED_EVENT = (
    "6b3873000a190a106576656e74732e6b38732e696f2f763112054576656e7412fb010a2a0a1365762e313865"
    "6333643665333064626663643412001a0764656661756c7422002a00320038004200120c0886d8abd8061088"
    "be8ca803221164656661756c742d7363686564756c65722a1464656661756c742d7363686564756c65722d76"
    "6d320742696e64696e673a095363686564756c656442420a03506f64120764656661756c741a026576222432"
    "353833646466382d613864382d346338622d616639332d3135643763323465666631642a027631320232333a"
    "00522a5375636365737366756c6c792061737369676e65642064656661756c742f657620746f206e6f64652d"
    "305a064e6f726d616c62040a0012006a00720078001a002200"
)


@pytest.mark.parametrize(
    ("hex_body", "expected"),
    [
        (NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "exp4"}}),
        (
            SCHEDULED_EVENT,
            {
                "apiVersion": "events.k8s.io/v1",
                "kind": "Event",
                "metadata": {"name": "ev.18ec3d6e30dbfcd4", "namespace": "default"},
                "eventTime": "2026-11-28T14:58:14.889397Z",  # MicroTime: microseconds kept
                "reportingController": "default-scheduler",
                "reportingInstance": "default-scheduler-vm",
                "action": "Binding",
                "reason": "Scheduled",
                "regarding": {
                    "kind": "Pod",
                    "namespace": "default",
                    "name": "ev",
                    "uid": "2583ddf8-a8d8-4c8b-af93-15d7c24eff1d",
                    "apiVersion": "v1",
                    "resourceVersion": "23",
                },
                "note": "Successfully assigned default/ev to node-0",
                "type": "Normal",
            },
        ),
        (
            CONFIGMAP,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "cm2"},
                "data": {"a": "b", "zz": "yy"},
            },
        ),
        (
            PRIORITY_CLASS,
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "pc2"},
                "value": 1000,
                "description": "high prio",
                "preemptionPolicy": "Never",
            },
        ),
        (
            SERVICE_CLUSTER_IP,
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "svc2", "labels": {"app": "svc2"}},
                "spec": {
                    "ports": [
                        {"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080},
                        {"name": "443-8443", "protocol": "TCP", "port": 443, "targetPort": 8443},
                    ],
                    "selector": {"app": "svc2"},
                    "type": "ClusterIP",
                },
            },
        ),
        (
            SERVICE_NODE_PORT,
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "svc3", "labels": {"app": "svc3"}},
                "spec": {
                    "ports": [
                        {
                            "name": "80-http",
                            "protocol": "TCP",
                            "port": 80,
                            "targetPort": "http",
                            "nodePort": 30080,
                        }
                    ],
                    "selector": {"app": "svc3"},
                    "type": "NodePort",
                },
            },
        ),
        (
            PDB,
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "pdb2"},
                "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "x"}}},
            },
        ),
    ],
)
def test_kubectl_create_bodies_decode_to_their_json(hex_body: str, expected: Any) -> None:
    assert protobuf.decode_object(bytes.fromhex(hex_body)) == expected


def test_zero_priority_value_is_kept_as_go_writes_it() -> None:
    # PriorityClass.value has no omitempty: {"value": 0} is what JSON would carry
    body = bytes.fromhex(PRIORITY_CLASS.replace("10e807", "1000").replace("122c", "122b"))
    assert protobuf.decode_object(body)["value"] == 0


def test_negative_int32_decodes_signed() -> None:
    # int32 -1 on the wire is a ten-byte varint of two's complement
    wire = bytes.fromhex("10ffffffffffffffffff01")
    value = protobuf.decode_message(wire, protobuf.PRIORITY_CLASS)
    assert value["value"] == -1


def test_binary_data_is_base64_as_in_json() -> None:
    entry = bytes.fromhex("0a0362696e1203000102")  # key "bin", value 00 01 02
    message = bytes([0x1A, len(entry)]) + entry
    assert protobuf.decode_message(message, protobuf.CONFIG_MAP) == {"binaryData": {"bin": "AAEC"}}


@pytest.mark.parametrize(
    "body",
    [
        b"{}",  # JSON, not the envelope
        b"k8s\x00\x0a\xff",  # truncated length
        b"k8s\x00\x0a\x03\x0a\x01",  # nested truncation
        b"k8s\x00\x0b",  # wire type 3 (groups)
    ],
)
def test_malformed_envelopes_are_refused(body: bytes) -> None:
    with pytest.raises(protobuf.ProtobufError):
        protobuf.decode_object(body)


def test_delete_options_decode_as_a_protobuf_client_sends_them() -> None:
    # kube-scheduler's preemption deletes a victim with a protobuf DeleteOptions body
    type_meta = b"\x0a\x02v1\x12\x0dDeleteOptions"
    raw = b"\x08\x00" + b"\x12\x05\x0a\x03abc"  # gracePeriodSeconds 0, preconditions.uid
    body = (
        protobuf.MAGIC
        + b"\x0a"
        + bytes([len(type_meta)])
        + type_meta
        + b"\x12"
        + bytes([len(raw)])
        + raw
    )
    assert protobuf.decode_object(body) == {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "gracePeriodSeconds": 0,
        "preconditions": {"uid": "abc"},
    }


def test_kinds_without_a_schema_are_unsupported() -> None:
    type_meta = b"\x0a\x02v1\x12\x03Pod"
    body = protobuf.MAGIC + b"\x0a" + bytes([len(type_meta)]) + type_meta + b"\x12\x00"
    with pytest.raises(protobuf.UnsupportedKind, match="Pod"):
        protobuf.decode_object(body)
