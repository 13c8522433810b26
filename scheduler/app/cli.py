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
import ast
import functools
import importlib
import importlib.util
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from types import ModuleType
from typing import Protocol, cast

from observability.version import version_text


class Command(Protocol):
    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def main(self, args: argparse.Namespace) -> int: ...


#: The order `aiosched --help` lists the documented subcommands in; others follow.
_DOCUMENTED_ORDER = (
    "run", "cluster", "bench", "check-config", "explain", "what-if", "view", "replay", "record",
)  # fmt: skip


@dataclass(frozen=True)
class _CommandSource:
    """Where a subcommand lives: its module, imported only when the command runs (or when a
    caller asks for every command's flags), so that `aiosched run` does not load the embedded
    cluster, the benchmarks or the policy lab, and `aiosched --help` loads none of them."""

    module: str
    load: Callable[[], ModuleType]

    def docstring(self) -> str:
        """The module's docstring, read from its source without running it."""
        loaded = sys.modules.get(self.module)
        if loaded is not None:
            return loaded.__doc__ or ""
        spec = importlib.util.find_spec(self.module)
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            return ""  # no source to read (a broken or compiled command): listed bare
        with open(spec.origin, encoding="utf-8") as source:
            return ast.get_docstring(ast.parse(source.read()), clean=False) or ""


def _command_sources() -> dict[str, _CommandSource]:
    from scheduler.app.commands import COMMANDS

    sources = {
        name: _CommandSource(module, functools.partial(importlib.import_module, module))
        for name, module in COMMANDS.items()
    }
    for entry in entry_points(group="aiosched.commands"):
        sources[entry.name] = _CommandSource(entry.module, entry.load)
    return sources


def _summary(doc: str) -> str:
    doc = doc.strip()
    return doc.splitlines()[0] if doc else ""


def chosen_command(argv: Sequence[str]) -> str | None:
    """The subcommand `argv` runs: its first word. None when that is an option (the top level's
    are -h, --help and --version, which end the call before any subcommand runs, and unknown
    ones, a usage error) or when there is none."""
    if argv and not argv[0].startswith("-"):
        return argv[0]
    return None


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


def build_parser(
    only: str | None = None,
) -> tuple[argparse.ArgumentParser, dict[str, Command]]:
    """The command line's parser and each loaded subcommand's handler.

    `only` None: every subcommand is imported and given its flags (tests, the docs' checks).
    `only` a subcommand's name: that one alone; the others are listed by name. `only` anything
    else (help, a typo): none is imported; each is listed with the summary its source begins
    with, for argparse's help or its "invalid choice" message."""
    parser = argparse.ArgumentParser(
        prog="aiosched",
        description="A Kubernetes scheduler on asyncio, compatible with kube-scheduler's "
        "KubeSchedulerConfiguration, with several profiles per process, OpenTelemetry tracing "
        "and hot-reloaded profiles.",
    )
    add_version_flag(parser)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    handlers: dict[str, Command] = {}
    found = _command_sources()
    documented = {name: found.pop(name) for name in _DOCUMENTED_ORDER if name in found}
    sources = {**documented, **found}  # the documented ones first, in their order
    for name, source in sources.items():
        if only is not None and name != only:
            # Not run in this call: named for argparse, summarised only when it may print them.
            summary = None if only in sources else _summary(source.docstring())
            subparsers.add_parser(name, help=summary)
            continue
        try:
            module = source.load()
        except ImportError as exc:  # a broken optional command must not break the others
            print(f"aiosched: command {name!r} unavailable: {exc}", file=sys.stderr)
            continue
        doc = module.__doc__ or ""
        sub = subparsers.add_parser(
            name,
            help=_summary(doc),
            description=doc.strip(),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        command = cast(Command, module)
        command.add_arguments(sub)
        handlers[name] = command
    return parser, handlers


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    parser, handlers = build_parser(only=chosen_command(argv) or "")
    args = parser.parse_args(argv)
    try:
        return handlers[args.command].main(args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
