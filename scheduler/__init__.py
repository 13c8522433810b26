"""aiosched's scheduler service: informers, cache, queue, framework, plugins, the loop, the CLI."""
