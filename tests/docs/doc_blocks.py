"""The shell blocks of README.md and docs/*.md, and how the documentation test runs them.

The convention (CONTRIBUTING.md, "Commands in the documentation are tested"):

- a ```sh block is run; ```text, ```yaml, ```console, ```bash-free blocks are not;
- an HTML comment on the line just above a block marks it:
  `<!-- doc-test: skip: REASON -->` is not run (a process that runs until Ctrl-C, Docker, a
  real cluster); the reason is required, and a block cannot be skipped silently;
- a comment anywhere in a document sets how its shared processes start:
  `<!-- doc-test: cluster-flags: FLAGS -->` (added to `aiosched cluster`) and
  `<!-- doc-test: scheduler-flags: FLAGS -->` (added to `aiosched run`).

A document's runnable blocks run in order, in one bash (so `export`, `cd` and background jobs
carry from one block to the next, as in a reader's shell), against one `aiosched cluster` with
4 nodes of 4 CPUs (the demo's) and one `aiosched run --insecure-http` started for that
document. The blocks are written for the demo (`python3 dev.py run`): its kubeconfig path
and its address (127.0.0.1:10259) are replaced by the shared processes' before the script
runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: The demo's kubeconfig and secure port, as the documents write them.
DEMO_KUBECONFIG = "~/.kube/aiosched-embedded.kubeconfig"
DEMO_ADDRESS = "127.0.0.1:10259"

_FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)\s*$")
_MARK = re.compile(r"<!--\s*doc-test:\s*(?P<verb>[\w-]+)\s*:?\s*(?P<arg>.*?)\s*-->")


class DocConventionError(ValueError):
    """A document breaks the convention: names the file and line."""


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    skip: str  # the reason, or "" when the block runs

    @property
    def runs(self) -> bool:
        return self.lang == "sh" and not self.skip

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


@dataclass(frozen=True)
class Document:
    path: Path
    blocks: tuple[Block, ...]
    cluster_flags: tuple[str, ...]
    scheduler_flags: tuple[str, ...]

    @property
    def runnable(self) -> tuple[Block, ...]:
        return tuple(block for block in self.blocks if block.runs)


def documents() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def parse(path: Path) -> Document:
    lines = path.read_text().splitlines()
    blocks: list[Block] = []
    cluster_flags: list[str] = []
    scheduler_flags: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        for mark in _MARK.finditer(line):
            verb, arg = mark["verb"], mark["arg"]
            if verb == "cluster-flags":
                cluster_flags += arg.split()
            elif verb == "scheduler-flags":
                scheduler_flags += arg.split()
            elif verb != "skip":
                raise DocConventionError(f"{path}:{index + 1}: unknown doc-test mark {verb!r}")
        fence = _FENCE.match(line)
        if not fence:
            index += 1
            continue
        indent, lang = len(fence["indent"]), fence["lang"]
        mark = _MARK.search(lines[index - 1]) if index else None
        skip = ""
        if mark and mark["verb"] == "skip":
            skip = mark["arg"]
            if not skip:
                raise DocConventionError(f"{path}:{index}: a doc-test skip needs a reason")
        body: list[str] = []
        end = index + 1
        while end < len(lines) and not re.match(rf"^ {{0,{indent}}}```\s*$", lines[end]):
            body.append(lines[end][indent:] if lines[end][:indent].isspace() else lines[end])
            end += 1
        if end == len(lines):
            raise DocConventionError(f"{path}:{index + 1}: code block never closed")
        if skip and lang != "sh":
            raise DocConventionError(f"{path}:{index}: only ```sh blocks run; no skip needed")
        blocks.append(Block(path, index + 1, lang, "\n".join(body), skip))
        index = end + 1
    return Document(path, tuple(blocks), tuple(cluster_flags), tuple(scheduler_flags))


def script(
    document: Document, kubeconfig: Path, address: str, workdir: Path, root: Path = REPO
) -> str:
    """One bash script running the document's blocks in order in `root` (the repository, or a
    fresh copy of it whose .venv the README's `source .venv/bin/activate` then activates), each
    announced on stderr so a failure names its block; background jobs are ended when it exits."""
    parts = [
        "set -eo pipefail",
        f"cd {root}",
        # a reader's second shell: the demo's KUBECONFIG is exported by the README's first block
        f"export KUBECONFIG={kubeconfig}",
        f"export HOME={workdir / 'home'}",
        "trap 'jobs -p | xargs -r kill 2>/dev/null || true' EXIT",
    ]
    for block in document.runnable:
        text = block.text.replace(DEMO_KUBECONFIG, str(kubeconfig))
        text = text.replace(DEMO_ADDRESS, address)
        if root == REPO:  # the test already runs with the project's interpreter on PATH
            text = re.sub(r"^source \.venv/bin/activate.*$", ":", text, flags=re.M)
        parts.append(f"echo '>>> doc block {block.where}' >&2")
        parts.append(text)
    parts.append("echo '>>> all blocks passed' >&2")
    return "\n".join(parts) + "\n"
