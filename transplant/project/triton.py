"""Triton kernels, reported once per kernel (issue 20, pattern 4 of issue 24).

Triton is not CUDA-only: Ascend's Triton backend (PyPI ``triton-ascend``) compiles the same kernels
for Atlas A2/A3 NPUs. So a Triton kernel is neither converted nor reported per ``tl.*`` call: a file
that defines kernels gets one finding per ``@triton.jit`` kernel and one at its Triton import; a file
elsewhere in the project that imports or launches such a kernel gets one finding at each place.
Kernels the project already runs on NPU get none: see ``npu_ready_dirs``, ``npu_ready_files``.

Two halves, as for the project's C++ operators: ``scan_kernels`` runs in the project-wide first pass
(project/__init__.py ``gather``) and gives the facts (which files define CUDA kernels, which are
NPU-ready); ``triton_records`` runs in the worker's project scan of one file (project/calls.py).
Both read a CPython ``ast`` tree; the texts and their sources are data (rules/project/triton.json).
Never rewrites code.
"""

from __future__ import annotations

import ast
import posixpath
import re

from ..resources import project_data as load
from ..records import CODES, Record
from .pynames import bindings, column, dotted, import_bindings, nodes, qualify
from .stars import resolve

WORD = b"triton"
# What makes a file's kernels NPU kernels already: it checks for or imports triton-ascend, or it is
# torch_npu code itself.
NPU_MARKERS = (b"triton_ascend", b"triton-ascend", b"torch_npu")
JIT = {"triton.jit", "triton.runtime.jit", "triton.runtime.jit.jit", "triton.runtime.jit.JITFunction"}
_NPU_TEST = re.compile(r"npu|ascend", re.IGNORECASE)
_NPU_PATH_WORD = {"npu", "ascend"}  # a folder or module named for the NPU: backends/_ascend, npu_kernels.py
_DEPENDENCY_FILE = re.compile(r"(^|/)(requirements[^/]*\.(txt|in)|pyproject\.toml|setup\.cfg|environment[^/]*\.ya?ml)$")


def data() -> dict:
    return load("triton.json")


def is_dependency_file(rel: str) -> bool:
    """Could ``rel`` declare the project's dependencies (where a ``triton-ascend`` dependency is found)?"""
    return _DEPENDENCY_FILE.search(rel.lower()) is not None


def npu_marked(data_: bytes) -> bool:
    return any(marker in data_ for marker in NPU_MARKERS)


def _jit_decorator(func: ast.FunctionDef | ast.AsyncFunctionDef, names: dict[str, str]) -> ast.expr | None:
    for decorator in func.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if qualify(target, names) in JIT:
            return decorator
    return None


def kernels(tree: ast.Module, names: dict[str, str]) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.expr]]:
    """Every function decorated with ``triton.jit`` (in any import form), with that decorator."""
    found: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.expr]] = []
    for node in nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            decorator = _jit_decorator(node, names)
            if decorator is not None:
                found.append((node, decorator))
    return found


def scan_kernels(tree: ast.Module) -> tuple[str, ...]:
    """The names of the Triton kernels a module defines (first pass)."""
    return tuple(dict.fromkeys(k.name for k, _ in kernels(tree, bindings(tree))))


def npu_loaded(importer: str, tree: ast.Module, exists) -> set[str]:
    """Project files that ``importer`` imports only inside the body of an ``if`` whose test names the
    NPU (``if is_npu_available():``, ``if device.type == "npu":``): kernels loaded only on NPU."""
    out: set[str] = set()
    for node in nodes(tree):
        if not isinstance(node, ast.If) or not _names_npu(node.test):
            continue
        for stmt in node.body:
            for inner in ast.walk(stmt):
                if isinstance(inner, ast.ImportFrom):
                    out.update(_import_targets(importer, inner, exists))
    return out


# the keyword of a ``from ... import``
_FROM = re.compile(rb"\bfrom\b")


def nested_imports(data: bytes) -> list[bytes]:
    """The text of each ``from ... import`` of ``data`` that may be in the body of an ``if`` (what
    npu_loaded looks at): one after indentation, a ":" or a ";", or after a line continuation. One at
    the start of a line is a statement of the module itself. A text runs to its line's end, over
    line continuations and to the ")" of a "(" opened on its first line; text in strings and comments
    may be taken too (more texts, never fewer)."""
    out = []
    for m in _FROM.finditer(data):
        i = j = m.start()
        while j > 0 and data[j - 1] in b" \t\f":
            j -= 1
        before = data[j - 1 : j]
        line_start = j == 0 or before in (b"\n", b"\r")
        continued = line_start and data[: j - 1].rstrip(b"\r").endswith(b"\\")
        if not (before in (b":", b";") or line_start and (j < i or continued)):
            continue
        end = i
        while True:
            eol = data.find(b"\n", end)
            eol = len(data) if eol < 0 else eol
            opened = data.find(b"(", end, eol)
            if opened >= 0:
                closed = data.find(b")", opened)
                end = len(data) if closed < 0 else closed + 1
                break
            end = eol
            if not data[i:eol].rstrip(b"\r").endswith(b"\\") or eol == len(data):
                break
            end = eol + 1
        out.append(data[i:end])
    return out


def _names_npu(test: ast.expr) -> bool:
    for node in ast.walk(test):
        text = (
            node.id
            if isinstance(node, ast.Name)
            else node.attr
            if isinstance(node, ast.Attribute)
            else node.value
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            else ""
        )
        if text and _NPU_TEST.search(text):
            return True
    return False


def _import_targets(importer: str, node: ast.ImportFrom, exists) -> set[str]:
    """The project files an ``from M import a, b`` reaches: M itself, or M's submodules a, b."""
    out = set()
    target = resolve(importer, node.level, node.module or "", exists)
    if target is not None:
        out.add(target)
    for alias in node.names:
        module = f"{node.module}.{alias.name}" if node.module else alias.name
        sub = resolve(importer, node.level, module, exists)
        if sub is not None:
            out.add(sub)
    return out


def npu_ready_dirs(marked: set[str], dependency_dirs: set[str]) -> set[str]:
    """Folders whose Triton code already runs on NPU: a package whose ``__init__.py`` names
    triton-ascend or torch_npu, a folder whose dependency file lists triton-ascend (and what is under them)."""
    return {posixpath.dirname(m) for m in marked if posixpath.basename(m) == "__init__.py"} | dependency_dirs


def npu_ready_files(
    kernel_files: set[str], marked: set[str], ready_dirs: set[str], loaded_on_npu: set[str]
) -> frozenset[str]:
    """The kernel files whose kernels already run on NPU: the file itself is marked (NPU_MARKERS), it
    is under a ready folder (``npu_ready_dirs``), its path names the NPU (``named_for_npu``), or an
    import of it sits behind an NPU test."""
    return frozenset(
        rel
        for rel in kernel_files
        if rel in marked or rel in loaded_on_npu or in_ready_dir(rel, ready_dirs) or named_for_npu(rel)
    )


def named_for_npu(rel: str) -> bool:
    """Does a folder or the module name of ``rel`` say NPU or Ascend as a word (``_ascend``,
    ``triton_ascend``, ``npu_kernels.py``; not ``input.py``)?"""
    parts = rel.lower().rsplit(".", 1)[0].split("/")
    return any(word in _NPU_PATH_WORD for part in parts for word in re.split(r"[_\-.]", part))


def in_ready_dir(rel: str, ready_dirs) -> bool:
    folder = posixpath.dirname(rel)
    return any(_under(folder, d) for d in ready_dirs)


def _under(folder: str, base: str) -> bool:
    return not base or folder == base or folder.startswith(base + "/")


# ---- the worker's half


def _record(
    lines: list[str], node: ast.expr | ast.stmt | ast.keyword, level: str, api: str, message: str, suggestion: str
) -> Record:
    col = column(lines, node.lineno, node.col_offset)
    end_line = getattr(node, "end_lineno", None) or node.lineno
    end_col = column(lines, end_line, getattr(node, "end_col_offset", None) or node.col_offset)
    return Record(
        node.lineno,
        col,
        end_line,
        end_col,
        CODES["library"],
        level,
        "Triton",
        message,
        "builtin:triton",
        api=api,
        suggestion=suggestion,
    )


def _cuda_only(
    func: ast.FunctionDef | ast.AsyncFunctionDef,
    names: dict[str, str],
    cuda_only: list[str],
    alternatives: dict[str, set[str]],
) -> list[str]:
    """The CUDA-only Triton features a kernel's body uses (inline PTX, tl.extra.cuda). A name that
    another import of the file binds to a portable module (``try: from triton.language.extra.libdevice
    import rsqrt`` / ``except: from triton.language.extra.cuda.libdevice import rsqrt``) is not one."""

    def is_cuda(q: str) -> bool:
        return any(q == c or q.startswith(c + ".") for c in cuda_only)

    used = []
    for node in ast.walk(func):
        if isinstance(node, (ast.Attribute, ast.Name)):
            parts = dotted(node)
            q = qualify(node, names)
            if q is None or parts is None or not is_cuda(q) or q in used:
                continue
            bound = alternatives.get(parts[0], {names[parts[0]]})
            if all(is_cuda(".".join([b, *parts[1:]])) for b in bound):
                used.append(q)
    return used


def _alternatives(tree: ast.Module) -> dict[str, set[str]]:
    """Every qualified name each local name is bound to by some import of the file."""
    out: dict[str, set[str]] = {}
    for node in nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for local, q in import_bindings(node).items():
                out.setdefault(local, set()).add(q)
    return out


def triton_records(
    path: str,
    data_: bytes,
    tree: ast.Module,
    names: dict[str, str],
    lines: list[str],
    kernel_files: dict[str, tuple[str, ...]],
    ready: frozenset[str],
    ready_dirs: tuple[str, ...] = (),
) -> list[Record]:
    """The Triton findings of one file (``path`` relative, "/"): its kernels and its Triton import,
    and the imports and launches of kernels other project files define (``kernel_files``: file ->
    kernel names, NPU-ready ones excluded). Nothing for a file whose Triton code is NPU-ready."""
    if path in ready or npu_marked(data_) or (path and (in_ready_dir(path, ready_dirs) or named_for_npu(path))):
        return []
    facts = data()
    records: list[Record] = []
    defined = kernels(tree, names)
    alternatives = _alternatives(tree) if defined else {}
    for func, decorator in defined:
        features = _cuda_only(func, names, facts["cuda_only"], alternatives)
        if features:
            message = f"Triton kernel {func.name}: uses CUDA-only Triton features ({', '.join(features)})"
            records.append(_record(lines, decorator, "error", "triton", message, facts["cuda_only_route"]))
        else:
            records.append(
                _record(
                    lines,
                    decorator,
                    "warning",
                    "triton",
                    f"Triton kernel {func.name}: " + facts["kernel"]["message"],
                    facts["kernel"]["suggestion"],
                )
            )
    first_import = _first_triton_import(tree)
    if first_import is not None:
        what = facts["import_with_kernels" if defined else "import"]
        records.append(_record(lines, first_import, "note", "triton", what["message"], what["suggestion"]))
    if kernel_files:
        records += _kernel_uses(path, tree, names, lines, kernel_files, facts["elsewhere"])
    return records


def _first_triton_import(tree: ast.Module) -> ast.stmt | None:
    first = None
    for node in nodes(tree):
        if (
            isinstance(node, ast.Import)
            and any(a.name == "triton" or a.name.startswith("triton.") for a in node.names)
            or isinstance(node, ast.ImportFrom)
            and not node.level
            and node.module is not None
            and (node.module == "triton" or node.module.startswith("triton."))
        ):
            if first is None or (node.lineno, node.col_offset) < (first.lineno, first.col_offset):
                first = node
    return first


def _kernel_uses(
    path: str,
    tree: ast.Module,
    names: dict[str, str],
    lines: list[str],
    kernel_files: dict[str, tuple[str, ...]],
    text: dict,
) -> list[Record]:
    exists = kernel_files.__contains__
    records: list[Record] = []
    imported: dict[str, tuple[str, str]] = {}  # local name -> (kernel file, kernel)
    modules: dict[str, str] = {}  # local name of an imported kernel module -> its file
    for node in nodes(tree):
        if isinstance(node, ast.ImportFrom):
            target = resolve(path, node.level, node.module or "", exists)
            names_here = []
            for alias in node.names:
                local = alias.asname or alias.name
                if target is not None and target != path and alias.name in kernel_files[target]:
                    imported[local] = (target, alias.name)
                    names_here.append(alias.name)
                else:
                    module = f"{node.module}.{alias.name}" if node.module else alias.name
                    sub = resolve(path, node.level, module, exists)
                    if sub is not None and sub != path:
                        modules[local] = sub
            if names_here and target is not None:  # one finding per import statement (of a target's)
                records.append(_use(lines, node, "imports", target, ", ".join(names_here), text))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                sub = resolve(path, 0, alias.name, exists)
                if sub is not None and sub != path:
                    modules[alias.asname or alias.name] = sub
    for node in nodes(tree):  # launches: kernel[grid](...)
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)):
            continue
        launched = node.func.value
        if isinstance(launched, ast.Name) and launched.id in imported:
            target, kernel = imported[launched.id]
        elif (
            isinstance(launched, ast.Attribute)
            and isinstance(launched.value, ast.Name)
            and launched.value.id in modules
            and launched.attr in kernel_files[modules[launched.value.id]]
        ):
            target, kernel = modules[launched.value.id], launched.attr
        else:
            continue
        records.append(_use(lines, node, "launches", target, kernel, text))
    return records


def _use(lines: list[str], node: ast.stmt | ast.expr, verb: str, target: str, kernels_: str, text: dict) -> Record:
    what = "kernels" if "," in kernels_ else "kernel"
    return _record(
        lines,
        node,
        "note",
        "triton",
        f"{verb} the Triton {what} {kernels_} of {target}: {text['message']}",
        text["suggestion"],
    )
