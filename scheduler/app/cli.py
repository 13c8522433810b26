"""`aiosched`: the command line.

    aiosched run [--config FILE] [--kubeconfig PATH | --embedded] ...   the scheduler
    aiosched cluster --port P --nodes N --kubeconfig-out PATH            the embedded cluster alone
    aiosched bench WORKLOAD... [--json PATH]                              scheduler_perf workloads
    aiosched check-config FILE                                            validate, resolve profiles
    aiosched explain NAMESPACE/POD --http-address HOST:PORT              why a pod is (not) placed
    aiosched what-if POD.yaml --http-address HOST:PORT                   where a pod would go now
    aiosched view --http-address HOST:PORT                               the web view, in a browser
    aiosched replay --trace FILE --config A.yaml [--config B.yaml]       compare profiles on a trace
    aiosched record --kubeconfig PATH --out TRACE.yaml                   record a cluster's trace

Subcommands that live outside the scheduler package (the embedded cluster, the benchmarks) are
found through the `aiosched.commands` entry point group: the scheduler never imports them, it
only reaches clusters over HTTP(S).
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import entry_points
from types import ModuleType
from typing import Protocol, cast

from observability.version import version_text


class Command(Protocol):
    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def main(self, args: argparse.Namespace) -> int: ...


def _external_commands() -> dict[str, ModuleType]:
    commands: dict[str, ModuleType] = {}
    for entry in entry_points(group="aiosched.commands"):
        try:
            commands[entry.name] = entry.load()
        except ImportError as exc:  # a broken optional command must not break the others
            print(f"aiosched: command {entry.name!r} unavailable: {exc}", file=sys.stderr)
    return commands


def _summary(module: ModuleType) -> str:
    doc = (module.__doc__ or "").strip()
    return doc.splitlines()[0] if doc else ""


class _PrintVersion(argparse.Action):
    """--version: print version_text() as it is (argparse's own action rewraps the lines)."""

    def __init__(self, option_strings: list[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        sys.stdout.write(version_text() + "\n")  # on stdout, as argparse's own version action
        parser.exit(0)


def add_version_flag(parser: argparse.ArgumentParser) -> None:
    """`--version`, as kube-scheduler has it (`aiosched --version`, `aiosched run --version`)."""
    parser.add_argument(
        "--version",
        action=_PrintVersion,
        help="print aiosched's version and the Kubernetes release it follows, then exit",
    )


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, Command]]:
    from scheduler.app import commands as builtin

    parser = argparse.ArgumentParser(
        prog="aiosched",
        description="A Kubernetes scheduler on asyncio, compatible with kube-scheduler's "
        "KubeSchedulerConfiguration, with several profiles per process, OpenTelemetry tracing "
        "and hot-reloaded profiles.",
    )
    add_version_flag(parser)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    handlers: dict[str, Command] = {}
    modules: dict[str, ModuleType] = {**builtin.COMMANDS, **_external_commands()}
    for name in (
        "run",
        "cluster",
        "bench",
        "check-config",
        "explain",
        "what-if",
        "view",
        "replay",
        "record",
    ):
        module = modules.pop(name, None)
        if module is not None:
            modules[name] = module  # keep the documented order first
    for name, module in modules.items():
        summary = _summary(module)
        sub = subparsers.add_parser(
            name,
            help=summary,
            description=(module.__doc__ or "").strip(),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        command = cast(Command, module)
        command.add_arguments(sub)
        handlers[name] = command
    return parser, handlers


def main(argv: list[str] | None = None) -> int:
    parser, handlers = build_parser()
    args = parser.parse_args(argv)
    try:
        return handlers[args.command].main(args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
