"""Every rejection a user can hit, with the field path and message they see. Cases follow
upstream's validation_test.go (pkg/scheduler/apis/config/validation) where it has one."""

from __future__ import annotations

import pytest
from profiles_testkit import in_tree_registry, spec

from profiles import ConfigInvalidError, load_config_text

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
REGISTRY = {
    **in_tree_registry("VolumeBinding"),
    "Custom": spec("Custom", "filter", "score"),
    "QS2": spec("QS2", "queueSort"),  # a second queue sort, for the queueSort-mismatch case
}


def errors_of(text: str) -> list[tuple[str, str]]:
    with pytest.raises(ConfigInvalidError) as info:
        load_config_text(text, REGISTRY, source="cfg.yaml")
    assert all(e.source == "cfg.yaml" for e in info.value.errors)
    return [(e.path, e.message) for e in info.value.errors]


@pytest.mark.parametrize(
    ("body", "path", "message"),
    [
        # --- decoding ---
        ("featureGates: {A: true}\n", "featureGates", "unknown field; expected one of"),
        ("profiles:\n- schedulerName: a\n  plugin: {}\n", "profiles[0].plugin", "unknown field"),
        ("profiles:\n- plugins: {scores: {}}\n", "profiles[0].plugins.scores", "unknown field"),
        ("profiles:\n- plugins: {score: {enabled: [{name: X, wieght: 1}]}}\n",
         "profiles[0].plugins.score.enabled[0].wieght", "unknown field"),
        ("parallelism: '8'\n", "parallelism", "expected an integer, got string '8'"),
        ("parallelism: true\n", "parallelism", "expected an integer, got boolean True"),
        ("parallelism: 4294967296\n", "parallelism", "out of range"),
        ("profiles: {}\n", "profiles", "expected a list, got object"),
        ("leaderElection: {leaseDuration: 15}\n", "leaderElection.leaseDuration",
         "expected a string, got integer 15"),
        ("leaderElection: {leaseDuration: 15 s}\n", "leaderElection.leaseDuration",
         'expected a duration like "15s"'),
        ("clientConnection: {qps: fast}\n", "clientConnection.qps", "expected a number"),
        ("profiles:\n- pluginConfig: [{name: NodeResourcesFit, args: [1]}]\n",
         "profiles[0].pluginConfig[0].args", "expected an object, got list"),
        ("profiles:\n- plugins: {filter: {enabled: [{weight: 1}]}}\n",
         "profiles[0].plugins.filter.enabled[0].name", "required"),
        # --- global validation ---
        ("parallelism: 0\n", "parallelism", "must be greater than 0, got 0"),
        ("percentageOfNodesToScore: 101\n", "percentageOfNodesToScore",
         "must be in the range [0, 100], got 101"),
        ("podInitialBackoffSeconds: 0\n", "podInitialBackoffSeconds", "must be greater than 0"),
        ("podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\n", "podMaxBackoffSeconds",
         "must be greater than or equal to podInitialBackoffSeconds (5), got 2"),
        ("leaderElection: {leaseDuration: 5s, renewDeadline: 10s}\n",
         "leaderElection.leaseDuration", "must be greater than renewDeadline"),
        ("leaderElection: {retryPeriod: -1s}\n", "leaderElection.retryPeriod",
         "must be greater than zero"),
        ("leaderElection: {resourceLock: endpoints}\n", "leaderElection.resourceLock",
         "must be \"leases\", got 'endpoints'"),
        ("clientConnection: {burst: -1}\n", "clientConnection.burst", "must be non-negative"),
        # --- profiles ---
        ("profiles:\n- schedulerName: a\n- {}\n", "profiles[1].schedulerName", "required"),
        ("profiles:\n- schedulerName: ''\n", "profiles[0].schedulerName", "required"),
        ("profiles:\n- schedulerName: a\n- schedulerName: a\n", "profiles[1].schedulerName",
         "duplicate scheduler name 'a' (also at profiles[0].schedulerName)"),
        ("profiles:\n- percentageOfNodesToScore: -1\n", "profiles[0].percentageOfNodesToScore",
         "must be in the range [0, 100]"),
        ("profiles:\n- pluginConfig: [{name: Custom}, {name: Custom}]\n",
         "profiles[0].pluginConfig[1]", "duplicate pluginConfig for plugin 'Custom'"),
        ("profiles:\n- plugins: {filter: {enabled: [{name: EBSLimits}]}}\n",
         "profiles[0].plugins.filter.enabled[0]", "was removed in"),
        ("profiles:\n- plugins: {filter: {enabled: [{name: Nope}]}}\n",
         "profiles[0].plugins.filter.enabled[0]", "unknown plugin 'Nope'"),
        ("profiles:\n- plugins: {multiPoint: {enabled: [{name: Nope}]}}\n",
         "profiles[0].plugins.multiPoint.enabled[0]", "unknown plugin 'Nope'"),
        ("profiles:\n- plugins: {filter: {enabled: [{name: VolumeBinding}]}}\n",
         "profiles[0].plugins.filter.enabled[0]", "unknown plugin 'VolumeBinding'"),
        ("profiles:\n- plugins: {bind: {enabled: [{name: Custom}]}}\n",
         "profiles[0].plugins.bind.enabled[0]", "plugin 'Custom' does not implement bind"),
        ("profiles:\n- plugins: {score: {enabled: [{name: Custom, weight: -2}]}}\n",
         "profiles[0].plugins.score.enabled[0].weight", "must be non-negative"),
        ("profiles:\n- plugins: {filter: {enabled: [{name: Custom}, {name: Custom}]}}\n",
         "profiles[0].plugins.filter.enabled[1]", "enabled more than once at filter"),
        ("profiles:\n- plugins: {bind: {disabled: [{name: '*'}]}}\n",
         "profiles[0].plugins.bind", "at least one bind plugin is required"),
        ("profiles:\n- plugins: {queueSort: {enabled: [{name: Custom}]}}\n",
         "profiles[0].plugins.queueSort.enabled[0]", "does not implement queueSort"),
        ("profiles:\n- pluginConfig: [{name: Typo}]\n", "profiles[0].pluginConfig[0].name",
         "unknown plugin 'Typo'"),
        ("profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n"
         "    args: {scoringStrategy: {type: Packed}}\n",
         "profiles[0].pluginConfig[0].args.scoringStrategy.type",
         'expected one of "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio", '
         "got 'Packed'"),
        ("profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {bogus: 1}\n",
         "profiles[0].pluginConfig[0].args.bogus", "unknown field"),
        ("profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n"
         "    args: {kind: NodeAffinityArgs}\n",
         "profiles[0].pluginConfig[0].args.kind", "expected 'NodeResourcesFitArgs'"),
        # --- queue sort must be common ---
        ("profiles:\n- schedulerName: a\n- schedulerName: b\n"
         "  plugins: {queueSort: {enabled: [{name: PrioritySort}]}}\n",
         "profiles[1].plugins.queueSort", "must be the same for all profiles"),
        ("profiles:\n- schedulerName: a\n- schedulerName: b\n"
         "  plugins:\n    multiPoint: {disabled: [{name: PrioritySort}]}\n"
         "    queueSort: {enabled: [{name: QS2}]}\n",
         "profiles[1].plugins.queueSort", "must be the same for all profiles"),
        # --- extenders ---
        ("extenders: [{urlPrefix: 'http://x', prioritizeVerb: p}]\n", "extenders[0].weight",
         "must be positive when prioritizeVerb is set, got 0"),
        ("extenders: [{filterVerb: f}]\n", "extenders[0].urlPrefix", "required"),
        ("extenders: [{urlPrefix: a, bindVerb: b}, {urlPrefix: c, bindVerb: b}]\n",
         "extenders", "only one extender can implement bind, found 2"),
        ("extenders: [{urlPrefix: a, managedResources: [{name: cpu}]}]\n",
         "extenders[0].managedResources[0].name", "invalid extended resource name"),
        ("extenders: [{urlPrefix: a, managedResources: [{name: example.com/gpu},"
         " {name: example.com/gpu}]}]\n",
         "extenders[0].managedResources[1].name", "duplicate extender managed resource name"),
    ],
)  # fmt: skip
def test_rejections(body: str, path: str, message: str) -> None:
    errors = errors_of(HEADER + body)
    assert any(p == path and message in m for p, m in errors), errors


@pytest.mark.parametrize(
    ("text", "path", "message"),
    [
        ("kind: KubeSchedulerConfiguration\n", "apiVersion", "required"),
        ("apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
         "apiVersion", "expected \"kubescheduler.config.k8s.io/v1\", got "),
        ("apiVersion: kubescheduler.config.k8s.io/v1\nkind: Pod\n", "kind", "got 'Pod'"),
        ("", "", "empty document"),
        ("- 1\n", "", "expected an object, got list"),
        ("a: [\n", "", "not valid YAML/JSON"),
        (HEADER + "parallelism: 1\nparallelism: 2\n", "", "duplicate field 'parallelism'"),
    ],
)  # fmt: skip
def test_document_level_rejections(text: str, path: str, message: str) -> None:
    errors = errors_of(text)
    assert any(p == path and message in m for p, m in errors), errors


def test_all_errors_are_collected() -> None:
    errors = errors_of(
        HEADER + "parallelism: 0\npercentageOfNodesToScore: 200\n"
        "profiles:\n- schedulerName: a\n- schedulerName: a\n"
    )
    assert [p for p, _ in errors] == [
        "parallelism", "profiles[1].schedulerName", "percentageOfNodesToScore",
    ]  # fmt: skip


def test_error_string_names_file_path_and_message() -> None:
    with pytest.raises(ConfigInvalidError) as info:
        load_config_text(HEADER + "parallelism: -1\n", REGISTRY, source="/etc/sched.yaml")
    assert str(info.value) == "/etc/sched.yaml: parallelism: must be greater than 0, got -1"


@pytest.mark.parametrize(
    "body",
    [
        "healthzBindAddress: 0.0.0.0:10251\nmetricsBindAddress: 0.0.0.0:10251\n",
        "extenders: [{urlPrefix: 'http://x', prioritizeVerb: p, weight: 1, "
        "managedResources: [{name: example.com/gpu, ignoredByScheduler: true}]}]\n",
        "profiles:\n- pluginConfig: [{name: VolumeBinding, args: {bindTimeoutSeconds: 5}}]\n",
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n"
        "      apiVersion: kubescheduler.config.k8s.io/v1\n      kind: NodeResourcesFitArgs\n"
        "      scoringStrategy: {type: MostAllocated}\n",
        '{"apiVersion": "kubescheduler.config.k8s.io/v1", '
        '"kind": "KubeSchedulerConfiguration", "parallelism": 4}',
    ],
)
def test_accepted(body: str) -> None:
    text = body if body.startswith("{") else HEADER + body
    load_config_text(text, REGISTRY)


def test_json_is_accepted() -> None:
    cfg = load_config_text(
        '{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",'
        ' "profiles": [{"schedulerName": "x"}]}',
        REGISTRY,
    )
    assert cfg.scheduler_names == ("x",)


def test_deprecated_fields_leave_a_note() -> None:
    cfg = load_config_text(HEADER + "healthzBindAddress: 0.0.0.0:10251\n", REGISTRY)
    assert cfg.notes == ("healthzBindAddress is not part of v1 and is ignored",)
