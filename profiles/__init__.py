"""KubeSchedulerConfiguration v1: parsing, defaults, validation, resolved profiles, reload."""
