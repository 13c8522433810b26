"""Entry points: text or file -> validated ResolvedConfig (raises ConfigInvalidError)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from profiles.config import ConfigOverrides, ConfigSpec, ResolvedConfig, ResolvedProfile
from profiles.defaults import apply_defaults, default_client_connection, default_leader_election
from profiles.errors import ConfigError, ConfigInvalidError, ErrorSink, child, index
from profiles.fields import refusals
from profiles.load import MAX_CONFIG_BYTES, parse_text
from profiles.overrides import apply_overrides, name_flags
from profiles.resolve import resolve_profile
from profiles.spec import PluginRegistry
from profiles.validate import validate_config


def load_config(
    path: str | Path | None,
    registry: PluginRegistry,
    overrides: ConfigOverrides = (),
    *,
    feature_gates: Mapping[str, bool] | None = None,
) -> ResolvedConfig:
    """Load a KubeSchedulerConfiguration file; None gives upstream's defaults. ``overrides``
    (command-line flags) are written over the file before defaults and validation;
    ``feature_gates`` (`--feature-gates`) decide the feature-gated default plugins."""
    if path is None:
        return resolve_config(ConfigSpec(), registry, overrides, feature_gates=feature_gates)
    source = str(path)
    try:
        with Path(path).open("rb") as file:  # no more than the largest accepted, plus one byte
            raw = file.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            size = os.stat(path).st_size
            raise ConfigInvalidError(
                [
                    ConfigError(
                        source,
                        "",
                        f"the file is {size} bytes, more than the {MAX_CONFIG_BYTES} allowed",
                    )
                ]
            )
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigInvalidError([ConfigError(source, "", f"cannot read file: {exc}")]) from exc
    return load_config_text(
        text, registry, source=source, overrides=overrides, feature_gates=feature_gates
    )


def load_config_text(
    text: str,
    registry: PluginRegistry,
    source: str = "<string>",
    overrides: ConfigOverrides = (),
    *,
    feature_gates: Mapping[str, bool] | None = None,
) -> ResolvedConfig:
    return resolve_config(
        parse_text(text, source), registry, overrides, feature_gates=feature_gates
    )


def resolve_config(
    spec: ConfigSpec,
    registry: PluginRegistry,
    overrides: ConfigOverrides = (),
    *,
    feature_gates: Mapping[str, bool] | None = None,
) -> ResolvedConfig:
    sink = ErrorSink(spec.source)
    spec = apply_overrides(spec, overrides)
    for path, message in refusals(spec):  # values aiosched cannot honour (profiles/fields.py)
        sink.add(path, message)
    spec = apply_defaults(spec, feature_gates)
    leader_election = default_leader_election(spec)
    client_connection = default_client_connection(spec)
    validate_config(spec, leader_election, client_connection, sink)
    global_pct = spec.percentage_of_nodes_to_score or 0
    resolved = [
        resolve_profile(profile, i, global_pct, registry, sink)
        for i, profile in enumerate(spec.profiles)
    ]
    profiles = tuple(p for p in resolved if p is not None)
    if len(profiles) == len(resolved):
        _check_same_queue_sort(profiles, sink)
    if sink.errors:
        errors = name_flags(dict.fromkeys(sink.errors), overrides)  # drop exact duplicates
        raise ConfigInvalidError(errors)
    return ResolvedConfig(
        source=spec.source,
        parallelism=spec.parallelism or 0,
        percentage_of_nodes_to_score=global_pct,
        pod_initial_backoff_seconds=spec.pod_initial_backoff_seconds or 0,
        pod_max_backoff_seconds=spec.pod_max_backoff_seconds or 0,
        leader_election=leader_election,
        client_connection=client_connection,
        extenders=spec.extenders,
        delay_cache_until_active=spec.delay_cache_until_active,
        enable_profiling=bool(spec.enable_profiling),
        enable_contention_profiling=bool(spec.enable_contention_profiling),
        profiles=profiles,
        notes=spec.notes,
    )


def _check_same_queue_sort(profiles: tuple[ResolvedProfile, ...], sink: ErrorSink) -> None:
    """profile.Map's cfgValidator: one queue for all profiles needs one ordering."""
    first = profiles[0]
    for i, profile in enumerate(profiles[1:], start=1):
        path = index("profiles", i)
        if profile.queue_sort != first.queue_sort:
            sink.add(
                child(path, "plugins.queueSort"),
                "must be the same for all profiles "
                f"(got {profile.queue_sort!r}, profiles[0] uses {first.queue_sort!r})",
            )
        elif profile.args.get(profile.queue_sort) != first.args.get(first.queue_sort):
            sink.add(
                child(path, "pluginConfig"),
                f"args of queueSort plugin {first.queue_sort!r} must be the same for all profiles",
            )
