"""deploy/grafana/aiosched-dashboard.json: a Grafana dashboard that only asks for what aiosched
exports.

Every query is read by a small PromQL tokenizer (metric names, label matchers, grouping labels,
ranges), and each metric name must be a family that a live ``SchedulerMetrics().exposition()``
or /metrics/resources declares (histogram series by their family's name), each label one that
family carries once recorded (or a label Prometheus attaches to every target). Names are never
listed by hand here, so a renamed metric breaks this test rather than a dashboard. The template
variables and the panel conventions (a title and a unit, $__rate_interval, ``le`` kept under
histogram_quantile) are checked too; deploy/grafana/README.md says how to import it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from observability.metrics import SchedulerMetrics
from observability.resource_metrics import PodResourceMetrics, PodResources

REPO = Path(__file__).resolve().parents[2]
DASHBOARD_PATH = REPO / "deploy" / "grafana" / "aiosched-dashboard.json"
DASHBOARD: dict[str, Any] = json.loads(DASHBOARD_PATH.read_text())

#: Labels Prometheus attaches to every scraped series (the target's), not the exporter's.
TARGET_LABELS = frozenset({"job", "instance"})

#: Grafana's built-in variables the dashboard may use.
GRAFANA_BUILTINS = frozenset({"__rate_interval", "__interval", "__range", "__interval_ms"})

#: PromQL's functions and aggregation operators the dashboard may call (a typo is caught here
#: instead of being taken for a metric name).
PROMQL_FUNCTIONS = frozenset(
    {
        "sum", "avg", "min", "max", "count", "topk", "bottomk", "quantile", "stddev",
        "rate", "irate", "increase", "delta", "deriv", "histogram_quantile", "clamp_min",
        "clamp_max", "abs", "label_replace", "vector", "scalar", "time", "avg_over_time",
        "max_over_time", "min_over_time", "sum_over_time", "absent",
    }
)  # fmt: skip
PROMQL_KEYWORDS = frozenset({"and", "or", "unless", "bool", "offset", "inf", "nan"})
GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
SELECTOR = re.compile(r"([A-Za-z_:][\w:]*)?\s*\{([^}]*)\}")
MATCHER = re.compile(r"([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)")
RANGE = re.compile(r"\[([^\]]*)\]")
IDENTIFIER = re.compile(r"[A-Za-z_:][\w:]*")
STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
HISTOGRAM_SERIES = ("_bucket", "_sum", "_count")
VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]")


class Query:
    """What a PromQL expression names: metrics, labels it matches or groups by, ranges."""

    def __init__(self, expr: str) -> None:
        self.expr = expr
        rest = STRING.sub('""', expr)
        self.ranges = RANGE.findall(rest)
        rest = RANGE.sub(" ", rest)
        self.grouping_labels = {
            label.strip() for labels in GROUPING.findall(rest) for label in labels.split(",")
        } - {""}
        rest = GROUPING.sub(" ", rest)
        self.metrics: set[str] = set()
        self.matcher_labels: set[str] = set()
        for name, matchers in SELECTOR.findall(rest):
            if name:
                self.metrics.add(name)
            self.matcher_labels.update(MATCHER.findall(matchers))
        rest = SELECTOR.sub(" ", rest)
        self.functions: set[str] = set()
        for match in IDENTIFIER.finditer(rest):
            word = match.group()
            if rest[match.end() :].lstrip().startswith("("):
                self.functions.add(word)
            elif word.lower() not in PROMQL_KEYWORDS:
                self.metrics.add(word)


def _exported_families() -> dict[str, str]:
    """Family name -> type, as /metrics and /metrics/resources declare them (# TYPE lines)."""
    text = SchedulerMetrics().exposition().decode() + PodResourceMetrics().exposition().decode()
    return dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.MULTILINE))


EXPORTED = _exported_families()


def _recorded_labels() -> dict[str, set[str]]:
    """Family name -> its labels, from metrics that recorded one of everything the dashboard
    reads (a labelled family has no series, hence no labels to read, until something happened)."""
    metrics = SchedulerMetrics()
    metrics.pod_scheduled("default-scheduler", 0.01)
    metrics.pod_scheduling_sli(1, 0.02)
    metrics.scheduling_algorithm(0.005)
    metrics.set_pending({"active": 1})
    metrics.unschedulable_added(["NodeResourcesFit"], "default-scheduler")
    metrics.incoming("active", "PodAdd")
    metrics.pod_scheduled_after_flush()
    metrics.observe_extension_point("Filter", "Success", "default-scheduler", 0.001)
    metrics.observe_plugin("NodeResourcesFit", "Filter", "Success", 0.0001)
    metrics.preemption_attempted()
    metrics.preemption_victims(2)
    metrics.pod_group_attempt("scheduled", "default-scheduler", 0.03)
    metrics.batch_attempt("default-scheduler", "hint_used")
    metrics.batch_cache_flushed("default-scheduler", "expired")
    metrics.pod_resources.set_source(
        lambda: [
            PodResources(
                "default", "web", "node-1", "default-scheduler", "",
                {"cpu": 0.5, "memory": 2**20}, {"cpu": 1, "memory": 2**21},
            )
        ]
    )  # fmt: skip
    text = metrics.exposition().decode() + metrics.resources_exposition().decode()
    labels: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            # the parser drops a counter's _total from the family name; key by the sample's
            name = sample.name
            if family.type == "histogram":
                name = family.name
            labels.setdefault(name, set()).update(set(sample.labels) - {"le"})
    return labels


RECORDED_LABELS = _recorded_labels()


def _panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels", []))


PANELS = [panel for panel in _panels(DASHBOARD["panels"]) if panel["type"] != "row"]
TARGETS = [
    pytest.param(target["expr"], id=f"{panel['title']}/{target['refId']}")
    for panel in PANELS
    for target in panel["targets"]
]
VARIABLES = DASHBOARD["templating"]["list"]


def family_of(series: str) -> str:
    """The family a series belongs to: a histogram's _bucket/_sum/_count series by its name."""
    for suffix in HISTOGRAM_SERIES:
        base = series.removesuffix(suffix)
        if base != series and EXPORTED.get(base) == "histogram":
            return base
    return series


def test_tokenizer_reads_names_labels_and_functions() -> None:
    query = Query(
        'histogram_quantile(0.99, sum by (plugin, le) (rate(a_bucket{job=~"$job", x!="}"}'
        "[$__rate_interval]))) / ignoring(x) b and on (y) c"
    )

    assert query.metrics == {"a_bucket", "b", "c"}
    assert query.functions == {"histogram_quantile", "sum", "rate"}
    assert query.grouping_labels == {"plugin", "le", "x", "y"}
    assert query.matcher_labels == {"job", "x"}
    assert query.ranges == ["$__rate_interval"]


def test_dashboard_is_a_current_grafana_model() -> None:
    assert DASHBOARD["title"] and DASHBOARD["uid"]
    assert DASHBOARD["schemaVersion"] >= 39  # Grafana 10.4 / 11
    assert DASHBOARD["id"] is None  # importable into any Grafana
    ids = [panel["id"] for panel in _panels(DASHBOARD["panels"])]
    assert len(ids) == len(set(ids))
    assert TARGETS


def test_exported_families_come_from_both_endpoints() -> None:
    # guards the name source itself: an empty or partial exposition would pass everything
    assert EXPORTED["scheduler_schedule_attempts_total"] == "counter"
    assert EXPORTED["scheduler_scheduling_attempt_duration_seconds"] == "histogram"
    assert EXPORTED["process_resident_memory_bytes"] == "gauge"
    assert EXPORTED["kube_pod_resource_request"] == "gauge"


@pytest.mark.parametrize("expr", TARGETS)
def test_every_query_names_metrics_the_scheduler_exports(expr: str) -> None:
    query = Query(expr)

    assert query.metrics, expr
    unknown = {name for name in query.metrics if family_of(name) not in EXPORTED}
    assert not unknown, f"{sorted(unknown)} are not exported by aiosched: {expr}"
    assert query.functions <= PROMQL_FUNCTIONS, expr


@pytest.mark.parametrize("expr", TARGETS)
def test_every_label_a_query_uses_is_one_its_metrics_carry(expr: str) -> None:
    query = Query(expr)
    families = {family_of(name) for name in query.metrics}
    carried = set(TARGET_LABELS)
    for family in families:
        assert family in RECORDED_LABELS, f"record {family} in _recorded_labels"
        carried |= RECORDED_LABELS[family]
    if any(EXPORTED[family] == "histogram" for family in families):
        carried.add("le")

    used = query.matcher_labels | query.grouping_labels
    assert used <= carried, f"{sorted(used - carried)} not on {sorted(families)}: {expr}"


@pytest.mark.parametrize("expr", TARGETS)
def test_rates_use_the_rate_interval_and_quantiles_keep_le(expr: str) -> None:
    query = Query(expr)

    assert set(query.ranges) <= {"$__rate_interval"}, expr
    if "histogram_quantile" in query.functions:
        assert "le" in query.grouping_labels, expr
        assert any(name.endswith("_bucket") for name in query.metrics), expr


@pytest.mark.parametrize("panel", PANELS, ids=[panel["title"] for panel in PANELS])
def test_every_panel_has_a_title_a_unit_and_the_datasource_variable(panel: dict[str, Any]) -> None:
    assert panel["title"].strip()
    assert panel["fieldConfig"]["defaults"]["unit"].strip()
    assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
    for target in panel["targets"]:
        assert target["datasource"] == panel["datasource"]
        assert target["expr"].strip()


def test_datasource_variable_picks_a_prometheus() -> None:
    (datasource,) = [variable for variable in VARIABLES if variable["name"] == "datasource"]

    assert datasource["type"] == "datasource"
    assert datasource["query"] == "prometheus"
    assert VARIABLES[0] is datasource  # the others query it


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _referenced(text: str) -> set[str]:
    return {next(group for group in match.groups() if group) for match in VARIABLE.finditer(text)}


def test_every_variable_used_is_defined() -> None:
    defined = {variable["name"] for variable in VARIABLES}
    used = set().union(*(_referenced(text) for text in _strings(DASHBOARD)))

    assert {"datasource", "job", "instance", "profile"} <= defined
    assert used - GRAFANA_BUILTINS <= defined, sorted(used - GRAFANA_BUILTINS - defined)


@pytest.mark.parametrize(
    "variable",
    [variable for variable in VARIABLES if variable["type"] == "query"],
    ids=lambda variable: variable["name"],
)
def test_query_variables_read_exported_labels_of_variables_defined_before(
    variable: dict[str, Any],
) -> None:
    definition = variable["definition"]
    assert variable["query"]["query"] == definition
    assert variable["datasource"]["uid"] == "${datasource}"
    match = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", definition)
    assert match, definition
    selector, label = match.groups()
    query = Query(selector)
    (metric,) = query.metrics
    assert metric in EXPORTED, definition
    assert label in RECORDED_LABELS[metric] | TARGET_LABELS, definition
    assert query.matcher_labels <= RECORDED_LABELS[metric] | TARGET_LABELS, definition

    earlier = {v["name"] for v in VARIABLES[: VARIABLES.index(variable)]}
    assert _referenced(definition) <= earlier, definition
