"""Suite-wide ordering: the longest test files start first.

`python3 dev.py test` runs files on several pytest-xdist workers (`--dist loadfile`), which
hand files out in collection order. A file of a minute that is collected last keeps one
worker busy while the others sit idle, so the files known to be long are moved to the front;
everything else keeps its order. Serial runs (`-p no:xdist`, one file) are unaffected but for
the order.
"""

from __future__ import annotations

import pytest

#: Test files that take tens of seconds each on 2 cores (measured with --durations), longest
#: first. A file missing here only costs wall time at the end of a parallel run.
LONG_FILES = (
    "tests/docs/test_newcomer.py",
    "tests/docs/test_doc_commands.py",
    "tests/e2e/test_kubesim_crash.py",
    "tests/e2e/test_reliability.py",
    "tests/e2e/test_kubectl.py",
    "tests/security/test_unauthenticated_flood.py",
    "tests/bench/test_cli.py",
    "tests/e2e_dra/test_dra_cluster.py",
    "tests/lab/test_replay_matches_run.py",
)


def _rank(item: pytest.Item) -> int:
    path = item.nodeid.split("::", 1)[0]
    try:
        return LONG_FILES.index(path)
    except ValueError:
        return len(LONG_FILES)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_rank)  # stable: the order within each file and among the rest is kept
