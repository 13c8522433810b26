"""An example out-of-tree aiosched plugin, registered through the `aiosched.plugins` entry point."""

from aiosched_example_plugin.node_name_prefix import (
    ERR_REASON_PREFIX_MISMATCH,
    NodeNamePrefix,
    NodeNamePrefixArgs,
)

__all__ = ["ERR_REASON_PREFIX_MISMATCH", "NodeNamePrefix", "NodeNamePrefixArgs"]
