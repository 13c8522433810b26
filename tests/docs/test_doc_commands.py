"""Every ```sh block of README.md and docs/ runs as written, so that none can go stale.

Each document's blocks run in order in one bash against one `aiosched cluster` and one
`aiosched run` started for that document (doc_blocks.py says how, CONTRIBUTING.md the
convention). A block that fails names its file and line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
from doc_blocks import (
    DEMO_ADDRESS,
    REPO,
    DocConventionError,
    Document,
    documents,
    parse,
    script,
)
from processes import start_cluster, start_scheduler, started

#: As many nodes as the demo (`aiosched run --embedded`'s default), which the documents describe.
DEMO_NODES = 4
#: One document's blocks together; the slowest (docs/using.md's hot reload) takes about 20 s.
DOCUMENT_TIMEOUT = 240
SCHEDULER_CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
"""


def test_every_document_follows_the_convention() -> None:
    parsed = [parse(path) for path in documents()]

    assert any(doc.runnable for doc in parsed)
    for doc in parsed:
        for block in doc.blocks:
            if block.lang in ("", "shell", "bash", "console"):
                # a reader cannot tell whether an unlabelled or bash block runs: say which
                raise AssertionError(
                    f"{block.where}: label a command block ```sh (run by the test) or "
                    "```text (output, illustrations)"
                )


def test_a_skip_needs_a_reason(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("<!-- doc-test: skip -->\n```sh\nfalse\n```\n")
    with pytest.raises(DocConventionError, match="needs a reason"):
        parse(doc)


def test_the_parser_reads_marks_indented_blocks_and_flags(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "<!-- doc-test: scheduler-flags: --feature-gates A=true -->\n"
        "1. step\n\n   ```sh\n   echo one\n   ```\n"
        "<!-- doc-test: skip: runs until Ctrl-C -->\n```sh\nsleep infinity\n```\n"
        "```text\n$ not run\n```\n"
    )
    parsed = parse(doc)

    assert [b.text for b in parsed.runnable] == ["echo one"]
    assert [b.skip for b in parsed.blocks] == ["", "runs until Ctrl-C", ""]
    assert parsed.scheduler_flags == ("--feature-gates", "A=true")


def _runnable_documents() -> list[Document]:
    return [doc for doc in map(parse, documents()) if doc.runnable]


@pytest.mark.e2e
@pytest.mark.parametrize("document", _runnable_documents(), ids=lambda doc: doc.path.name)
def test_the_document_s_commands_run(document: Document, tmp_path: Path) -> None:
    if shutil.which("kubectl") is None:
        pytest.skip("needs kubectl")
    with started(
        partial(start_cluster, tmp_path, 0, DEMO_NODES, *document.cluster_flags),
        partial(start_scheduler, tmp_path, SCHEDULER_CONFIG, *document.scheduler_flags),
    ) as (_, scheduler):
        address = scheduler.url.removeprefix("http://")
        (tmp_path / "home").mkdir()
        text = script(document, tmp_path / "kubeconfig", address, tmp_path, root=_tree(tmp_path))
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
        env = {**os.environ, "PATH": path}
        result = subprocess.run(
            ["bash", "-c", text],
            capture_output=True,
            text=True,
            env=env,
            timeout=DOCUMENT_TIMEOUT,
            start_new_session=True,
        )
    assert DEMO_ADDRESS not in text
    assert result.returncode == 0, (
        f"a command in {document.path.name} failed (exit {result.returncode}); the last block "
        f"announced on stderr is the one:\n--- stderr\n{result.stderr[-4000:]}\n"
        f"--- stdout\n{result.stdout[-3000:]}"
    )


def _tree(tmp_path: Path) -> Path:
    """A scratch directory that looks like the repository (each top-level entry a symlink), so
    that the documents' relative paths work while the files their commands write land there,
    never in the checkout."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for entry in REPO.iterdir():
        if entry.name != ".git":
            (tree / entry.name).symlink_to(entry)
    return tree
