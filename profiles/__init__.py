"""KubeSchedulerConfiguration v1: parsing, defaults, validation, resolved profiles, reload."""

from profiles.api import load_config, load_config_text, resolve_config
from profiles.config import ResolvedConfig, ResolvedProfile, WeightedPlugin
from profiles.errors import ConfigError, ConfigInvalidError
from profiles.spec import EXTENSION_POINTS, MULTI_POINT, PluginRegistry, PluginSpec

__all__ = [
    "EXTENSION_POINTS",
    "MULTI_POINT",
    "ConfigError",
    "ConfigInvalidError",
    "PluginRegistry",
    "PluginSpec",
    "ResolvedConfig",
    "ResolvedProfile",
    "WeightedPlugin",
    "load_config",
    "load_config_text",
    "resolve_config",
]
