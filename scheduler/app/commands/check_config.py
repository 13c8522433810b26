"""Validate a KubeSchedulerConfiguration file and print the resolved profiles.

Prints every profile's extension points with their plugins in order, weights and args, exactly
as `aiosched run --config FILE` would use them (give --feature-gates as `aiosched run` is
given them: GenericWorkload=true,GangScheduling=true adds GangScheduling to the default
plugins). Exits 1 and names the file, the field path and what was expected when the file is
invalid.
"""

from __future__ import annotations

import argparse

from profiles.render import check_config_main
from scheduler.app.commands.upstream_flags import feature_gates
from scheduler.cycle.profile_set import registry_for_config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="KubeSchedulerConfiguration (YAML or JSON)")
    parser.add_argument(
        "--feature-gates",
        type=feature_gates,
        default=None,
        metavar="A=true,B=false",
        help="the gates `aiosched run` is given: feature-gated default plugins follow them "
        "(GenericWorkload=true,GangScheduling=true adds GangScheduling)",
    )


def main(args: argparse.Namespace) -> int:
    return check_config_main(args.file, registry_for_config(), feature_gates=args.feature_gates)
