"""NodeResourcesFit: resource fit filtering and allocation-based scoring."""
