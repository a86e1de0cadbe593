"""C++/CUDA extension builds declared in Python: ``CUDAExtension``/``CppExtension`` in setup.py,
``torch.utils.cpp_extension.load``/``load_inline``, builds through any helper that is given CUDA
sources or CUDA flags (``runtime_builds``), ``CUDA_HOME`` and ``nvcc`` flags.

``find_builds`` gives the extension modules a project builds (their names, sources and whether
they need CUDA), for the project facts; ``build_records`` gives the findings (TP205) of one file.
Works on a CPython ``ast`` tree; never rewrites code.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ..records import CODES, Record
from .pynames import column, dotted, nodes, qualify

EXT = "torch.utils.cpp_extension"
BUILDERS = {
    f"{EXT}.CUDAExtension": "CUDAExtension",
    f"{EXT}.CppExtension": "CppExtension",
    f"{EXT}.load": "load",
    f"{EXT}.load_inline": "load_inline",
}
CUDA_HOME = f"{EXT}.CUDA_HOME"
CUDA_SOURCE = (".cu", ".cuh")
# What a file must contain for a build through a project's own helper to be found (runtime_builds):
# a CUDA source named in a string, or the CUDA-only arguments of torch's build functions.
HELPER_WORDS = (b".cu'", b'.cu"', b".cuh", b"extra_cuda_cflags", b"cuda_sources")
CUDA_KEYWORDS = ("extra_cuda_cflags", "cuda_sources")
_NAME_KEYWORDS = ("name", "module_name", "extension_name", "ext_name", "plugin_name")
NPU_ROUTE = (
    "build the C++ part with torch_npu.utils.cpp_extension.NpuExtension (torch_npu's C++ extension "
    "support) and port the CUDA kernels to Ascend C custom operators, or express them with torch / "
    "torch_npu operators"
)


@dataclass(frozen=True)
class Build:
    """One extension module built from project sources."""

    line: int
    col_offset: int
    kind: str  # CUDAExtension | CppExtension | load | load_inline | "<helper>()" (runtime_builds)
    name: str  # the module name it builds ("" when not a literal)
    sources: tuple[str, ...]  # as written (paths, or glob patterns)
    cuda: bool
    variable: str = ""  # the name a load()/load_inline() result is assigned to
    functions: tuple[str, ...] = ()  # load_inline(functions=[...])


def _argument(call: ast.Call, index: int, keyword: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    if index < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
        return call.args[index]
    return None


def _strings(node: ast.expr | None, lists: dict[str, ast.expr], depth: int = 0) -> list[str]:
    """The path strings an expression spells: literals, lists of them, os.path.join of literals,
    glob.glob(pattern), a module-level list variable, and sums of those."""
    if node is None or depth > 5:
        return []
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [s for e in node.elts for s in _strings(e, lists, depth + 1)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _strings(node.left, lists, depth + 1) + _strings(node.right, lists, depth + 1)
    if isinstance(node, ast.Name) and node.id in lists:
        value = lists[node.id]
        if isinstance(value, ast.ListComp):  # sources = [join(d, s) for s in sources]: the earlier list
            inner = value.generators[0].iter
            if isinstance(inner, ast.Name) and inner.id == node.id:
                return _strings(lists.get(f"{node.id}\0before"), lists, depth + 1)
        return _strings(value, lists, depth + 1)
    if isinstance(node, ast.ListComp) and len(node.generators) == 1:  # [join(d, s) for s in names]: the names
        return _strings(node.generators[0].iter, lists, depth + 1)
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name == "join":  # os.path.join(base, "csrc", "x.cu"): the literal tail is what identifies the file
            parts = [s for a in node.args for s in _strings(a, lists, depth + 1)]
            return ["/".join(parts)] if parts else []
        if name in ("glob", "iglob") and node.args:
            return _strings(node.args[0], lists, depth + 1)
    return []


def _is_list(node: ast.expr, lists: dict[str, ast.expr]) -> bool:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _is_list(node.left, lists) or _is_list(node.right, lists)
    if isinstance(node, ast.Name) and node.id in lists:
        return _is_list(lists[node.id], {})
    return isinstance(node, (ast.List, ast.Tuple, ast.Set))


def _module_lists(tree: ast.Module) -> dict[str, ast.expr]:
    """Name -> the value last assigned to it, at module level and then in functions (a build helper's
    ``sources = [...]``); a name rebound from a comprehension over itself keeps its earlier value as
    ``name + "\\0before"``."""
    out: dict[str, ast.expr] = {}
    module_level = {id(stmt) for stmt in tree.body}
    ordered = [stmt for stmt in tree.body] + [n for n in nodes(tree) if id(n) not in module_level]
    for stmt in ordered:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            if name in out and id(stmt) not in module_level and name in _module_names(tree):
                continue  # a module-level list is not overridden by a function's local of the same name
            if name in out:
                out[f"{name}\0before"] = out[name]
            out[name] = stmt.value
    return out


def _module_names(tree: ast.Module) -> set[str]:
    return {
        stmt.targets[0].id
        for stmt in tree.body
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
    }


def _truthy(node: ast.expr | None) -> bool:
    if node is None:
        return False
    if isinstance(node, ast.Constant):
        return bool(node.value)
    return not (isinstance(node, (ast.List, ast.Tuple)) and not node.elts)


def find_builds(tree: ast.Module, names: dict[str, str]) -> list[Build]:
    lists = _module_lists(tree)
    assigned: dict[int, str] = {}
    for node in nodes(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigned[id(node.value)] = node.targets[0].id
    builds: list[Build] = []
    for node in nodes(tree):
        if not isinstance(node, ast.Call):
            continue
        kind = BUILDERS.get(qualify(node.func, names) or "")
        if kind is None:
            continue
        name_node = _argument(node, 0, "name")
        name = name_node.value if isinstance(name_node, ast.Constant) and isinstance(name_node.value, str) else ""
        if kind == "load_inline":
            sources = []  # cpp_sources / cuda_sources are code, not files
            cuda = _truthy(_argument(node, 2, "cuda_sources"))
            funcs = _strings(_argument(node, 3, "functions"), lists)
        else:
            sources = _strings(_argument(node, 1, "sources"), lists)
            cuda = kind == "CUDAExtension" or any(s.lower().endswith(CUDA_SOURCE) for s in sources)
            funcs = []
        if kind in ("load", "load_inline"):
            cuda = (
                cuda
                or _truthy(_argument(node, 99, "with_cuda"))
                or _argument(node, 99, "extra_cuda_cflags") is not None
            )
        builds.append(
            Build(
                node.lineno,
                node.col_offset,
                kind,
                name,
                tuple(sources),
                cuda,
                assigned.get(id(node), ""),
                tuple(f for f in funcs if f.isidentifier()),
            )
        )
    seen = {(b.line, b.col_offset) for b in builds}
    builds += [b for b in runtime_builds(tree, names, lists, assigned) if (b.line, b.col_offset) not in seen]
    return builds


def runtime_builds(
    tree: ast.Module,
    names: dict[str, str],
    lists: dict[str, ast.expr] | None = None,
    assigned: dict[int, str] | None = None,
) -> list[Build]:
    """CUDA builds through any function, the project's own helpers included
    (``custom_ops.get_plugin("bias_act_plugin", sources=[..., "bias_act.cu"], extra_cuda_cflags=...)``):
    a call whose arguments name ``.cu`` / ``.cuh`` sources or pass ``extra_cuda_cflags`` /
    ``cuda_sources``. torch's own builders (BUILDERS) are left to ``find_builds``. The module name is
    the ``name`` (or ``module_name``...) keyword, else the first positional string that is a Python name."""
    lists = _module_lists(tree) if lists is None else lists
    if assigned is None:
        assigned = {
            id(n.value): n.targets[0].id
            for n in nodes(tree)
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
        }
    found: list[Build] = []
    for node in nodes(tree):
        if not isinstance(node, ast.Call) or BUILDERS.get(qualify(node.func, names) or ""):
            continue
        keywords = {kw.arg for kw in node.keywords if kw.arg}
        # sources are lists (a literal, a module-level list, a sum of them) or a "sources" argument;
        # a lone path string (os.path.join(d, "k.cu"), open("k.cu")) is no build
        values = [v for v in node.args if _is_list(v, lists)]
        values += [
            kw.value for kw in node.keywords if kw.arg in ("sources", "cuda_sources") or _is_list(kw.value, lists)
        ]
        sources = [s for v in values for s in _strings(v, lists)]
        # a bare suffix (".cu" in a list of file kinds: argparse's default=[".c", ".cu", ...]) names no file
        cuda_sources = [s for s in sources if s.lower().endswith(CUDA_SOURCE) and s.lower() not in CUDA_SOURCE]
        if not cuda_sources and not keywords & set(CUDA_KEYWORDS):
            continue
        name = next(
            (
                kw.value.value
                for kw in node.keywords
                if kw.arg in _NAME_KEYWORDS and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str)
            ),
            "",
        )
        if not name:
            name = next(
                (
                    a.value
                    for a in node.args
                    if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.isidentifier()
                ),
                "",
            )
        func = qualify(node.func, names) or ".".join(dotted(node.func) or ["(a call)"])
        found.append(
            Build(
                node.lineno,
                node.col_offset,
                f"{func}()",
                name,
                tuple(s for s in sources if "." in s.rsplit("/", 1)[-1]),
                True,
                assigned.get(id(node), ""),
            )
        )
    return found


def _record(
    lines: list[str], node: ast.expr | ast.stmt | ast.keyword, api: str, message: str, suggestion: str
) -> Record:
    col = column(lines, node.lineno, node.col_offset)
    end_line = getattr(node, "end_lineno", None) or node.lineno
    end_col = column(lines, end_line, getattr(node, "end_col_offset", node.col_offset) or 0)
    return Record(
        node.lineno,
        col,
        end_line,
        end_col,
        CODES["cuda_build"],
        "warning",
        "CUDA build",
        message,
        "builtin:cuda_build",
        api=api,
        suggestion=suggestion,
    )


def _is_none_test(test: ast.expr) -> ast.expr | None:
    """The expression ``test`` checks for None (``x is None``, ``x is not None``, ``x == None``,
    ``not x``, a bare ``x``), or None."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Is, ast.IsNot, ast.Eq, ast.NotEq))
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    ):
        return test.left
    return test if isinstance(test, (ast.Name, ast.Attribute)) else None


def _none_checked(tree: ast.Module, names: dict[str, str]) -> dict[int, int]:
    """id of each CUDA_HOME read that the code tests for None -> the test's line: the read in an
    ``if``'s test itself, a read assigned to a name that a later ``if`` of the same function tests
    (``cuda_home = CUDA_HOME`` then ``if cuda_home is None:``), and the reads in the body of such an
    ``if`` that is true where CUDA_HOME is None (DeepSpeed's env_report prints it there)."""
    found: dict[int, int] = {}
    scopes = [tree] + [n for n in nodes(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for scope in scopes:
        aliases: dict[str, list[ast.expr]] = {}
        for stmt in ast.walk(scope):
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, (ast.Name, ast.Attribute))
                and qualify(stmt.value, names) == CUDA_HOME
            ):
                aliases.setdefault(stmt.targets[0].id, []).append(stmt.value)
        for stmt in ast.walk(scope):
            if not isinstance(stmt, (ast.If, ast.While, ast.IfExp)):
                continue
            tested = _is_none_test(stmt.test)
            if tested is None:
                continue
            if qualify(tested, names) == CUDA_HOME:
                found.setdefault(id(tested), stmt.test.lineno)
            elif isinstance(tested, ast.Name) and tested.id in aliases:
                for read in aliases[tested.id]:
                    found.setdefault(id(read), stmt.test.lineno)
            else:
                continue
            body = stmt.body if isinstance(stmt.body, list) else [stmt.body]
            for part in body:
                for n in ast.walk(part):
                    if isinstance(n, (ast.Name, ast.Attribute)) and qualify(n, names) == CUDA_HOME:
                        found.setdefault(id(n), stmt.test.lineno)
    return found


def build_records(tree: ast.Module, names: dict[str, str], lines: list[str]) -> list[Record]:
    """TP205 findings of one file: CUDA builds, CUDA_HOME uses, nvcc flags."""
    records: list[Record] = []
    builds = find_builds(tree, names)
    helper_flags = set()  # the flags of a helper build are part of its own finding
    for node in nodes(tree):
        if isinstance(node, ast.Call) and any(
            (node.lineno, node.col_offset) == (b.line, b.col_offset) and b.kind.endswith("()") for b in builds
        ):
            helper_flags |= {id(kw) for kw in node.keywords}
    for build in builds:
        if not build.cuda:
            continue
        label = f"'{build.name}'" if build.name else "(name not a literal)"
        shown = ", ".join(build.sources[:4]) + (", ..." if len(build.sources) > 4 else "")
        what = f"{build.kind} {label} compiles CUDA sources with nvcc" + (f" ({shown})" if shown else "")
        # a node that only carries the build's position (every field given: Python 3.13 warns of a
        # missing one, 3.15 refuses it)
        node = ast.Call(ast.Name("_", ast.Load()), [], [], lineno=build.line, col_offset=build.col_offset)
        api = build.kind[:-2] if build.kind.endswith("()") else f"{EXT}.{build.kind}"
        records.append(
            _record(lines, node, api, f"{what}; an NPU machine has no CUDA compiler and no CUDA runtime", NPU_ROUTE)
        )
    checked = _none_checked(tree, names) if any("CUDA_HOME" in line for line in lines) else {}
    for node in nodes(tree):
        if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
            if qualify(node, names) == CUDA_HOME:
                record = _record(
                    lines,
                    node,
                    CUDA_HOME,
                    "CUDA_HOME is None where CUDA is not installed; code that needs it stops on an NPU machine",
                    "test for torch_npu instead; " + NPU_ROUTE,
                )
                if id(node) in checked:
                    record.level = "note"
                    record.message += (
                        f" (the code tests it for None at line {checked[id(node)]}: it reads a missing CUDA)"
                    )
                records.append(record)
        elif isinstance(node, ast.Dict):
            for key in node.keys:
                if isinstance(key, ast.Constant) and key.value == "nvcc":
                    records.append(
                        _record(
                            lines,
                            key,
                            "nvcc",
                            "nvcc compiler flags: CUDA-only build options",
                            "drop them for the NPU build; " + NPU_ROUTE,
                        )
                    )
        elif isinstance(node, ast.keyword) and node.arg == "extra_cuda_cflags" and id(node) not in helper_flags:
            records.append(
                _record(
                    lines,
                    node.value,
                    "extra_cuda_cflags",
                    "nvcc compiler flags: CUDA-only build options",
                    "drop them for the NPU build; " + NPU_ROUTE,
                )
            )
    records.sort(key=lambda r: (r.line, r.col))
    return records
