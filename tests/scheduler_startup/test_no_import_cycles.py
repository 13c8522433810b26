"""No modules of aiosched import each other, directly or around a longer cycle, not even with one
import inside a function or under `if TYPE_CHECKING:`. Such a cycle is a seam in the wrong place:
what the modules share belongs in a module below them (ARCHITECTURE.md, "Layering is checked").
import-linter's contracts leave out TYPE_CHECKING imports and cannot see an import inside a
function, so this test reads every import statement itself."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("apimachinery", "scheduler", "profiles", "observability", "kubesim", "bench")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, module: str, known: set[str]) -> set[str]:
    """The modules of ours that `module` imports anywhere in its file (functions included)."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        for target in targets:
            # The module itself, or the package's module an imported name lives in.
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != module:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    files = {_module_name(path): path for pkg in PACKAGES for path in (ROOT / pkg).rglob("*.py")}
    known = set(files)
    graph = {}
    for module, path in files.items():
        # A package's __init__ re-exporting its own modules is not a seam.
        graph[module] = {
            target
            for target in _imports(path, module, known)
            if not (target.startswith(module + ".") or module.startswith(target + "."))
        }
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Kosaraju, iteratively)."""
    order: list[str] = []
    seen: set[str] = set()
    for root in graph:
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(sorted(graph[root])))]
        while stack:
            node, children = stack[-1]
            child = next((c for c in children if c not in seen), None)
            if child is None:
                stack.pop()
                order.append(node)
            else:
                seen.add(child)
                stack.append((child, iter(sorted(graph.get(child, ())))))
    reverse: dict[str, set[str]] = {node: set() for node in graph}
    for node, targets in graph.items():
        for target in targets:
            reverse.setdefault(target, set()).add(node)
    assigned: set[str] = set()
    cycles = []
    for root in reversed(order):
        if root in assigned:
            continue
        component, todo = [], [root]
        assigned.add(root)
        while todo:
            node = todo.pop()
            component.append(node)
            for source in reverse.get(node, ()):
                if source not in assigned:
                    assigned.add(source)
                    todo.append(source)
        if len(component) > 1:
            cycles.append(sorted(component))
    return sorted(cycles)


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(graph) == [["a", "b", "c"]]


def test_no_modules_import_each_other() -> None:
    assert import_cycles(import_graph()) == []
