"""Bottom-layer primitives that both the scheduler and kubesim may import."""
