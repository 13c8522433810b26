"""kube-scheduler's command-line flags as argparse understands them.

Values are read as Go's pflag reads them: booleans with strconv.ParseBool (``--leader-elect``,
``--leader-elect=false``), durations with time.ParseDuration (``15s``, ``1m30s``).

Flags upstream removed are still recognised, so that a manifest written for an older
kube-scheduler stops with one line naming the replacement instead of argparse's usage dump.
Facts from cmd/kube-scheduler/app/options/{options.go,deprecated.go} and the release notes of the
versions named below.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from profiles.duration import parse_duration
from scheduler.app.feature_gates import DEFAULTS, feature_gates

__all__ = ["FEATURE_GATES", "feature_gates"]

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def go_bool(text: str) -> bool:
    """strconv.ParseBool."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def go_duration(text: str) -> float:
    """A positive Go duration (``15s``, ``1m30s``) in seconds."""
    try:
        seconds = parse_duration(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected a duration like "15s", got {text!r}') from None
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be greater than zero, got {text!r}")
    return seconds


#: Every gate of kube-scheduler v1.37's binary at the value aiosched starts it with, and the
#: `--feature-gates` parser (scheduler/app/feature_gates.py says what each gate does here).
FEATURE_GATES: dict[str, bool] = dict(DEFAULTS)


#: Flags kube-scheduler no longer has: what became of them, and what to use instead.
REMOVED: dict[str, str] = {
    "--port": (
        "kube-scheduler removed it in v1.24 (it had no effect since insecure serving went away "
        "in v1.23); use --secure-port"
    ),
    "--address": (
        "kube-scheduler removed it in v1.24 (it had no effect since insecure serving went away "
        "in v1.23); use --bind-address"
    ),
    **dict.fromkeys(
        (
            "--policy-config-file",
            "--policy-configmap",
            "--policy-configmap-namespace",
            "--use-legacy-policy-config",
        ),
        "kube-scheduler removed it in v1.23 with the Policy API; write a "
        "KubeSchedulerConfiguration (profiles, plugins) and pass it with --config",
    ),
    "--algorithm-provider": (
        "kube-scheduler removed it in v1.22; enable and disable plugins in profiles[].plugins "
        "of the --config file"
    ),
    "--scheduler-name": (
        "kube-scheduler removed it in v1.22; set profiles[].schedulerName in the --config file"
    ),
    "--hard-pod-affinity-symmetric-weight": (
        "kube-scheduler removed it in v1.22; set hardPodAffinityWeight in the InterPodAffinity "
        "args (profiles[].pluginConfig) of the --config file"
    ),
    "--lock-object-name": (
        "kube-scheduler removed it in v1.28; use --leader-elect-resource-name (or "
        "leaderElection.resourceName in the --config file)"
    ),
    "--lock-object-namespace": (
        "kube-scheduler removed it in v1.28; use --leader-elect-resource-namespace (or "
        "leaderElection.resourceNamespace in the --config file)"
    ),
}

#: Flags kube-scheduler still accepts but deprecated, and applies only without --config
#: (Options.ApplyDeprecated): the config field each one sets.
DEPRECATED_CLIENT_FLAGS: dict[str, str] = {
    "--kube-api-qps": "clientConnection.qps",
    "--kube-api-burst": "clientConnection.burst",
    "--kube-api-content-type": "clientConnection.contentType",
    "--profiling": "enableProfiling",
    "--contention-profiling": "enableContentionProfiling",
}


def deprecation_message(flag: str, config_given: bool) -> str:
    field = DEPRECATED_CLIENT_FLAGS[flag]
    if config_given:
        return (
            f"{flag} is deprecated in kube-scheduler and ignored when --config is given, as "
            f"there; set {field} in the --config file instead"
        )
    return f"{flag} is deprecated in kube-scheduler; set {field} in a --config file instead"


class RemovedFlag(argparse.Action):
    """Stops the command with one line: ``aiosched run: --port: kube-scheduler removed it ...``."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.setdefault("nargs", "?")
        kwargs.setdefault("help", argparse.SUPPRESS)
        super().__init__(option_strings, dest, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        flag = option_string or self.option_strings[0]
        parser.exit(2, f"{parser.prog}: {flag}: {self.reason(flag)}\n")

    def reason(self, flag: str) -> str:
        return REMOVED[flag]


def add_removed_flags(parser: argparse.ArgumentParser) -> None:
    for flag in REMOVED:
        parser.add_argument(flag, action=RemovedFlag, dest=f"removed_{flag[2:]}")
