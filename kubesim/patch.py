"""PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch.

Strategic merge follows k8s.io/apimachinery/pkg/util/strategicpatch/patch.go as the API server runs
it (StrategicMergeMapPatch: parallel lists merged, unmatched nulls ignored), with the per-field
patchStrategy/patchMergeKey facts from kubesim.patch_schema. Every function returns a new object
and leaves its arguments untouched.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from kubesim.patch_schema import FieldMeta, Struct, field_meta, schema_for_kind

DIRECTIVE = "$patch"
RETAIN_KEYS = "$retainKeys"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList"
SET_ELEMENT_ORDER = "$setElementOrder"

Json = Any


#: k8s.io/apiserver/pkg/endpoints/handlers/patch.go maxJSONPatchOperations, and the size a
#: JSON patch's copy operations may add in all (server/config.go JSONPatchMaxCopyBytes, set as
#: evanphx/json-patch's AccumulatedCopySizeLimit).
MAX_JSON_PATCH_OPERATIONS = 10_000
JSON_PATCH_MAX_COPY_BYTES = 3 * 1024 * 1024


class PatchError(ValueError):
    """A patch that cannot be applied; str() is the message the API server would return."""


class PatchTooLarge(PatchError):
    """A JSON patch with more operations than the API server applies (413)."""


def copy_json(value: Json) -> Json:
    """Deep copy of decoded JSON (dicts, lists, scalars); much faster than copy.deepcopy."""
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    return value


def json_equal(a: Json, b: Json) -> bool:
    """JSON equality: unlike Python's ==, true is not 1 and 1 == 1.0 (both are JSON numbers)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict):
        return (
            isinstance(b, dict)
            and a.keys() == b.keys()
            and all(json_equal(v, b[k]) for k, v in a.items())
        )
    if isinstance(a, list):
        return (
            isinstance(b, list)
            and len(a) == len(b)
            and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and bool(a == b)


# --- RFC 7386 ----------------------------------------------------------------------------------


def apply_merge_patch(obj: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """JSON merge patch: objects merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        raise PatchError("merge patch must be a JSON object")
    result = _merge_patch_value(obj, patch)
    assert isinstance(result, dict)
    return result


def _merge_patch_value(target: Json, patch: Json) -> Json:
    if not isinstance(patch, dict):
        return copy_json(patch)
    result = copy_json(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge_patch_value(result.get(key), value)
    return result


def create_merge_patch(original: dict[str, Any], target: dict[str, Any]) -> dict[str, Any]:
    """The RFC 7386 patch that turns `original` into `target` (target must hold no nulls)."""
    patch: dict[str, Any] = {key: None for key in original if key not in target}
    for key, value in target.items():
        old = original.get(key, _MISSING)
        if isinstance(value, dict) and isinstance(old, dict):
            sub = create_merge_patch(old, value)
            if sub:
                patch[key] = sub
        elif old is _MISSING or not json_equal(old, value):
            patch[key] = copy_json(value)
    return patch


_MISSING = object()


# --- RFC 6902 ----------------------------------------------------------------------------------


def _parse_pointer(pointer: Json) -> list[str]:
    if not isinstance(pointer, str):
        raise PatchError(f"invalid JSON pointer: {pointer!r}")
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f'JSON pointer must be empty or start with a "/": "{pointer}"')
    return [part.replace("~1", "/").replace("~0", "~") for part in pointer[1:].split("/")]


def _array_index(token: str, length: int, allow_end: bool, path: str) -> int:
    if token == "-" and allow_end:
        return length
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise PatchError(f"invalid array index {token!r} in path {path!r}")
    index = int(token)
    if index > length or (index == length and not allow_end):
        raise PatchError(f"index out of range: {index} in path {path!r}")
    return index


def _resolve_parent(doc: Json, tokens: list[str], path: str, op: str) -> Json:
    cur = doc
    for token in tokens[:-1]:
        if isinstance(cur, dict) and token in cur:
            cur = cur[token]
        elif isinstance(cur, list):
            cur = cur[_array_index(token, len(cur), False, path)]
        else:
            raise PatchError(f'{op} operation does not apply: doc is missing path: "{path}"')
    return cur


def _get(doc: Json, path: str, op: str) -> Json:
    tokens = _parse_pointer(path)
    if not tokens:
        return doc
    parent = _resolve_parent(doc, tokens, path, op)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f'{op} operation does not apply: doc is missing path: "{path}"')
        return parent[last]
    if isinstance(parent, list):
        return parent[_array_index(last, len(parent), False, path)]
    raise PatchError(f'{op} operation does not apply: doc is missing path: "{path}"')


def _add(doc: Json, path: str, value: Json, op: str = "add") -> Json:
    tokens = _parse_pointer(path)
    if not tokens:
        return value
    parent = _resolve_parent(doc, tokens, path, op)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_array_index(last, len(parent), True, path), value)
    else:
        raise PatchError(f'{op} operation does not apply: doc is missing path: "{path}"')
    return doc


def _remove(doc: Json, path: str, op: str = "remove") -> tuple[Json, Json]:
    tokens = _parse_pointer(path)
    if not tokens:
        raise PatchError(f"{op} operation does not apply: cannot remove the document root")
    parent = _resolve_parent(doc, tokens, path, op)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f'{op} operation does not apply: doc is missing path: "{path}"')
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_array_index(last, len(parent), False, path))
    raise PatchError(f'{op} operation does not apply: doc is missing path: "{path}"')


def _required(operation: dict[str, Any], key: str) -> Json:
    if key not in operation:
        raise PatchError(f"{operation.get('op')} operation missing '{key}' field")
    return operation[key]


def apply_json_patch(obj: dict[str, Any], ops: list[Any]) -> dict[str, Any]:
    """RFC 6902: add, remove, replace, move, copy and test, applied in order, all or nothing."""
    if not isinstance(ops, list):
        raise PatchError("json patch must be a JSON array of operations")
    if len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise PatchTooLarge(
            f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, "
            f"got {len(ops)}"
        )
    doc: Json = copy_json(obj)
    copied = 0
    for operation in ops:
        if not isinstance(operation, dict):
            raise PatchError(f"invalid json patch operation: {operation!r}")
        op = operation.get("op")
        path = _required(operation, "path")
        if op == "add":
            doc = _add(doc, path, copy_json(_required(operation, "value")))
        elif op == "remove":
            doc, _ = _remove(doc, path)
        elif op == "replace":
            value = copy_json(_required(operation, "value"))
            _get(doc, path, "replace")
            tokens = _parse_pointer(path)
            if not tokens:
                doc = value
            else:
                parent = _resolve_parent(doc, tokens, path, "replace")
                key: Any = tokens[-1] if isinstance(parent, dict) else int(tokens[-1])
                parent[key] = value
        elif op == "move":
            source = _required(operation, "from")
            if path != source and path.startswith(source + "/"):
                raise PatchError(
                    f'move operation does not apply: "{source}" is a prefix of "{path}"'
                )
            doc, value = _remove(doc, source, "move")
            doc = _add(doc, path, value, "move")
        elif op == "copy":
            value = copy_json(_get(doc, _required(operation, "from"), "copy"))
            copied += len(orjson.dumps(value))
            if copied > JSON_PATCH_MAX_COPY_BYTES:  # evanphx/json-patch's AccumulatedCopySizeError
                raise PatchError(
                    "Unable to complete the copy, the accumulated size increase of copy is "
                    f"{copied}, exceeding the limit {JSON_PATCH_MAX_COPY_BYTES}"
                )
            doc = _add(doc, path, value, "copy")
        elif op == "test":
            expected = _required(operation, "value")
            try:
                actual = _get(doc, path, "test")
            except PatchError:
                actual = _MISSING
            if actual is _MISSING or not json_equal(actual, expected):
                raise PatchError(f"testing value {path} failed: test failed")
        else:
            raise PatchError(f"Unexpected kind: {op}")
    if not isinstance(doc, dict):
        raise PatchError("json patch result must be a JSON object")
    return doc


# --- strategic merge patch ---------------------------------------------------------------------


def apply_strategic_merge_patch(
    obj: dict[str, Any], patch: dict[str, Any], kind: str
) -> dict[str, Any]:
    """Strategic merge patch for a built-in kind (lists merged by their patchMergeKey)."""
    if not isinstance(patch, dict):
        raise PatchError("strategic merge patch must be a JSON object")
    return _merge_map(copy_json(obj), copy_json(patch), schema_for_kind(kind))


def _scalar_key(value: Json) -> tuple[str, Json]:
    """Hashable identity of a scalar, keeping true distinct from 1 as Go's interface == does."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, dict | list):
        return ("composite", repr(value))
    return (type(value).__name__, value)


def _extract_key(key: str, prefix: str) -> str:
    head, sep, rest = key.partition("/")
    if not sep or head != prefix:
        if prefix == DELETE_FROM_PRIMITIVE_LIST:
            raise PatchError("invalid patch format of primitive list")
        raise PatchError("invalid patch format of setElementOrder list")
    return rest


def _no_merge_key(item: Json, merge_key: str) -> PatchError:
    return PatchError(f"map: {item} does not contain declared merge key: {merge_key}")


def _merge_map(original: dict[str, Any], patch: dict[str, Any], schema: Struct) -> dict[str, Any]:
    if DIRECTIVE in patch:
        directive = patch[DIRECTIVE]
        if directive == "replace":
            del patch[DIRECTIVE]
            return _merge_map({}, patch, schema)
        if directive == "delete":
            return {}
        raise PatchError(f"unknown patch type: {directive} in map: {patch}")
    _apply_retain_keys(original, patch)
    _merge_ordered_lists(original, patch, schema)
    for key, patch_value in patch.items():
        is_delete_list = key.startswith(DELETE_FROM_PRIMITIVE_LIST)
        if is_delete_list:
            key = _extract_key(key, DELETE_FROM_PRIMITIVE_LIST)
        if patch_value is None:
            original.pop(key, None)
            continue
        meta = field_meta(schema, key)
        if key not in original:
            if not is_delete_list:  # deleting from an absent list leaves it absent
                original[key] = _merge_value(None, patch_value, meta, False)
            continue
        original[key] = _merge_value(original[key], patch_value, meta, is_delete_list)
    return original


def _merge_value(original: Json, patch: Json, meta: FieldMeta, is_delete_list: bool) -> Json:
    if isinstance(patch, dict):
        if meta.replace:
            return _strip_directives(patch)
        return _merge_map(original if isinstance(original, dict) else {}, patch, meta.struct)
    if isinstance(patch, list):
        if not meta.merge:
            return patch
        base = original if isinstance(original, list) else []
        return _merge_list(base, patch, meta, is_delete_list)
    return patch


def _strip_directives(value: dict[str, Any]) -> dict[str, Any]:
    value.pop(DIRECTIVE, None)
    return value


def _apply_retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    if RETAIN_KEYS not in patch:
        return
    retain = patch.pop(RETAIN_KEYS)
    if not isinstance(retain, list):
        raise PatchError("invalid patch format of retainKeys")
    keep = {k for k in retain if isinstance(k, str)}
    for key, value in patch.items():
        if value is None or key.startswith((DELETE_FROM_PRIMITIVE_LIST, SET_ELEMENT_ORDER)):
            continue
        if key not in keep:
            raise PatchError("invalid patch format of retainKeys")
    for key in [k for k in original if k not in keep]:
        del original[key]


def _element_kind(*lists: list[Any]) -> str | None:
    """ "map" or "scalar" for the elements of the lists; None when all are empty."""
    kind: str | None = None
    for items in lists:
        for item in items:
            if isinstance(item, list):
                raise PatchError("lists of lists are not supported")
            this = "map" if isinstance(item, dict) else "scalar"
            if kind is not None and kind != this:
                raise PatchError(f"list element types are not identical: {list(lists)}")
            kind = this
    return kind


def _merge_list(
    original: list[Any], patch: list[Any], meta: FieldMeta, is_delete_list: bool
) -> list[Any]:
    if not original and not patch:
        return original
    kind = _element_kind(original, patch)
    merge_key = meta.merge_key
    if kind == "scalar":
        if is_delete_list:
            doomed = {_scalar_key(v) for v in patch}
            return [v for v in original if _scalar_key(v) not in doomed]
        merged = _dedup_scalars(original + patch)
        merge_key = ""
    else:
        if not merge_key:
            raise PatchError("cannot merge lists without merge key for type map")
        original, patch = _apply_list_directives(original, patch, merge_key)
        merged = _merge_list_items(original, patch, merge_key, meta)
    patch_items, server_only = _partition(merged, patch, merge_key)
    return _normalize_order(patch_items, server_only, patch, original, merge_key)


def _dedup_scalars(items: list[Any]) -> list[Any]:
    seen: set[tuple[str, Json]] = set()
    out = []
    for item in items:
        key = _scalar_key(item)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _apply_list_directives(
    original: list[Any], patch: list[Any], merge_key: str
) -> tuple[list[Any], list[Any]]:
    """Handle {"$patch": "delete"|"replace"} elements; returns (original, plain patch items)."""
    plain: list[Any] = []
    replace = False
    for item in patch:
        if DIRECTIVE not in item:
            plain.append(item)
            continue
        directive = item[DIRECTIVE]
        if directive == "delete":
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
            doomed = _scalar_key(item[merge_key])
            original = [
                o for o in original if not (merge_key in o and _scalar_key(o[merge_key]) == doomed)
            ]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise PatchError("merging lists cannot yet be specified in the patch")
        else:
            raise PatchError(f"unknown patch type: {directive} in map: {item}")
    if replace:
        return plain, []
    return original, plain


def _merge_list_items(
    original: list[Any], patch: list[Any], merge_key: str, meta: FieldMeta
) -> list[Any]:
    merged = list(original)
    for item in patch:
        if merge_key not in item:
            raise _no_merge_key(item, merge_key)
        wanted = _scalar_key(item[merge_key])
        for i, existing in enumerate(merged):
            if merge_key in existing and _scalar_key(existing[merge_key]) == wanted:
                merged[i] = _merge_map(existing, item, meta.struct)
                break
        else:
            merged.append(_merge_map({}, item, meta.struct))
    return merged


def _identity(item: Json, merge_key: str) -> tuple[str, Json]:
    if merge_key:
        return _scalar_key(item.get(merge_key) if isinstance(item, dict) else None)
    return _scalar_key(item)


def _partition(items: list[Any], by: Iterable[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    present = {_identity(v, merge_key) for v in by}
    inside = [v for v in items if _identity(v, merge_key) in present]
    outside = [v for v in items if _identity(v, merge_key) not in present]
    return inside, outside


def _sorted_by(items: list[Any], order: list[Any], merge_key: str) -> list[Any]:
    """Upstream's normalizeSliceOrder: stable sort by position in `order`, deletions last."""
    positions: dict[tuple[str, Json], int] = {}
    for i, v in enumerate(order):
        positions.setdefault(_identity(v, merge_key), i)
    keep = [v for v in items if not (isinstance(v, dict) and v.get(DIRECTIVE) == "delete")]
    doomed = [v for v in items if isinstance(v, dict) and v.get(DIRECTIVE) == "delete"]
    keep.sort(key=lambda v: positions.get(_identity(v, merge_key), len(order)))
    return keep + doomed


def _normalize_order(
    patch_items: list[Any],
    server_only: list[Any],
    patch_order: list[Any],
    server_order: list[Any],
    merge_key: str,
) -> list[Any]:
    """Patch items in patch order, server-only items slotted by their place in the live list.

    As upstream's mergeSortedSlice: a server-only item goes before a patch item only when both
    are in the live list and it came first there, so brand-new patch items lead.
    """
    left = _sorted_by(server_only, server_order, merge_key)
    right = _sorted_by(patch_items, patch_order, merge_key)
    live: dict[tuple[str, Json], int] = {}
    for i, v in enumerate(server_order):
        live.setdefault(_identity(v, merge_key), i)
    out: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if j >= len(right):
            out.append(left[i])
            i += 1
        elif i >= len(left):
            out.append(right[j])
            j += 1
        else:
            li = live.get(_identity(left[i], merge_key), -1)
            ri = live.get(_identity(right[j], merge_key), -1)
            if li >= 0 and ri >= 0 and li < ri:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out


def _check_order_list(patch_list: list[Any], order: list[Any], merge_key: str) -> None:
    """Upstream's validatePatchWithSetOrderList: patch items must follow the order list."""
    if not order or not patch_list:
        return
    items = [
        v
        for v in patch_list
        if not (merge_key and isinstance(v, dict) and v.get(DIRECTIVE) == "delete")
    ]
    pi = oi = 0
    while pi < len(items) and oi < len(order):
        if isinstance(items[pi], dict) and DIRECTIVE in items[pi]:
            pi += 1
            continue
        if _identity(items[pi], merge_key) == _identity(order[oi], merge_key):
            pi += 1
        oi += 1
    if pi < len(items):
        raise PatchError(
            f"The order in patch list:\n{patch_list}\n doesn't match "
            f"{SET_ELEMENT_ORDER} list:\n{order}\n"
        )


def _merge_ordered_lists(original: dict[str, Any], patch: dict[str, Any], schema: Struct) -> None:
    """Merge every list that has a $setElementOrder/<field> directive, in that order."""
    for directive_key in [k for k in patch if k.startswith(SET_ELEMENT_ORDER)]:
        order = patch.pop(directive_key)
        if not isinstance(order, list):
            raise PatchError("invalid patch format of setElementOrder list")
        key = _extract_key(directive_key, SET_ELEMENT_ORDER)
        meta = field_meta(schema, key)
        original_list = original.get(key)
        patch_list = patch.get(key)
        if original_list is not None and not isinstance(original_list, list):
            raise PatchError(f"invalid type for {key}: expected a list")
        if patch_list is not None and not isinstance(patch_list, list):
            raise PatchError(f"invalid type for {key}: expected a list")
        merge_key = meta.merge_key
        _check_order_list(patch_list or [], order, merge_key)
        if original_list is None and patch_list is None:
            continue
        merged = (
            _merge_value(original_list, patch_list, meta, False)
            if patch_list is not None
            else original_list
        )
        assert isinstance(merged, list)
        kind = _element_kind(original_list or [], patch_list or [])
        if kind == "scalar":
            merge_key = ""
        patch_items, server_only = _partition(merged, order, merge_key)
        original[key] = _normalize_order(
            patch_items, server_only, order, original_list or [], merge_key
        )
        patch.pop(key, None)
