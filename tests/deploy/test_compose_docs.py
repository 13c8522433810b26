"""docs/operating.md's Docker section describes what compose.yaml and the code really do.

The files it names exist, the command line and OTEL_* settings it quotes are the ones
compose.yaml uses, span names are the tracing code's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from observability.tracing import ATTEMPT_SPAN_NAME, POD_SPAN_NAME

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "operating.md").read_text().split("## With Docker", 1)[1]
SERVICES = yaml.safe_load((REPO / "compose.yaml").read_text())["services"]


def test_every_repository_file_it_names_exists() -> None:
    paths = set(re.findall(r"\b(?:deploy|examples)/[\w./-]*[\w/]", DOC))

    assert "deploy/example-pod.yaml" in paths
    for path in paths:
        assert (REPO / path).exists(), path


def test_quoted_command_line_is_the_one_compose_runs() -> None:
    (quoted,) = set(re.findall(r"`aiosched (run [^`]+)`", DOC))

    assert quoted.split() == SERVICES["aiosched"]["command"]


@pytest.mark.parametrize("name", sorted(SERVICES["aiosched"]["environment"]))
def test_quoted_otel_settings_match_compose(name: str) -> None:
    value = str(SERVICES["aiosched"]["environment"][name])
    quoted = re.findall(rf"`{name}=([^`]+)`", DOC)

    if name != "OTEL_EXPORTER_OTLP_PROTOCOL":  # the default; the doc need not mention it
        assert value in quoted


@pytest.mark.parametrize("port", ["6443", "16686", "4318", "10259"])
def test_ports_it_mentions_are_published(port: str) -> None:
    published = {
        str(spec).split(":")[0]
        for service in SERVICES.values()
        for spec in service.get("ports", [])
    }

    assert port in DOC
    assert port in published


@pytest.mark.parametrize(
    "span", [POD_SPAN_NAME, ATTEMPT_SPAN_NAME, "Filter", "Score", "Bind", "WaitOnPermit"]
)
def test_span_names_are_the_tracing_code_s(span: str) -> None:
    assert re.search(rf"\b{span}\b", DOC)


def test_unknown_span_names_would_be_noticed() -> None:
    tree = DOC.split("```text\nPodScheduling", 1)[1].split("```", 1)[0]
    names = set(re.findall(r"─ (\w+)", tree))

    assert ATTEMPT_SPAN_NAME in names
    upstream_points = {
        "PreFilter",
        "Filter",
        "PostFilter",
        "PreScore",
        "Score",
        "NormalizeScore",
        "Reserve",
        "Permit",
        "WaitOnPermit",
        "PreBind",
        "Bind",
        "PostBind",
        "Unreserve",
    }
    assert names - {ATTEMPT_SPAN_NAME} <= upstream_points
