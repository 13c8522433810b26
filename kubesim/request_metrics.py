"""Requests served, counted per client, verb, resource and response code; served at /metrics.

kube-apiserver's `apiserver_request_total` has no client label; kubesim adds the User-Agent's
product token (`aiosched`, `kubectl`, `Python`) as `client`, so a benchmark can tell how many
requests the scheduler made per pod apart from the benchmark's own. Counting is one dict
increment per request.
"""

from __future__ import annotations

from collections.abc import Mapping

from aiohttp import web

METRIC = "kubesim_requests_total"
Key = tuple[str, str, str, str, int]  # (client, verb, resource, subresource, code)


def client_of(user_agent: str) -> str:
    """The product token of a User-Agent: "kubectl/v1.31.0 (linux/amd64)" -> "kubectl"."""
    token = user_agent.split(" ", 1)[0].split("/", 1)[0]
    return token or "unknown"


def _resource_parts(path: str) -> list[str]:
    """RESOURCE[/NAME[/SUBRESOURCE]] of an API path; [] for discovery and other paths."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        parts = parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        parts = parts[3:]
    else:
        return []
    if len(parts) >= 3 and parts[0] == "namespaces" and parts[2] not in ("status", "finalize"):
        parts = parts[2:]  # namespaced: namespaces/NS/RESOURCE[/NAME[/SUB]]
    return parts


def resource_of(path: str) -> tuple[str, str]:
    """(resource, subresource) of an API path; ("", "") for discovery and other paths."""
    parts = _resource_parts(path)
    if not parts:
        return "", ""
    return parts[0], parts[2] if len(parts) > 2 else ""


def verb_of(method: str, path: str, query: Mapping[str, str]) -> str:
    """kube-apiserver's verb: WATCH / LIST / GET for reads, else the HTTP method."""
    if method != "GET":
        return method
    if query.get("watch") in ("1", "true"):
        return "WATCH"
    return "LIST" if len(_resource_parts(path)) == 1 else "GET"


class RequestCounter:
    def __init__(self) -> None:
        self.counts: dict[Key, int] = {}

    def record(self, request: web.Request, status: int) -> None:
        resource, subresource = resource_of(request.path)
        key = (
            client_of(request.headers.get("User-Agent", "")),
            verb_of(request.method, request.path, request.query),
            resource,
            subresource,
            status,
        )
        self.counts[key] = self.counts.get(key, 0) + 1

    def exposition(self) -> str:
        lines = [
            f"# HELP {METRIC} Requests served, by client (User-Agent product), verb, resource, "
            "subresource and HTTP code.",
            f"# TYPE {METRIC} counter",
        ]
        for (client, verb, resource, subresource, code), count in sorted(self.counts.items()):
            labels = (
                f'client="{_escape(client)}",verb="{verb}",resource="{resource}",'
                f'subresource="{subresource}",code="{code}"'
            )
            lines.append(f"{METRIC}{{{labels}}} {count}")
        return "\n".join(lines) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def parse_exposition(text: str) -> dict[Key, int]:
    """The counts in a /metrics text (for clients such as the benchmark)."""
    counts: dict[Key, int] = {}
    for line in text.splitlines():
        if not line.startswith(METRIC + "{"):
            continue
        labels_text, _, value = line[len(METRIC) + 1 :].rpartition("} ")
        labels = dict(
            (item.split("=", 1)[0], item.split("=", 1)[1].strip('"'))
            for item in labels_text.split('",')
            if "=" in item
        )
        key = (
            labels.get("client", ""),
            labels.get("verb", ""),
            labels.get("resource", ""),
            labels.get("subresource", ""),
            int(labels.get("code", "0").strip('"')),
        )
        counts[key] = int(float(value))
    return counts
