"""The scheduler package's own subcommands (others come from the aiosched.commands group).

Named by module, not imported here: `aiosched run` loads only run's module and what it needs,
and `aiosched --help` reads the summaries from the modules' sources (scheduler/app/cli.py)."""

COMMANDS: dict[str, str] = {
    "run": "scheduler.app.commands.run",
    "check-config": "scheduler.app.commands.check_config",
    "explain": "scheduler.app.commands.explain",
    "what-if": "scheduler.app.commands.what_if",
    "view": "scheduler.app.commands.view",
    "replay": "scheduler.app.commands.replay",
    "record": "scheduler.app.commands.record",
}
