"""Lets the tests here import security_harness and the e2e helpers in
tests/e2e_scheduler/processes.py (pytest runs with --import-mode=importlib), and starts the
cluster the attacks on a running scheduler share."""

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

for folder in (Path(__file__).parent, Path(__file__).parents[1] / "e2e_scheduler"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from security_harness import Cluster, running_cluster  # noqa: E402  (needs the path above)


@pytest.fixture(scope="session")
def elected_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """`aiosched cluster` (2 nodes, one simulated GPU each) and a leader-elected `aiosched
    run`, shared by every attack that ends with Cluster.assert_healthy: starting them costs
    seconds, and each attack leaves them as it found them."""
    yield from running_cluster(
        tmp_path_factory.mktemp("elected"), cluster_flags=("--dra-devices", "1")
    )
