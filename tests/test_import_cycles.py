"""Issue 19: no import cycles in transplant, between modules or between its packages (engine,
formats, project, ...), counting the imports inside functions and under TYPE_CHECKING too: an
import deferred for start-up time is still an edge. So is a "transplant.module:function" string,
as the registry of file kinds (filekinds.py) names the converters it loads when they are needed.
A new cycle fails here with its edges."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "transplant"
REFERENCE = re.compile(r"(transplant(?:\.\w+)+):\w+")


def _modules() -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, is a package's __init__), for transplant's own code (the emulated
    torch_npu that transplant emulate puts on the path is another package)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "shim" in path.relative_to(PACKAGE).parts:
            continue
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom, known) -> set[str]:
    if isinstance(node, ast.Import):
        names = {alias.name for alias in node.names}
    else:
        base = module.split(".") if is_package else module.split(".")[:-1]
        if node.level:
            base = base[: len(base) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        names = {f"{target}.{alias.name}" if f"{target}.{alias.name}" in known else target for alias in node.names}
    out = set()
    for name in names:
        while name not in known and "." in name:
            name = name.rsplit(".", 1)[0]
        if name in known and name != module:
            out.add(name)
    return out


def import_graph() -> dict[str, set[str]]:
    known = _modules()
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, (path, is_package) in known.items():
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                graph[name] |= _targets(name, is_package, node, known)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                reference = REFERENCE.fullmatch(node.value)
                if reference and reference.group(1) in known and reference.group(1) != name:
                    graph[name].add(reference.group(1))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _package_of(module: str) -> str:
    return ".".join(module.split(".")[:2])  # transplant.engine.calls -> transplant.engine


def _described(graph: dict[str, set[str]], loops: list[list[str]]) -> list[str]:
    return [f"{a} -> {b}" for loop in loops for a in loop for b in sorted(graph.get(a, ())) if b in loop]


def test_the_graph_is_read():
    graph = import_graph()
    assert "transplant.engine.driver" in graph["transplant.filetypes"] | graph["transplant.engine"]
    assert "transplant.pool" in graph["transplant.filemodes"]  # top-level imports
    assert "transplant.engine" in graph["transplant.formats.python"]  # an import inside a function
    assert "transplant.formats.shell" in graph["transplant.filekinds"]  # a converter the registry names


def test_no_module_imports_itself_through_others():
    graph = import_graph()
    assert _described(graph, cycles(graph)) == []


def test_no_two_packages_import_each_other():
    modules = import_graph()
    graph: dict[str, set[str]] = {}
    for module, targets in modules.items():
        graph.setdefault(_package_of(module), set()).update(
            _package_of(t) for t in targets if _package_of(t) != _package_of(module)
        )
    assert _described(graph, cycles(graph)) == []


def test_a_cycle_is_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
