"""`aiosched` loads the subcommand it runs and no other; `aiosched --help` loads none.

Before, every invocation imported every subcommand (the embedded cluster, the benchmarks, the
policy lab, DRA's CEL compiler): about 2 s of CPU before `--help` printed a line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from scheduler.app.cli import build_parser, chosen_command


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=120, check=False
    )


def _modules_after(argv: list[str]) -> tuple[int, list[str]]:
    """Run `aiosched ARGV` in a fresh interpreter: its exit status and the modules it loaded."""
    probe = (
        "import json, sys\n"
        "from scheduler.app import cli\n"
        "try:\n"
        f"    status = cli.main({argv!r})\n"
        "except SystemExit as exit_:\n"
        "    status = exit_.code\n"
        "sys.stderr.write('\\nMODULES ' + json.dumps(sorted(sys.modules)) + '\\n')\n"
        "sys.exit(status)\n"
    )
    done = _python("-c", probe)
    line = done.stderr.rpartition("MODULES ")[2]
    return done.returncode, json.loads(line)


def _loaded(modules: list[str], *prefixes: str) -> list[str]:
    return [m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes)]


def test_help_loads_no_subcommand() -> None:
    status, modules = _modules_after(["--help"])
    assert status == 0
    commands = [m for m in _loaded(modules, "scheduler.app.commands") if m.count(".") == 3]
    assert commands == []
    assert _loaded(modules, "kubesim.cli", "bench.cli", "numpy", "aiohttp") == []


def test_run_loads_neither_the_embedded_cluster_nor_the_benchmarks_nor_the_lab() -> None:
    status, modules = _modules_after(["run", "--help"])
    assert status == 0
    assert "scheduler.app.commands.run" in modules
    assert _loaded(modules, "kubesim.cli", "kubesim.cluster", "bench.cli", "scheduler.lab") == []
    assert _loaded(modules, "scheduler.app.commands.replay", "scheduler.app.commands.explain") == []


def test_an_unknown_command_lists_every_one() -> None:
    done = _python("-m", "scheduler.app.cli", "schedule")
    assert done.returncode == 2
    assert "invalid choice: 'schedule'" in done.stderr
    for name in ("run", "cluster", "bench", "check-config", "explain", "replay", "record"):
        assert repr(name) in done.stderr


def test_the_summaries_read_from_source_are_the_loaded_modules() -> None:
    """`aiosched --help` reads each summary from the module's source; loaded, the module says
    the same (the parser with every command loaded is the reference)."""
    unloaded, _ = build_parser(only="")
    loaded, _ = build_parser()

    def summaries(parser: object) -> dict[str, str | None]:
        (action,) = [a for a in parser._actions if a.dest == "command"]  # type: ignore[attr-defined]
        return {choice.dest: choice.help for choice in action._choices_actions}

    assert summaries(unloaded) == summaries(loaded)
    assert len(summaries(loaded)) >= 9


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        ([], None),
        (["--help"], None),
        (["--version"], None),
        (["run", "--config", "x.yaml"], "run"),
        (["-h", "explain", "ns/pod"], None),
        (["--version", "run"], None),
        (["check-config", "run"], "check-config"),
    ],
)
def test_the_command_is_the_first_word_unless_it_is_an_option(
    argv: list[str], command: str | None
) -> None:
    assert chosen_command(argv) == command


@pytest.mark.parametrize("argv", [["--version"], ["run", "--version"]])
def test_version_on_the_top_level_and_on_run(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """kube-scheduler --version: `aiosched run --version` as well as `aiosched --version`."""
    from scheduler.app import cli

    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith("aiosched ")
