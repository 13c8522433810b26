"""The last scheduling attempt of each pending pod, compressed, for ``aiosched explain``.

The scheduler hands over what it already computed (per-node filter verdicts, per-plugin scores);
the store compresses it at once (nodes grouped by identical verdict, a few names per group, only the
top-K scored nodes) so memory stays bounded by ``max_pods`` times a small constant, whatever the
cluster size. With ``max_pods=0`` recording is switched off and ``record`` returns immediately.
"""

from __future__ import annotations

import heapq
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: node name → (plugin that rejected it, reason it gave)
FilterVerdicts = Mapping[str, tuple[str, str]]
#: node name → plugin name → weighted score
NodeScores = Mapping[str, Mapping[str, int]]


@dataclass(frozen=True, slots=True)
class VerdictGroup:
    plugin: str
    reason: str
    count: int
    nodes: tuple[str, ...]  # at most max_names_per_group, sorted

    def to_dict(self) -> dict[str, Any]:
        return {
            "plugin": self.plugin,
            "reason": self.reason,
            "count": self.count,
            "nodes": list(self.nodes),
        }


@dataclass(frozen=True, slots=True)
class ScoredNode:
    node: str
    total: int
    plugins: Mapping[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "total": self.total, "plugins": dict(self.plugins)}


@dataclass(frozen=True, slots=True)
class Explanation:
    uid: str
    namespace: str
    name: str
    profile: str
    attempt: int
    timestamp: float
    result: str  # scheduled / unschedulable / error
    message: str
    node: str | None
    evaluated_nodes: int | None
    feasible_nodes: int | None
    rejected_nodes: int
    verdicts: tuple[VerdictGroup, ...]
    top_nodes: tuple[ScoredNode, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "pod": {"namespace": self.namespace, "name": self.name, "uid": self.uid},
            "profile": self.profile,
            "attempt": self.attempt,
            "timestamp": self.timestamp,
            "result": self.result,
            "message": self.message,
            "node": self.node,
            "evaluatedNodes": self.evaluated_nodes,
            "feasibleNodes": self.feasible_nodes,
            "rejectedNodes": self.rejected_nodes,
            "filterVerdicts": [group.to_dict() for group in self.verdicts],
            "topNodes": [scored.to_dict() for scored in self.top_nodes],
        }


def group_verdicts(verdicts: FilterVerdicts, max_names: int) -> tuple[VerdictGroup, ...]:
    """Nodes grouped by identical (plugin, reason), largest group first."""
    groups: dict[tuple[str, str], list[str]] = {}
    for node, verdict in verdicts.items():
        groups.setdefault(verdict, []).append(node)
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    return tuple(
        VerdictGroup(plugin, reason, len(nodes), tuple(heapq.nsmallest(max_names, nodes)))
        for (plugin, reason), nodes in ordered
    )


def top_nodes(
    scores: NodeScores, k: int, totals: Mapping[str, int] | None = None
) -> tuple[ScoredNode, ...]:
    """The ``k`` best nodes by total score (ties by name), with their per-plugin scores."""

    def total(node: str) -> int:
        if totals is not None and node in totals:
            return totals[node]
        return sum(scores[node].values())

    best = heapq.nsmallest(k, scores, key=lambda node: (-total(node), node))
    return tuple(ScoredNode(node, total(node), dict(scores[node])) for node in best)


class ExplainStore:
    """Last attempt per pod, least recently recorded evicted first beyond ``max_pods``."""

    def __init__(
        self,
        max_pods: int = 1000,
        max_names_per_group: int = 10,
        top_k: int = 5,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.max_pods = max_pods
        self.max_names_per_group = max_names_per_group
        self.top_k = top_k
        self._clock = clock
        self._by_uid: OrderedDict[str, Explanation] = OrderedDict()
        self._uid_by_key: dict[tuple[str, str], str] = {}

    @property
    def enabled(self) -> bool:
        return self.max_pods > 0

    def __len__(self) -> int:
        return len(self._by_uid)

    def record(
        self,
        uid: str,
        namespace: str,
        name: str,
        *,
        profile: str,
        attempt: int,
        result: str,
        message: str = "",
        node: str | None = None,
        filter_verdicts: FilterVerdicts | None = None,
        scores: NodeScores | None = None,
        totals: Mapping[str, int] | None = None,
        evaluated_nodes: int | None = None,
        feasible_nodes: int | None = None,
    ) -> None:
        """Keep this attempt as the pod's explanation, replacing the previous one."""
        if self.max_pods <= 0:
            return
        verdicts = filter_verdicts or {}
        explanation = Explanation(
            uid=uid,
            namespace=namespace,
            name=name,
            profile=profile,
            attempt=attempt,
            timestamp=self._clock(),
            result=result,
            message=message,
            node=node,
            evaluated_nodes=evaluated_nodes,
            feasible_nodes=feasible_nodes,
            rejected_nodes=len(verdicts),
            verdicts=group_verdicts(verdicts, self.max_names_per_group),
            top_nodes=top_nodes(scores, self.top_k, totals) if scores else (),
        )
        self._by_uid[uid] = explanation
        self._by_uid.move_to_end(uid)
        self._uid_by_key[(namespace, name)] = uid
        while len(self._by_uid) > self.max_pods:
            _, evicted = self._by_uid.popitem(last=False)
            self._drop_key(evicted)

    def forget(self, uid: str) -> None:
        """The pod was bound or deleted: drop its explanation."""
        explanation = self._by_uid.pop(uid, None)
        if explanation is not None:
            self._drop_key(explanation)

    def _drop_key(self, explanation: Explanation) -> None:
        key = (explanation.namespace, explanation.name)
        if self._uid_by_key.get(key) == explanation.uid:
            del self._uid_by_key[key]

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The pod's last attempt as JSON-ready data, or None if nothing is kept for it."""
        uid = self._uid_by_key.get((namespace, name))
        explanation = self._by_uid.get(uid) if uid is not None else None
        return explanation.to_dict() if explanation is not None else None


def render_text(data: Mapping[str, Any]) -> str:
    """A human-readable explanation of what :meth:`ExplainStore.get` returned."""
    pod = data["pod"]
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(data["timestamp"]))
    lines = [
        f"Pod:      {pod['namespace']}/{pod['name']} (uid {pod['uid']})",
        f"Profile:  {data['profile']}",
        f"Attempt:  {data['attempt']} at {when}",
        f"Result:   {data['result']}" + (f" on node {data['node']}" if data.get("node") else ""),
    ]
    if data.get("message"):
        lines.append(f"Message:  {data['message']}")
    counts = []
    if data.get("evaluatedNodes") is not None:
        counts.append(f"{data['evaluatedNodes']} evaluated")
    if data.get("feasibleNodes") is not None:
        counts.append(f"{data['feasibleNodes']} feasible")
    if data.get("rejectedNodes"):
        counts.append(f"{data['rejectedNodes']} rejected")
    if counts:
        lines.append("Nodes:    " + ", ".join(counts))

    verdicts = data.get("filterVerdicts") or []
    if verdicts:
        lines += ["", "Filter verdicts (nodes grouped by the plugin that rejected them):"]
        rows = [
            (g["plugin"], g["reason"], str(g["count"]), _names(g["nodes"], g["count"]))
            for g in verdicts
        ]
        lines += _table(("PLUGIN", "REASON", "NODES", "EXAMPLES"), rows)

    top = data.get("topNodes") or []
    if top:
        plugins = sorted({plugin for scored in top for plugin in scored["plugins"]})
        lines += ["", "Top nodes by score:"]
        rows = [
            (s["node"], str(s["total"]), *(str(s["plugins"].get(p, "-")) for p in plugins))
            for s in top
        ]
        lines += _table(("NODE", "TOTAL", *plugins), rows)
    return "\n".join(lines) + "\n"


def _names(nodes: list[str], count: int) -> str:
    more = count - len(nodes)
    return ", ".join(nodes) + (f" (+{more} more)" if more > 0 else "")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    all_rows = (header, *rows)
    widths = [max(len(row[i]) for row in all_rows) for i in range(len(header))]
    return [
        "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in all_rows
    ]
