"""Turn a defaulted, merged profile into the per-extension-point plugin lists the framework runs,
using the plugin registry: frameworkImpl's updatePluginList, expandMultiPointPlugins and
getScoreWeights (pkg/scheduler/framework/runtime/framework.go), and profile.Map's checks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from profiles.config import (
    API_VERSION,
    PluginConfigEntry,
    PluginRef,
    Plugins,
    PluginSet,
    ProfileSpec,
    ResolvedProfile,
    WeightedPlugin,
    frozen_mapping,
)
from profiles.defaults import DEFAULT_PLUGIN_NAMES
from profiles.errors import ErrorSink, child, index
from profiles.spec import EXTENSION_POINTS, MULTI_POINT, WEIGHTED_POINTS, PluginRegistry
from profiles.validate import REMOVED_IN_V1

MAX_NODE_SCORE = 100
MAX_TOTAL_SCORE = 2**63 - 1


@dataclass(frozen=True)
class _Ctx:
    registry: PluginRegistry
    sink: ErrorSink
    path: str  # "profiles[i]"

    def where(self, ref: PluginRef, point: str) -> str:
        return ref.origin or child(child(self.path, "plugins"), point)


def resolve_profile(
    profile: ProfileSpec,
    i: int,
    global_percentage: int,
    registry: PluginRegistry,
    sink: ErrorSink,
) -> ResolvedProfile | None:
    """Resolve one profile; None (with errors in ``sink``) when it cannot be built."""
    ctx = _Ctx(registry, sink, index("profiles", i))
    errors_before = len(sink.errors)
    notes: list[str] = []
    plugins = _drop_unregistered(profile.plugins or Plugins(), ctx, notes)
    lists: dict[str, tuple[WeightedPlugin, ...]] = {}
    weights = {point: _score_weights(plugins, ctx, point) for point in WEIGHTED_POINTS}
    for point in EXTENSION_POINTS:
        names = _plugins_at(point, plugins, ctx)
        point_weights = weights.get(point)
        lists[point] = tuple(
            WeightedPlugin(n, 0 if point_weights is None else point_weights.get(n, 1))
            for n in names
        )
    name = profile.scheduler_name or ""
    if len(lists["queueSort"]) != 1:
        got = ", ".join(p.name for p in lists["queueSort"]) or "none"
        sink.add(
            child(ctx.path, "plugins.queueSort"),
            f"exactly one queueSort plugin is required for profile {name!r}, got "
            f"{len(lists['queueSort'])} ({got})",
        )
    if not lists["bind"]:
        sink.add(
            child(ctx.path, "plugins.bind"),
            f"at least one bind plugin is required for profile {name!r}",
        )
    enabled = {p.name for ps in lists.values() for p in ps}
    args = _decode_args(profile.plugin_config, enabled, ctx, notes)
    if len(sink.errors) != errors_before:
        return None
    pct = profile.percentage_of_nodes_to_score
    return ResolvedProfile(
        scheduler_name=name,
        percentage_of_nodes_to_score=global_percentage if pct is None else pct,
        plugins=frozen_mapping(lists),
        args=frozen_mapping(args),
        notes=tuple(notes),
    )


def _drop_unregistered(plugins: Plugins, ctx: _Ctx, notes: list[str]) -> Plugins:
    """Unregistered plugins the user named are errors; unregistered upstream defaults are
    dropped with a note (this scheduler does not implement every upstream plugin yet)."""
    dropped: dict[str, None] = {}
    sets: dict[str, PluginSet] = {}
    for point, ps in plugins.sets.items():
        kept: list[PluginRef] = []
        for ref in ps.enabled:
            if ref.name in ctx.registry:
                kept.append(ref)
            elif ref.origin is None:
                dropped.setdefault(ref.name, None)
            elif ref.name not in REMOVED_IN_V1:  # validate.py already reported those
                ctx.sink.add(ref.origin, _unknown_plugin(ref.name, ctx.registry))
        sets[point] = PluginSet(enabled=tuple(kept), disabled=ps.disabled)
    for plugin_name in dropped:
        notes.append(f"default plugin {plugin_name} is not implemented yet; left out")
    return Plugins(frozen_mapping(sets))


def _unknown_plugin(name: str, registry: PluginRegistry) -> str:
    known = sorted(registry)
    listed = ", ".join(known) if len(known) <= 40 else f"{len(known)} plugins"
    return f"unknown plugin {name!r} (registered: {listed})"


def _implements(name: str, point: str, ctx: _Ctx) -> bool:
    return point in ctx.registry[name].extension_points


def _plugins_at(point: str, plugins: Plugins, ctx: _Ctx) -> list[str]:
    """updatePluginList for the point's own set, then expandMultiPointPlugins."""
    own = plugins[point]
    specific: list[str] = []
    for ref in own.enabled:
        if not _implements(ref.name, point, ctx):
            ctx.sink.add(ctx.where(ref, point), f"plugin {ref.name!r} does not implement {point}")
        elif ref.name in specific:
            ctx.sink.add(
                ctx.where(ref, point), f"plugin {ref.name!r} is enabled more than once at {point}"
            )
        else:
            specific.append(ref.name)
    disabled = own.disabled_names()
    if "*" in disabled:
        return specific
    overrides: list[str] = []
    from_multi_point: list[str] = []
    for ref in plugins.multi_point.enabled:
        if not _implements(ref.name, point, ctx) or ref.name in disabled:
            continue
        if ref.name in specific:
            overrides.append(ref.name)
        elif ref.name in from_multi_point:
            ctx.sink.add(
                ctx.where(ref, MULTI_POINT),
                f"plugin {ref.name!r} is enabled more than once (registered twice at {point})",
            )
        else:
            from_multi_point.append(ref.name)
    # Order: plugins named both at the point and in multiPoint (in the point's order), then
    # multiPoint-only plugins, then the rest of the point's own plugins.
    first = [n for n in specific if n in overrides]
    rest = [n for n in specific if n not in overrides]
    return first + from_multi_point + rest


def _score_weights(plugins: Plugins, ctx: _Ctx, scored: str) -> dict[str, int]:
    """getScoreWeights for `scored` ("score" or "placementScore", whose weights upstream keeps
    the same way): the point's own weight wins over multiPoint's; 0/unset means 1; the
    weighted maximum total must fit in int64."""
    weights: dict[str, int] = {}
    total = 0
    for point in (scored, MULTI_POINT):
        for ref in plugins[point].enabled:
            if not _implements(ref.name, scored, ctx) or ref.name in weights:
                continue
            weight = ref.weight or 1
            weights[ref.name] = weight
            if weight * MAX_NODE_SCORE > MAX_TOTAL_SCORE - total:
                ctx.sink.add(
                    child(ctx.where(ref, point), "weight"),
                    f"total score of {scored} plugins could overflow",
                )
            total += weight * MAX_NODE_SCORE
    return weights


def _decode_args(
    entries: tuple[PluginConfigEntry, ...],
    enabled: set[str],
    ctx: _Ctx,
    notes: list[str],
) -> dict[str, Any]:
    decoded: dict[str, Any] = {}
    configured: set[str] = set()
    for j, entry in enumerate(entries):
        path = index(child(ctx.path, "pluginConfig"), j)
        if entry.name in configured or entry.name in REMOVED_IN_V1:
            continue  # duplicates / removed plugins are reported by validate.py
        configured.add(entry.name)
        spec = ctx.registry.get(entry.name)
        if spec is None:
            if entry.name in DEFAULT_PLUGIN_NAMES:
                notes.append(f"args for {entry.name} ignored: plugin not implemented yet")
            else:
                ctx.sink.add(child(path, "name"), _unknown_plugin(entry.name, ctx.registry))
            continue
        raw = _strip_type_meta(entry, path, ctx)
        ok, value = _call_decode(spec.decode_args, raw, child(path, "args"), ctx)
        if not ok:
            continue
        if entry.name in enabled:
            if value is not None:
                decoded[entry.name] = value
        else:
            notes.append(f"pluginConfig for {entry.name}: plugin is not enabled in this profile")
    for name in sorted(enabled - configured):
        where = child(ctx.path, "pluginConfig")
        ok, value = _call_decode(ctx.registry[name].decode_args, None, where, ctx, name)
        if ok and value is not None:
            decoded[name] = value
    return decoded


def _strip_type_meta(entry: PluginConfigEntry, path: str, ctx: _Ctx) -> Mapping[str, Any] | None:
    """Args may carry their own apiVersion/kind (``NodeResourcesFitArgs``); check and drop."""
    if entry.args is None:
        return None
    args = dict(entry.args)
    kind = args.pop("kind", None)
    api_version = args.pop("apiVersion", None)
    want = f"{entry.name}Args"
    if kind is not None and kind != want:
        ctx.sink.add(child(path, "args.kind"), f"expected {want!r}, got {kind!r}")
    if api_version is not None and api_version != API_VERSION:
        ctx.sink.add(
            child(path, "args.apiVersion"), f"expected {API_VERSION!r}, got {api_version!r}"
        )
    return args


def _call_decode(
    decode: Any,
    raw: Mapping[str, Any] | None,
    args_path: str,
    ctx: _Ctx,
    default_for: str | None = None,
) -> tuple[bool, Any]:
    try:
        return True, decode(raw)
    except Exception as exc:  # any error a plugin raises for its args is a config error
        sub = _exc_path(exc)
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        if default_for is not None:
            ctx.sink.add(
                args_path, f"default args of plugin {default_for!r} are invalid: {message}"
            )
        else:
            ctx.sink.add(f"{args_path}.{sub}" if sub else args_path, str(message))
        return False, None


def _exc_path(exc: BaseException) -> str:
    raw = getattr(exc, "path", None)
    if raw is None:
        return ""
    if isinstance(raw, str):
        parts: Sequence[Any] = [raw] if raw else []
    elif isinstance(raw, Sequence):
        parts = list(raw)
    else:
        parts = [str(raw)]
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text = child(text, str(part))
    if text == "args":
        return ""
    return text.removeprefix("args.")
