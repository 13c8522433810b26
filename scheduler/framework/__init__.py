"""The scheduling framework: extension-point protocols, status, cycle state, runtime."""
