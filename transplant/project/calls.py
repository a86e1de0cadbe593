"""The project scan of one Python file: calls that reach custom operators (TP204), CUDA builds
(TP205, see builds.py) and setup() dependencies (packages.py).

Runs in the worker that converts the file, only when the file's bytes contain one of the
project's trigger words (``ProjectFacts.may_match``), with one extra CPython ``ast`` parse: the
engine's libcst tree is not shared, so that the engine stays untouched by this concern.
Line numbers are those of the file given. Never rewrites code. Notebooks' code cells reach it as one
program (formats/notebooks.py ``project_findings``), which places the records in their cells.
"""

from __future__ import annotations

import ast

from ..records import CODES, SKIP_LINE, Record, skips_file
from . import NO_FACTS, OpSource, ProjectFacts
from .frameworks import WORDS as FRAMEWORK_WORDS
from .frameworks import framework_records
from .builds import HELPER_WORDS, NPU_ROUTE, build_records, find_builds
from .installs import WORDS as INSTALL_WORDS
from .installs import install_records
from .packages import setup_requirement_records
from .pynames import bindings, column, import_bindings, nodes, parse, qualify, source_lines
from .triton import triton_records


def python_findings(data: bytes, facts: ProjectFacts = NO_FACTS, path: str = "") -> list[Record]:
    """The project scan's findings in one Python file (``path``: relative, with "/"; "" for a
    notebook's program or standard input)."""
    if skips_file(data):
        return []
    tree = parse(data)
    if tree is None:
        return []
    lines = source_lines(data)
    names = bindings(tree)
    records = build_records(tree, names, lines) if _has(data, b"cpp_extension", b"nvcc", *HELPER_WORDS) else []
    if facts.modules or facts.namespaces or b"cpp_extension" in data:
        records += _operator_calls(tree, names, lines, facts)
    if b"triton" in data or facts.triton_kernels:
        records += triton_records(
            path, data, tree, names, lines, facts.kernel_files(), facts.triton_ready, facts.triton_ready_dirs
        )
    if b"install_requires" in data:
        records += setup_requirement_records(tree, names, lines)
    if _has(data, *FRAMEWORK_WORDS):
        records += framework_records(data, tree, names, lines)
    if _has(data, *INSTALL_WORDS):
        records += install_records(tree, names, lines)
    raw = data.splitlines()
    records = [r for r in records if not (r.line <= len(raw) and SKIP_LINE.search(raw[r.line - 1]))]
    records.sort(key=lambda r: (r.line, r.col))
    return records


def _has(data: bytes, *words: bytes) -> bool:
    return any(w in data for w in words)


def _module_for(qualified: str, facts: ProjectFacts, local: dict[str, OpSource]) -> tuple[OpSource, str] | None:
    """(module, the rest of the name) when ``qualified`` starts with an extension module."""
    relative = qualified.startswith(".")
    parts = qualified.lstrip(".").split(".")
    for i in range(len(parts), 0, -1):
        head = ".".join(parts[:i])
        found = local.get(head) or facts.module(head)
        if found is None and relative:  # from . import _C: the module's own package is not known
            found = next((m for m in facts.modules if m.name.endswith("." + head)), None)
        if found is not None:
            return found, ".".join(parts[i:])
    return None


def _operator_calls(tree: ast.Module, names: dict[str, str], lines: list[str], facts: ProjectFacts) -> list[Record]:
    local: dict[str, OpSource] = {}  # ext = load(name="my_ext", ...) in this file
    for build in find_builds(tree, names):
        if build.variable:
            module = facts.module(build.name) or OpSource(
                build.name or build.variable, build.cuda, build.functions, f"line {build.line}"
            )
            names = {**names, build.variable: module.name}
            local[module.name] = module
    inner: set[int] = set()  # attribute chains that continue: report the outermost useful one only
    for node in nodes(tree):
        if isinstance(node, ast.Attribute):
            inner.add(id(node.value))
    records: list[Record] = extension_imports(tree, lines, facts, local)
    for node in nodes(tree):
        if not isinstance(node, (ast.Attribute, ast.Name)) or not isinstance(node.ctx, ast.Load):
            continue
        qualified = qualify(node, names)
        if qualified is None:
            continue
        if qualified.startswith("torch.ops."):
            parts = qualified.split(".")
            space = facts.namespace(parts[2]) if len(parts) > 2 else None
            if space is None or len(parts) > 4 or (len(parts) == 3 and id(node) in inner):
                continue
            api = ".".join(parts[:4])
            records.append(_record(lines, node, api, space, namespace=True))
            continue
        found = _module_for(qualified, facts, local)
        if found is None:
            continue
        module, rest = found
        if not rest or "." in rest:
            continue  # a bare module is no call; deeper chains were reported at their first attribute
        records.append(_record(lines, node, f"{module.name}.{rest}", module, namespace=False))
    return records


EXTENSION_IMPORT = "extension import"


def extension_imports(
    tree: ast.Module, lines: list[str], facts: ProjectFacts, local: dict[str, OpSource]
) -> list[Record]:
    """One error at each import statement that loads a compiled CUDA extension the project builds
    (``import my_cuda_ext``, ``from . import _C``, ``from pkg._C import op``): the import itself
    fails on an NPU machine, before any operator is called."""
    records = []
    for node in nodes(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        for qualified in import_bindings(node).values():
            found = _module_for(qualified, facts, local)
            if found is not None and found[0].cuda:
                module = found[0]
                col = column(lines, node.lineno, node.col_offset)
                end_col = column(lines, node.end_lineno or node.lineno, node.end_col_offset or node.col_offset)
                records.append(
                    Record(
                        node.lineno,
                        col,
                        node.end_lineno or node.lineno,
                        end_col,
                        CODES["custom_op"],
                        "error",
                        EXTENSION_IMPORT,
                        f"{module.name}: imports the project's compiled CUDA extension (built at "
                        f"{module.where}); the import fails on an NPU machine",
                        "builtin:custom_op",
                        api=module.name,
                        suggestion=NPU_ROUTE,
                    )
                )
                break  # one finding per statement
    return records


def _record(
    lines: list[str], node: ast.expr | ast.stmt | ast.keyword, api: str, source: OpSource, *, namespace: bool
) -> Record:
    col = column(lines, node.lineno, node.col_offset)
    end_col = column(lines, node.end_lineno or node.lineno, node.end_col_offset or node.col_offset)
    known = api.rsplit(".", 1)[-1] in source.ops
    if namespace:
        origin = f"registered at {source.where}"
    else:
        origin = f"{'an operator' if known else 'a member'} of the extension defined at {source.where}"
    if source.cuda:
        message = f"{api}: custom CUDA operator ({origin}); it has no NPU kernel"
        level = "error"
    else:
        message = f"{api}: custom C++ operator ({origin}); check that it accepts NPU tensors"
        level = "warning"
    route = NPU_ROUTE + ("; register its NPU kernel under the PrivateUse1 dispatch key" if namespace else "")
    return Record(
        node.lineno,
        col,
        node.end_lineno or node.lineno,
        end_col,
        CODES["custom_op"],
        level,
        "custom operator",
        message,
        "builtin:custom_op",
        api=api,
        suggestion=route,
    )
