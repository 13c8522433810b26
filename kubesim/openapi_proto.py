"""The OpenAPI v2 document in protobuf (gnostic's openapi.v2.Document), as client-go asks for it.

client-go's discovery client requests /openapi/v2 only as
application/com.github.proto-openapi.spec.v2@v1.0+protobuf, so kubectl's v2 users (explain
--output plaintext-openapiv2, validation and patch fallbacks) need this form. Only the messages
and fields a Kubernetes spec uses are encoded; field numbers are those of gnostic's
openapiv2/OpenAPIv2.proto. Vendor extensions travel as YAML text (JSON is valid YAML).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

import orjson

JSON = dict[str, Any]


def _varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _bytes_field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _str(number: int, value: Any) -> bytes:
    return _bytes_field(number, str(value).encode()) if value not in (None, "") else b""


def _strs(number: int, values: Iterable[Any]) -> bytes:
    return b"".join(_bytes_field(number, str(v).encode()) for v in values)


def _bool(number: int, value: Any) -> bytes:
    return _varint(number << 3) + b"\x01" if value else b""


def _int(number: int, value: Any) -> bytes:
    return _varint(number << 3) + _varint(int(value)) if value else b""


def _double(number: int, value: Any) -> bytes:
    return _varint(number << 3 | 1) + struct.pack("<d", float(value))


def _msg(number: int, payload: bytes, always: bool = False) -> bytes:
    return _bytes_field(number, payload) if payload or always else b""


def _any_yaml(value: Any) -> bytes:
    return _str(2, orjson.dumps(value).decode())


def _extensions(number: int, node: JSON) -> bytes:
    return b"".join(
        _msg(number, _str(1, key) + _msg(2, _any_yaml(value), always=True), always=True)
        for key, value in node.items()
        if key.startswith("x-")
    )


def schema(node: JSON) -> bytes:
    out = [_str(1, node.get("$ref")), _str(2, node.get("format")), _str(4, node.get("description"))]
    if "default" in node:
        out.append(_msg(5, _any_yaml(node["default"]), always=True))
    for key, number in (("maximum", 7), ("minimum", 9)):
        if key in node:
            out.append(_double(number, node[key]))
    out.append(_bool(16, node.get("uniqueItems")))
    out.append(_strs(19, node.get("required") or []))
    additional = node.get("additionalProperties")
    if isinstance(additional, dict):
        out.append(_msg(21, _msg(1, schema(additional), always=True), always=True))
    elif isinstance(additional, bool):
        out.append(_msg(21, _varint(2 << 3) + (b"\x01" if additional else b"\x00"), always=True))
    kind = node.get("type")
    if kind:
        out.append(_msg(22, _strs(1, kind if isinstance(kind, list) else [kind]), always=True))
    if isinstance(node.get("items"), dict):
        out.append(_msg(23, _msg(1, schema(node["items"]), always=True), always=True))
    out.extend(_msg(24, schema(s), always=True) for s in node.get("allOf") or [])
    properties = node.get("properties")
    if isinstance(properties, dict):
        named = b"".join(
            _msg(1, _str(1, name) + _msg(2, schema(value), always=True), always=True)
            for name, value in properties.items()
        )
        out.append(_msg(25, named, always=True))
    out.append(_extensions(31, node))
    return b"".join(out)


def _parameter(param: JSON) -> bytes:
    where = param.get("in")
    if where == "body":
        body = (
            _str(1, param.get("description"))
            + _str(2, param.get("name"))
            + _str(3, where)
            + _bool(4, param.get("required"))
            + _msg(5, schema(param.get("schema") or {}), always=True)
        )
        return _msg(1, _msg(1, body, always=True), always=True)
    common = (
        _bool(1, param.get("required"))
        + _str(2, where)
        + _str(3, param.get("description"))
        + _str(4, param.get("name"))
    )
    if where == "path":
        sub = common + _str(5, param.get("type")) + _bool(19, param.get("uniqueItems"))
        non_body = _msg(4, sub, always=True)
    else:  # query (kubesim declares no header or formData parameters)
        sub = common + _str(6, param.get("type")) + _bool(20, param.get("uniqueItems"))
        non_body = _msg(3, sub, always=True)
    return _msg(1, _msg(2, non_body, always=True), always=True)


def _parameters(number: int, params: list[JSON]) -> bytes:
    return b"".join(_msg(number, _parameter(p), always=True) for p in params)


def _operation(op: JSON) -> bytes:
    responses = b""
    for code, response in (op.get("responses") or {}).items():
        body = _str(1, response.get("description"))
        if isinstance(response.get("schema"), dict):
            body += _msg(2, _msg(1, schema(response["schema"]), always=True), always=True)
        value = _msg(1, body, always=True)
        responses += _msg(1, _str(1, code) + _msg(2, value, always=True), always=True)
    return b"".join(
        [
            _strs(1, op.get("tags") or []),
            _str(3, op.get("description")),
            _str(5, op.get("operationId")),
            _strs(6, op.get("produces") or []),
            _strs(7, op.get("consumes") or []),
            _parameters(8, op.get("parameters") or []),
            _msg(9, responses, always=True),
            _extensions(13, op),
        ]
    )


_METHODS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def _path_item(item: JSON) -> bytes:
    out = [
        _msg(number, _operation(item[method]), always=True)
        for method, number in _METHODS.items()
        if method in item
    ]
    out.append(_parameters(9, item.get("parameters") or []))
    return b"".join(out)


def document(doc: JSON) -> bytes:
    """Encode a Swagger 2.0 JSON document as a gnostic openapi.v2.Document message."""
    info = doc.get("info") or {}
    paths = b"".join(
        _msg(2, _str(1, path) + _msg(2, _path_item(item), always=True), always=True)
        for path, item in (doc.get("paths") or {}).items()
    )
    definitions = b"".join(
        _msg(1, _str(1, name) + _msg(2, schema(value), always=True), always=True)
        for name, value in (doc.get("definitions") or {}).items()
    )
    return b"".join(
        [
            _str(1, doc.get("swagger")),
            _msg(2, _str(1, info.get("title")) + _str(2, info.get("version"))),
            _msg(8, paths, always=True),
            _msg(9, definitions, always=True),
        ]
    )
