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
from scheduler.plugins.dynamicresources.features import DRA_GATE_DEFAULTS, unsupported_gate_value
from scheduler.plugins.gangscheduling import features as workload_features
from scheduler.plugins.nodedeclaredfeatures import GATE_DEFAULTS as NODE_DECLARED_FEATURES_GATE
from scheduler.server.zpages import ZPAGES_GATE_DEFAULTS

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


#: The feature gates aiosched implements, with upstream's default at the version it follows
#: (pkg/features/kube_features.go: OpportunisticBatching beta and on since v1.35; the DRA gates
#: at v1.36, except those aiosched honours only off: scheduler/plugins/dynamicresources/
#: features.py says which and refuses the other value; the workload-aware scheduling gates at
#: v1.37: scheduler/plugins/gangscheduling/features.py; component-base/zpages/features:
#: ComponentStatusz and ComponentFlagz, beta and on since v1.36; NodeDeclaredFeatures, beta and
#: on since v1.36: scheduler/plugins/nodedeclaredfeatures/plugin.py).
FEATURE_GATES: dict[str, bool] = {
    "OpportunisticBatching": True,
    **ZPAGES_GATE_DEFAULTS,
    **DRA_GATE_DEFAULTS,
    **workload_features.WORKLOAD_GATE_DEFAULTS,
    **NODE_DECLARED_FEATURES_GATE,
}


def feature_gates(text: str) -> dict[str, bool]:
    """``--feature-gates=A=true,B=false`` (component-base's featuregate Set): every gate as
    given, the others at their defaults. A gate aiosched does not know is refused, as upstream
    refuses an unknown one."""
    gates = dict(FEATURE_GATES)
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep:
            raise argparse.ArgumentTypeError(f"missing bool value for {name}")
        if name not in FEATURE_GATES:
            raise argparse.ArgumentTypeError(f"unrecognized feature gate: {name}")
        try:
            gates[name] = go_bool(value.strip())
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(
                f"invalid value of {name}={value.strip()}, err: strconv.ParseBool: parsing "
                f'"{value.strip()}": invalid syntax'
            ) from None
        refusal = unsupported_gate_value(
            name, gates[name]
        ) or workload_features.unsupported_gate_value(name, gates[name])
        if refusal is not None:
            raise argparse.ArgumentTypeError(refusal)
    return gates


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
