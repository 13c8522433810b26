"""The scheduler package's own subcommands (others come from the aiosched.commands group)."""

from types import ModuleType

from scheduler.app.commands import check_config, explain, record, replay, run, view, what_if

COMMANDS: dict[str, ModuleType] = {
    "run": run,
    "check-config": check_config,
    "explain": explain,
    "what-if": what_if,
    "view": view,
    "replay": replay,
    "record": record,
}
