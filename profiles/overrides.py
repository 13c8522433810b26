"""Command-line flags over the file: kube-scheduler's ApplyLeaderElectionTo and ApplyDeprecated.

Upstream (cmd/kube-scheduler/app/options/options.go) copies every ``--leader-elect*`` flag that
was set on the command line into the configuration's leaderElection, with or without --config,
and the deprecated client and profiling flags (``--kube-api-qps``, ``--profiling``, ...) only
when there is no --config. The CLI decides which flags apply; this module writes their values
into the ConfigSpec *before* defaults and validation, so a flag is validated as the field it
sets (``--leader-elect-lease-duration=5s`` below the renewDeadline is refused like the field),
and errors name the flag.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from profiles.config import ClientConnection, ConfigOverride, ConfigSpec, LeaderElectionSpec
from profiles.errors import ConfigError

# Field path -> (section attribute of ConfigSpec or "" for a top-level one, attribute).
OVERRIDABLE: dict[str, tuple[str, str]] = {
    "leaderElection.leaderElect": ("leader_election", "leader_elect"),
    "leaderElection.leaseDuration": ("leader_election", "lease_duration"),
    "leaderElection.renewDeadline": ("leader_election", "renew_deadline"),
    "leaderElection.retryPeriod": ("leader_election", "retry_period"),
    "leaderElection.resourceLock": ("leader_election", "resource_lock"),
    "leaderElection.resourceName": ("leader_election", "resource_name"),
    "leaderElection.resourceNamespace": ("leader_election", "resource_namespace"),
    "clientConnection.kubeconfig": ("client_connection", "kubeconfig"),
    "clientConnection.contentType": ("client_connection", "content_type"),
    "clientConnection.qps": ("client_connection", "qps"),
    "clientConnection.burst": ("client_connection", "burst"),
    "enableProfiling": ("", "enable_profiling"),
    "enableContentionProfiling": ("", "enable_contention_profiling"),
}


def apply_overrides(spec: ConfigSpec, overrides: Iterable[ConfigOverride]) -> ConfigSpec:
    """``spec`` with every override written in (later overrides of one path win)."""
    leader_election: LeaderElectionSpec = spec.leader_election
    client_connection: ClientConnection = spec.client_connection
    top: dict[str, Any] = {}
    for override in overrides:
        try:
            section, attribute = OVERRIDABLE[override.path]
        except KeyError:
            raise ValueError(f"{override.flag}: {override.path} cannot be overridden") from None
        if section == "leader_election":
            leader_election = replace(leader_election, **{attribute: override.value})
        elif section == "client_connection":
            client_connection = replace(client_connection, **{attribute: override.value})
        else:
            top[attribute] = override.value
    return replace(
        spec, leader_election=leader_election, client_connection=client_connection, **top
    )


def name_flags(
    errors: Iterable[ConfigError], overrides: Iterable[ConfigOverride]
) -> list[ConfigError]:
    """Errors about a field a flag set say so: ``leaderElection.leaseDuration (set by
    --leader-elect-lease-duration)``."""
    flags = {o.path: o.flag for o in overrides}
    named: list[ConfigError] = []
    for error in errors:
        flag = flags.get(error.path)
        if flag is not None:
            error = ConfigError(error.source, f"{error.path} (set by {flag})", error.message)
        named.append(error)
    return named
