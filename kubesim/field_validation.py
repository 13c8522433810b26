"""What ?fieldValidation makes of the unknown fields of a write, in upstream's words.

Upstream: staging/src/k8s.io/apiserver/pkg/endpoints/handlers (create.go, update.go: a strict
decoding error goes through transformDecodeError, a 400; patch.go: for JSON and merge patches
the patched object's JSON, for strategic merge patches the patch map as `%+v` prints it,
becomes the value of a 422 `field.Invalid` on `patch`) and apimachinery's
runtime.NewStrictDecodingError (`strict decoding error: unknown field "a", unknown field "b"`).
Warn answers each field as a Warning header (addStrictDecodingWarnings); Ignore says nothing.
Either way the fields are dropped (openapi.prune_unknown_fields, customresources' pruning).
"""

from __future__ import annotations

import decimal
import json
import math
from typing import Any

from kubesim import errors

STRICT = "Strict"
WARN = "Warn"
IGNORE = "Ignore"


def strict_decoding_error(unknown: list[str]) -> str:
    return "strict decoding error: " + ", ".join(f'unknown field "{path}"' for path in unknown)


def on_write(unknown: list[str], mode: str, body: Any, kind: str, api_version: str) -> list[str]:
    """A create's or an update's unknown fields: the warnings for Warn, a 400 for Strict
    (`Pod in version "v1" cannot be handled as a Pod: strict decoding error: ...`: the kind
    and version the body names, else the resource's)."""
    if not unknown or mode == IGNORE:
        return []
    if mode != STRICT:
        return [f'unknown field "{path}"' for path in unknown]
    named_kind = body.get("kind") if isinstance(body, dict) else None
    named_version = body.get("apiVersion") if isinstance(body, dict) else None
    decoded_kind = named_kind if isinstance(named_kind, str) and named_kind else kind
    version = named_version if isinstance(named_version, str) and named_version else api_version
    version = version.rsplit("/", 1)[-1]
    raise errors.bad_request(
        f'{decoded_kind} in version "{version}" cannot be handled as a {kind}: '
        f"{strict_decoding_error(unknown)}"
    )


def on_patch(unknown: list[str], mode: str, patch_type: str, patch: Any, patched: Any) -> list[str]:
    """A patch's unknown fields (those of the patched object): the warnings for Warn, for
    Strict a 422 whose value is what upstream shows (the patched object's JSON for JSON and
    merge patches, the patch as Go prints a map for strategic merge patches)."""
    if not unknown or mode == IGNORE:
        return []
    if mode != STRICT:
        return [f'unknown field "{path}"' for path in unknown]
    shown = go_value_text(patch) if patch_type == "strategic" else go_json(patched)
    body = f"Invalid value: {go_quote(shown)}: {strict_decoding_error(unknown)}"
    raise errors.ApiError(
        422,
        "Invalid",
        f' "" is invalid: patch: {body}',  # errors.NewInvalid(schema.GroupKind{}, "", ...)
        {"causes": [{"reason": "FieldValueInvalid", "message": body, "field": "patch"}]},
    )


def go_json(value: Any) -> str:
    """encoding/json's text of a map-backed document: keys sorted, no spaces, `<`, `>`, `&`,
    U+2028 and U+2029 escaped as \\u sequences."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escaped)
    return text


def go_value_text(value: Any) -> str:
    """fmt's %+v of a decoded JSON value: `map[a:1 b:[x y]]`, keys sorted, `<nil>` for null."""
    if isinstance(value, dict):
        items = " ".join(f"{key}:{go_value_text(value[key])}" for key in sorted(value))
        return f"map[{items}]"
    if isinstance(value, list):
        return "[" + " ".join(go_value_text(item) for item in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _go_float(value)
    return str(value)


def _go_float(value: float) -> str:
    """fmt's %v of a float64 (strconv.FormatFloat(v, 'g', -1, 64)): the shortest digits, in
    exponent form when the decimal exponent is below -4 or at least 6."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0"
    shortest = decimal.Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, shortest.digits)).rstrip("0") or "0"
    exponent = len(shortest.digits) + int(shortest.exponent) - 1
    if exponent < -4 or exponent >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if exponent < 0:
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    whole = digits[: exponent + 1].ljust(exponent + 1, "0")
    fraction = digits[exponent + 1 :]
    return sign + whole + ("." + fraction if fraction else "")


_GO_ESCAPES = {'"': '\\"', "\\": "\\\\", "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n",
               "\r": "\\r", "\t": "\\t", "\v": "\\v"}  # fmt: skip


def go_quote(text: str) -> str:
    """strconv.Quote: printable characters as they are, the rest escaped."""
    out = ['"']
    for char in text:
        escaped = _GO_ESCAPES.get(char)
        if escaped is not None:
            out.append(escaped)
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) <= 0xFFFF:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    out.append('"')
    return "".join(out)
