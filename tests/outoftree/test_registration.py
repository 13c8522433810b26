"""The example out-of-tree plugin is found through its entry point and configured like an
in-tree one: registry, load_config, `aiosched check-config`, and the errors when it is missing
or misconfigured."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml

from profiles.api import load_config, load_config_text
from profiles.errors import ConfigInvalidError
from scheduler.cycle.profile_set import full_registry, registry_for_config

if TYPE_CHECKING:
    from conftest import ExampleOnPath

REPO = Path(__file__).resolve().parents[2]
ENABLE_AT_FILTER = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: default-scheduler
    plugins:
      filter:
        enabled:
          - name: NodeNamePrefix
"""


def check_config(path: Path, pythonpath: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    return subprocess.run(
        [sys.executable, "-m", "scheduler.app.cli", "check-config", str(path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=60,
        check=False,
    )


def test_full_registry_registers_the_entry_point(example_on_path: ExampleOnPath) -> None:
    from aiosched_example_plugin import NodeNamePrefix

    entry = full_registry()["NodeNamePrefix"]

    assert entry.cls is NodeNamePrefix
    assert entry.extension_points == {"filter", "score"}


def test_config_enabling_it_at_filter_loads(example_on_path: ExampleOnPath) -> None:
    from aiosched_example_plugin import NodeNamePrefixArgs

    config = load_config_text(ENABLE_AT_FILTER, registry_for_config())

    (profile,) = config.profiles
    assert profile.names_at("filter")[-1] == "NodeNamePrefix"  # after the default plugins
    assert "NodeNamePrefix" not in profile.names_at("score")
    assert profile.args["NodeNamePrefix"] == NodeNamePrefixArgs()


def test_example_config_resolves_weights_and_args(example_on_path: ExampleOnPath) -> None:
    from aiosched_example_plugin import NodeNamePrefixArgs

    config = load_config(example_on_path.config, registry_for_config())

    (profile,) = config.profiles
    assert "NodeNamePrefix" in profile.names_at("filter")
    assert profile.score_weights["NodeNamePrefix"] == 2
    assert profile.args["NodeNamePrefix"] == NodeNamePrefixArgs(("node-1", "node-2"), "node-2")


@pytest.mark.parametrize(
    ("args_yaml", "path", "words"),
    [
        ("prefixes: node-", "args.prefixes", "must be a list of strings"),
        ('prefixes: [node-, ""]', "args.prefixes[1]", "must be a non-empty string"),
        ("preferredPrefix: 3", "args.preferredPrefix", "must be a string"),
        ("prefix: [node-]", "args.prefix", "unknown field"),
        ("kind: NodeAffinityArgs", "args.kind", "NodeNamePrefixArgs"),
    ],
)
def test_bad_args_name_the_field(
    example_on_path: ExampleOnPath, args_yaml: str, path: str, words: str
) -> None:
    text = ENABLE_AT_FILTER + textwrap.indent(
        f"pluginConfig:\n  - name: NodeNamePrefix\n    args:\n      {args_yaml}\n", "    "
    )

    with pytest.raises(ConfigInvalidError) as caught:
        load_config_text(text, registry_for_config())

    assert f"profiles[0].pluginConfig[0].{path}" in str(caught.value)
    assert words in str(caught.value)


def test_unknown_plugin_is_rejected_without_the_package() -> None:
    with pytest.raises(ConfigInvalidError) as caught:
        load_config_text(ENABLE_AT_FILTER, registry_for_config())

    assert "profiles[0].plugins.filter.enabled[0]" in str(caught.value)
    assert "NodeNamePrefix" in str(caught.value)


def test_check_config_prints_the_plugin(example_on_path: ExampleOnPath) -> None:
    result = check_config(example_on_path.config, example_on_path.pythonpath)

    assert result.returncode == 0, result.stderr
    (profile,) = yaml.safe_load(result.stdout)["profiles"]  # the listing is YAML
    assert profile["plugins"]["filter"][-1] == "NodeNamePrefix"
    assert "NodeNamePrefix (weight 2)" in profile["plugins"]["score"]
    assert profile["pluginConfig"]["NodeNamePrefix"] == {
        "prefixes": ["node-1", "node-2"],
        "preferredPrefix": "node-2",  # upstream-style camelCase, as written
    }


def test_check_config_fails_when_the_plugin_is_not_installed() -> None:
    result = check_config(REPO / "examples" / "aiosched-example-plugin" / "config.yaml", None)

    assert result.returncode == 1
    output = result.stdout + result.stderr
    assert "profiles[0].plugins.filter.enabled[0]: unknown plugin 'NodeNamePrefix'" in output
