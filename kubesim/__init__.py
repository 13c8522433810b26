"""kubesim: an embedded, Kubernetes-API-compatible server with simulated nodes."""
