"""The scheduler cache (nodes, bound and assumed pods) and the per-cycle snapshot."""
