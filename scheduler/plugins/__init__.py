"""In-tree plugins, one module per plugin, named after it."""
