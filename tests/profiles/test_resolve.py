"""MultiPoint expansion, weights and framework-construction errors. Expansion cases are
upstream's TestNewFrameworkMultiPointExpansion (pkg/scheduler/framework/runtime/
framework_test.go), ported as facts with the same fake plugins."""

from __future__ import annotations

from typing import Any

import pytest
from profiles_testkit import ALL_POINTS, spec

from profiles.config import PluginRef, Plugins, PluginSet, ProfileSpec, frozen_mapping
from profiles.errors import ErrorSink
from profiles.resolve import resolve_profile

REGISTRY = {
    s.name: s
    for s in (
        spec("TestPlugin", *ALL_POINTS),
        spec("ScorePlugin1", "preScore", "score"),
        spec("ScorePlugin2", "score"),
        spec("ScoreWithNormalize1", "score"),
        spec("QueueSortPlugin", "queueSort"),
        spec("BindPlugin", "bind"),
    )
}

Ref = str | tuple[str, int]


def _refs(items: tuple[Ref, ...]) -> tuple[PluginRef, ...]:
    return tuple(
        PluginRef(i, origin="u") if isinstance(i, str) else PluginRef(*i, origin="u") for i in items
    )


def plugins(**points: Any) -> Plugins:
    sets = {}
    for point, value in points.items():
        enabled, disabled = value if isinstance(value, list) else (value, ())
        sets[point] = PluginSet(_refs(enabled), _refs(disabled))
    return Plugins(frozen_mapping(sets))


def resolve(p: Plugins) -> tuple[dict[str, list[Any]], list[str]]:
    sink = ErrorSink("test")
    out = resolve_profile(ProfileSpec("s", None, p), 0, 0, REGISTRY, sink)
    messages = [e.message for e in sink.errors]
    if out is None:
        return {}, messages
    got = {k: [tuple(w) if k == "score" else w.name for w in v] for k, v in out.plugins.items()}
    return {k: v for k, v in got.items() if v}, messages


def everywhere(name: str, **override: list[Any]) -> dict[str, list[Any]]:
    base: dict[str, list[Any]] = {p: [name] for p in ALL_POINTS if p not in ("preScore", "score")}
    base.update(override)
    return base


@pytest.mark.parametrize(
    ("given", "want"),
    [
        pytest.param(
            plugins(multiPoint=(("TestPlugin", 5),)),
            everywhere("TestPlugin", preScore=["TestPlugin"], score=[("TestPlugin", 5)]),
            id="plugin expansion",
        ),
        pytest.param(
            plugins(multiPoint=("TestPlugin",), preScore=[(), ("TestPlugin",)],
                    score=[(), ("TestPlugin",)]),
            everywhere("TestPlugin"),
            id="disable MultiPoint plugin at some extension points",
        ),
        pytest.param(
            plugins(multiPoint=("TestPlugin", "ScorePlugin1")),
            everywhere("TestPlugin", preScore=["TestPlugin", "ScorePlugin1"],
                       score=[("TestPlugin", 1), ("ScorePlugin1", 1)]),
            id="Multiple MultiPoint plugins",
        ),
        pytest.param(
            plugins(multiPoint=("TestPlugin", "ScorePlugin1"), preScore=[(), ("*",)]),
            everywhere("TestPlugin", score=[("TestPlugin", 1), ("ScorePlugin1", 1)]),
            id="disable MultiPoint extension",
        ),
        pytest.param(
            plugins(multiPoint=("ScoreWithNormalize1", "TestPlugin", "ScorePlugin1"),
                    score=("ScorePlugin1", "TestPlugin")),
            everywhere("TestPlugin", preScore=["TestPlugin", "ScorePlugin1"],
                       score=[("ScorePlugin1", 1), ("TestPlugin", 1),
                              ("ScoreWithNormalize1", 1)]),
            id="Reorder MultiPoint plugins (specified extension takes precedence)",
        ),
        pytest.param(
            plugins(multiPoint=("TestPlugin", "ScorePlugin1"),
                    score=("ScoreWithNormalize1", "ScorePlugin1", "TestPlugin")),
            everywhere("TestPlugin", preScore=["TestPlugin", "ScorePlugin1"],
                       score=[("ScorePlugin1", 1), ("TestPlugin", 1),
                              ("ScoreWithNormalize1", 1)]),
            id="Reorder MultiPoint plugins (only when it exists in MultiPoint)",
        ),
        pytest.param(
            plugins(multiPoint=("TestPlugin", "ScorePlugin1"),
                    score=(("ScorePlugin1", 5), ("TestPlugin", 3))),
            everywhere("TestPlugin", preScore=["TestPlugin", "ScorePlugin1"],
                       score=[("ScorePlugin1", 5), ("TestPlugin", 3)]),
            id="Override MultiPoint plugins weights",
        ),
        pytest.param(
            plugins(multiPoint=[("QueueSortPlugin", "BindPlugin", "ScorePlugin1"), ("*",)]),
            {"queueSort": ["QueueSortPlugin"], "preScore": ["ScorePlugin1"],
             "score": [("ScorePlugin1", 1)], "bind": ["BindPlugin"]},
            id="disable and enable MultiPoint plugins with '*'",
        ),
        pytest.param(
            plugins(multiPoint=[("BindPlugin", "QueueSortPlugin", "ScorePlugin1"),
                                ("ScorePlugin1",)]),
            {"queueSort": ["QueueSortPlugin"], "preScore": ["ScorePlugin1"],
             "score": [("ScorePlugin1", 1)], "bind": ["BindPlugin"]},
            id="disable and enable MultiPoint plugin by name",
        ),
        pytest.param(
            plugins(multiPoint=("TestPlugin", "ScorePlugin1"),
                    score=(("ScorePlugin1", 5), ("ScorePlugin2", 5), ("TestPlugin", 3))),
            everywhere("TestPlugin", preScore=["TestPlugin", "ScorePlugin1"],
                       score=[("ScorePlugin1", 5), ("TestPlugin", 3), ("ScorePlugin2", 5)]),
            id="Override MultiPoint weights and avoid a plugin being loaded multiple times",
        ),
    ],
)  # fmt: skip
def test_multi_point_expansion(given: Plugins, want: dict[str, list[Any]]) -> None:
    got, errors = resolve(given)
    assert errors == []
    assert got == want


@pytest.mark.parametrize(
    ("given", "error"),
    [
        pytest.param(
            plugins(multiPoint=("TestPlugin", "TestPlugin")),
            "plugin 'TestPlugin' is enabled more than once (registered twice at queueSort)",
            id="already registered via multiPoint",
        ),
        pytest.param(
            plugins(multiPoint=("TestPlugin",), filter=("TestPlugin", "TestPlugin")),
            "plugin 'TestPlugin' is enabled more than once at filter",
            id="already registered at a point",
        ),
        pytest.param(
            plugins(multiPoint=("TestPlugin",), filter=("ScorePlugin1",)),
            "plugin 'ScorePlugin1' does not implement filter",
            id="does not extend",
        ),
        pytest.param(
            plugins(multiPoint=("TestPlugin", "QueueSortPlugin")),
            "exactly one queueSort plugin is required for profile 's', got 2 "
            "(TestPlugin, QueueSortPlugin)",
            id="two queue sorts",
        ),
        pytest.param(
            plugins(multiPoint=("BindPlugin",)),
            "exactly one queueSort plugin is required for profile 's', got 0 (none)",
            id="no queue sort",
        ),
        pytest.param(
            plugins(multiPoint=("QueueSortPlugin",)),
            "at least one bind plugin is required for profile 's'",
            id="no bind",
        ),
        pytest.param(
            plugins(multiPoint=("TestPlugin", "Nope")),
            "unknown plugin 'Nope' (registered: BindPlugin, QueueSortPlugin, ScorePlugin1, "
            "ScorePlugin2, ScoreWithNormalize1, TestPlugin)",
            id="unknown plugin",
        ),
    ],
)
def test_construction_errors(given: Plugins, error: str) -> None:
    _, errors = resolve(given)
    assert error in errors


def test_total_score_overflow() -> None:
    big = 2**31 - 1
    many = {f"S{i}": spec(f"S{i}", "score") for i in range(3)}
    registry = {**REGISTRY, **many}
    p = plugins(multiPoint=("TestPlugin",), score=tuple((n, big) for n in many))
    sink = ErrorSink("t")
    # 3 * (2^31-1) * 100 fits in int64: no overflow, like upstream.
    assert resolve_profile(ProfileSpec("s", None, p), 0, 0, registry, sink) is not None
    assert sink.errors == []
