"""The web view: one self-contained HTML page at /debug/view that polls /debug/view/state.

Operators want to see the scheduler's cluster as a picture, as kube-scheduler-simulator's web
view shows a simulated one, but of the scheduler that runs their cluster. The page is a single
document with inline CSS and vanilla JavaScript: no build step, nothing fetched from elsewhere
(its Content-Security-Policy allows only itself), so it works air-gapped and behind a proxy:
``aiosched view`` (scheduler.app.commands.view) forwards a browser's requests with the user's
bearer token, which a browser cannot send. It draws nodes as boxes filled by their pods'
requests (and DRA devices), the queue sizes, pending pods with their last explain, recent
attempts with their time per extension point, gangs and their quorum, and links to the
configured trace UI.

The JSON comes from a callable the service hands over (scheduler.app.web_view builds it:
only the app layer sees the scheduler). Both routes are /debug routes, so the secure port's
guard (delegated authentication and authorization) checks them as it checks /debug/explain.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import orjson
from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

VIEW_PATH: Final = "/debug/view"
STATE_PATH: Final = "/debug/view/state"
#: The page runs only its own inline script and style and talks only to its own origin.
_CSP: Final = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'"
)


def web_view_routes(state: Callable[[], Mapping[str, Any]]) -> dict[str, Handler]:
    """GET routes: the page, and the JSON it polls (computed on each request)."""

    async def page(request: web.Request) -> web.StreamResponse:
        return web.Response(
            text=PAGE,
            content_type="text/html",
            charset="utf-8",
            headers={"Cache-Control": "no-store", "Content-Security-Policy": _CSP},
        )

    async def state_json(request: web.Request) -> web.StreamResponse:
        return web.Response(
            body=orjson.dumps(state(), option=orjson.OPT_NON_STR_KEYS),
            content_type="application/json",
            headers={"Cache-Control": "no-store"},
        )

    return {VIEW_PATH: page, STATE_PATH: state_json}


PAGE: Final = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>aiosched</title>
<style>
  :root { --bg:#f6f7f9; --card:#fff; --ink:#1d2430; --dim:#6b7280; --line:#d9dde3;
          --cpu:#3b82f6; --mem:#8b5cf6; --pods:#10b981; --dev:#f59e0b; --bad:#dc2626; }
  * { box-sizing: border-box; }
  body { margin:0; font:14px/1.4 system-ui, sans-serif; background:var(--bg); color:var(--ink); }
  header { display:flex; gap:16px; align-items:baseline; padding:10px 18px; background:#1d2430;
           color:#fff; }
  header h1 { font-size:18px; margin:0; }
  header .meta { color:#c7cdd6; font-size:13px; }
  main { padding:12px 18px; display:grid; gap:14px; }
  section { background:var(--card); border:1px solid var(--line); border-radius:8px;
            padding:10px 14px; }
  h2 { font-size:15px; margin:0 0 8px; }
  .counters { display:flex; gap:12px; flex-wrap:wrap; }
  .counter { border:1px solid var(--line); border-radius:6px; padding:6px 12px; min-width:110px; }
  .counter b { display:block; font-size:22px; }
  .counter span { color:var(--dim); font-size:12px; text-transform:uppercase; }
  .nodes { display:grid; grid-template-columns:repeat(auto-fill, minmax(190px, 1fr)); gap:10px; }
  .node { border:1px solid var(--line); border-radius:6px; padding:8px; }
  .node.cordoned { border-style:dashed; opacity:.7; }
  .node h3 { font-size:13px; margin:0 0 6px; overflow:hidden; text-overflow:ellipsis;
             white-space:nowrap; }
  .bar { position:relative; height:16px; background:#eef0f3; border-radius:3px; margin:3px 0;
         font-size:11px; overflow:hidden; }
  .bar i { position:absolute; inset:0 auto 0 0; }
  .bar em { position:relative; padding-left:4px; font-style:normal; }
  .bar.full i { background:var(--bad) !important; }
  table { border-collapse:collapse; width:100%; font-size:13px; }
  th, td { text-align:left; padding:4px 6px; border-bottom:1px solid var(--line);
           vertical-align:top; }
  th { color:var(--dim); font-weight:600; }
  .dim { color:var(--dim); }
  .bad { color:var(--bad); }
  .ok { color:#047857; }
  .devs { display:flex; flex-wrap:wrap; gap:2px; margin-top:4px; }
  .devs i { display:block; width:10px; height:10px; border:1px solid var(--dev);
            border-radius:2px; }
  .devs i.allocated { background:var(--dev); }
  .devs i.shared { border-radius:50%; }
  .points { display:flex; height:14px; min-width:160px; border-radius:3px; overflow:hidden; }
  .points i { display:block; height:100%; }
  .empty { color:var(--dim); font-style:italic; }
  #error { color:var(--bad); }
</style>
</head>
<body>
<header><h1>aiosched</h1><span class="meta" id="meta">loading&hellip;</span>
<span id="error"></span></header>
<main>
  <section><h2>Queue</h2><div class="counters" id="queue"></div></section>
  <section><h2>Nodes <span class="dim" id="node-count"></span></h2>
    <div class="nodes" id="nodes"></div></section>
  <section><h2>Pending pods</h2><div id="pending"></div></section>
  <section><h2>Recent attempts</h2><div id="attempts"></div></section>
  <section><h2>Gangs</h2><div id="gangs"></div></section>
</main>
<script>
"use strict";
const STATE_URL = location.pathname.replace(/\\/+$/, "") + "/state";
const POINT_COLORS = {PreFilter:"#93c5fd", Filter:"#3b82f6", PostFilter:"#ef4444",
  PreScore:"#c4b5fd", Score:"#8b5cf6", NormalizeScore:"#a78bfa", Reserve:"#6ee7b7",
  Permit:"#10b981", WaitOnPermit:"#fcd34d", PreBind:"#f59e0b", Bind:"#d97706",
  PostBind:"#fbbf24"};

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else if (key === "style") node.style.cssText = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}
function fill(id, ...children) { document.getElementById(id).replaceChildren(...children); }
function bytes(n) {
  const units = ["B", "Ki", "Mi", "Gi", "Ti"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(n)) + units[i];
}
function cpu(m) { return m % 1000 === 0 ? String(m / 1000) : m + "m"; }
function bar(label, used, total, color, fmt) {
  const share = total > 0 ? Math.min(used / total, 1) : (used > 0 ? 1 : 0);
  const box = el("div", {class: "bar" + (total > 0 && used >= total ? " full" : ""),
    title: label + " " + fmt(used) + " / " + fmt(total)});
  box.append(el("i", {style: "width:" + (share * 100).toFixed(1) + "%;background:" + color}),
    el("em", {}, label + " " + fmt(used) + "/" + fmt(total)));
  return box;
}
function ago(ts, now) { return Math.max(0, now - ts).toFixed(1) + "s ago"; }
function podName(p) { return p.namespace + "/" + p.name; }
function table(headers, rows, empty, id) {
  if (!rows.length) return el("p", {class: "empty", id: id}, empty);
  const t = el("table", {id: id}, el("tr", {}, ...headers.map(h => el("th", {}, h))));
  rows.forEach(r => t.append(r));
  return t;
}

function render(s) {
  const now = s.time;
  fill("meta", (s.ready ? "synced" : "not synced") + " · cycle " + (s.schedulingCycle ?? "-")
    + " · profiles " + (s.profiles || []).join(", ") + " · assumed pods "
    + (s.assumedPods ?? 0) + " · " + new Date(now * 1000).toLocaleTimeString());
  const q = s.queue || {};
  fill("queue", ...["active", "backoff", "unschedulable", "gated"].map(name =>
    el("div", {class: "counter", id: "queue-" + name},
      el("b", {}, q[name] ?? 0), el("span", {}, name))));
  const nodes = s.nodes || [];
  fill("node-count", "(" + nodes.length + (s.nodesOmitted ? ", " + s.nodesOmitted
    + " more not shown" : "") + ")");
  fill("nodes", ...nodes.map(n => {
    const box = el("div", {class: "node" + (n.unschedulable ? " cordoned" : ""),
      "data-node": n.name}, el("h3", {title: n.name}, n.name));
    box.append(bar("cpu", n.requested.cpu, n.allocatable.cpu, "var(--cpu)", cpu),
      bar("mem", n.requested.memory, n.allocatable.memory, "var(--mem)", bytes),
      bar("pods", n.requested.pods, n.allocatable.pods, "var(--pods)", String));
    if (n.devices) {
      box.append(bar("devices", n.devices.allocated, n.devices.total, "var(--dev)", String));
      // one mark per device: filled when allocated, round when its slice is not this node's
      // alone (allNodes, a node selector, per-device selection)
      box.append(el("div", {class: "devs"}, ...(n.devices.list || []).map(d => el("i", {
        class: "dev" + (d.allocated ? " allocated" : "") + (d.shared ? " shared" : ""),
        "data-device": d.driver + "/" + d.pool + "/" + d.name,
        title: d.driver + "/" + d.pool + "/" + d.name + (d.allocated ? " (allocated)" : "")
          + (d.shared ? " · shared with other nodes" : "")}))));
    }
    return box;
  }));
  if (!nodes.length) fill("nodes", el("p", {class: "empty"}, "no nodes"));
  fill("pending", table(["pod", "queue", "attempt", "why (last explain)"],
    (s.pending || []).map(p => el("tr", {"data-pod": podName(p.pod)},
      el("td", {}, podName(p.pod)), el("td", {}, p.queue || ""),
      el("td", {}, "#" + p.attempt + " ", el("span", {class: "dim"}, ago(p.timestamp, now))),
      el("td", {class: "reason"}, el("div", {class: "bad"}, p.message),
        ...(p.filterVerdicts || []).map(v => el("div", {class: "dim"},
          v.count + " node(s): " + v.plugin + ": " + v.reason))))),
    "no pending pod has failed an attempt", "pending-table"));
  fill("attempts", table(["when", "pod", "result", "time per extension point", "trace"],
    (s.attempts || []).map(a => {
      const points = a.extensionPoints || [];
      const total = points.reduce((sum, p) => sum + p.ms, 0);
      const strip = el("div", {class: "points"});
      points.forEach(p => strip.append(el("i", {title: p.point + " " + p.ms.toFixed(3) + " ms",
        style: "width:" + (total > 0 ? p.ms / total * 100 : 0) + "%;background:"
          + (POINT_COLORS[p.point] || "#9ca3af")})));
      const detail = points.length ? el("div", {}, strip, el("div", {class: "dim"},
        points.map(p => p.point + " " + p.ms.toFixed(2)).join(" · ") + " ms"))
        : el("span", {class: "dim"}, "no timings");
      const link = a.traceUrl ? el("a", {href: a.traceUrl, target: "_blank",
        rel: "noopener"}, "trace") : (a.traceId ? el("span", {class: "dim"}, a.traceId)
        : el("span", {class: "dim"}, "not traced"));
      return el("tr", {}, el("td", {class: "dim"}, ago(a.timestamp, now)),
        el("td", {}, podName(a.pod), el("span", {class: "dim"}, " #" + a.attempt)),
        el("td", {class: a.result === "scheduled" ? "ok" : "bad"},
          a.result + (a.node ? " → " + a.node : ""),
          a.message ? el("div", {class: "dim"}, a.message) : null),
        el("td", {}, detail), el("td", {}, link));
    }), "no attempt yet", "attempts-table"));
  const groups = (s.gangs || []).map(g => ({kind: "PodGroup", need: g.minCount, ...g}))
    .concat((s.coschedulingGroups || []).map(g => ({kind: "Coscheduling", need: g.minMember,
      ...g})));
  fill("gangs", table(["group", "kind", "scheduled / members", "min", "quorum"],
    groups.map(g => el("tr", {}, el("td", {}, g.namespace + "/" + g.name),
      el("td", {class: "dim"}, g.kind + (g.phase ? " (" + g.phase + ")" : "")),
      el("td", {}, g.scheduled + " / " + g.members), el("td", {}, g.need ?? "-"),
      el("td", {class: g.quorum ? "ok" : "bad"}, g.quorum ? "reached" : "waiting"))),
    "no gangs", "gangs-table"));
}

async function poll() {
  try {
    const response = await fetch(STATE_URL, {cache: "no-store", credentials: "same-origin"});
    if (!response.ok) throw new Error(STATE_URL + ": HTTP " + response.status);
    render(await response.json());
    fill("error");
  } catch (err) {
    fill("error", String(err));
  }
  setTimeout(poll, 2000);
}
poll();
</script>
</body>
</html>
"""
