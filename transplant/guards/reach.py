"""What CUDA-only code a piece of a file reaches: its own nodes, and the functions and classes of
the same file it names (followed transitively, each once).

CUDA-only code is a runtime CUDA build (a call that names ``.cu`` sources, passes
``cuda_sources``/``extra_cuda_cflags``, or ``cpp_extension.load``/``load_inline`` with CUDA), an
object such a build returns, a compiled extension or ``torch.ops`` namespace of the project that
needs CUDA (project facts), a Triton kernel (a function decorated by ``triton.*``, ``import
triton``), a CUDA-only library of the rules (``LibraryRule``: flash_attn, xformers, ...), a CUDA-only
tool (onnxruntime's CUDA/TensorRT providers, TensorRT, GPU builds of other frameworks), a cuDNN
operator called by name (``"aten::cudnn_convolution_backward_weight"``, ``torch.ops.aten.cudnn_*``:
CUDA builds alone have its kernel), an attribute only a kept CUDA path sets (cuda_state.py), and a
CUDA capability read as a number (probes.py). Each is a :class:`Reason` that says what and where.
Works on a CPython ``ast`` tree; decides nothing about rewriting.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, Sequence

from ..project import ProjectFacts
from ..project.builds import CUDA_KEYWORDS, CUDA_SOURCE, NPU_ROUTE, find_builds
from ..project.pynames import dotted, import_bindings, qualify, walk
from ..rules import RuleSet

if TYPE_CHECKING:
    _Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef  # a function or a class of the file

TRITON_ROUTE = (
    "triton-ascend (PyPI triton-ascend, Ascend's Triton backend for Atlas A2/A3) runs Triton kernels "
    "on the NPU; grid and block sizes often need adapting"
)
ORT_ROUTE = (
    "onnxruntime's CANNExecutionProvider (an onnxruntime build with the CANN execution provider) runs "
    "ONNX models on Ascend NPUs"
)
TENSORRT_ROUTE = "TensorRT has no NPU build; Ascend's ATC tool converts ONNX models to offline .om models"
GPU_BUILD_ROUTE = "install the framework's CPU build on an NPU host (its GPU build needs CUDA)"
STATE_ROUTE = "set it on the NPU path too, then test for NPU here"
CAPABILITY_ROUTE = "test the feature itself (torch_npu.npu.is_bf16_supported()) rather than a CUDA compute capability"
CUDNN_ROUTE = (
    "cuDNN operators have kernels in CUDA builds only: on the NPU call the portable operator they specialise "
    "(aten::convolution_backward or torch.nn.grad.conv2d_weight / conv2d_input for the cudnn_convolution ones), "
    "which torch_npu implements"
)
# ATen operators that only cuDNN (or MIOpen, its ROCm twin) implements, by name:
# torch._C._jit_get_operation("aten::cudnn_convolution_backward_weight"), torch.ops.aten.cudnn_convolution
# (cudnn_is_acceptable is a portable query: False for a tensor cuDNN cannot take)
# torch._C's private CUDA and NCCL bindings (torch._C._cuda_isInBadFork, torch._C._nccl_version; the
# names engine/namespace.py reports): a build of torch without CUDA, which an NPU host runs, lacks them
# (a CPU wheel of 2.13 keeps six allocator names, which do nothing without CUDA either)
CUDA_BINDING = re.compile(r"^torch\._C\.(_cuda\w*|_nccl\w*)(?:\.|$)")
BINDING_ROUTE = "use the public torch_npu.npu API of the same purpose (device, memory, stream queries) on the NPU path"
CUDNN_OPERATOR = re.compile(r"^(?:aten::|torch\.ops\.aten\.|torch\.)(_?(?:cudnn|miopen)_(?!is_acceptable)\w+)$")
# onnxruntime providers that need CUDA, and package names of GPU builds of other frameworks
CUDA_PROVIDERS = frozenset({"CUDAExecutionProvider", "TensorrtExecutionProvider"})
GPU_PACKAGE = re.compile(
    r"(?<![\w-])(onnxruntime-gpu|onnxruntime_gpu|tensorflow-gpu|tensorflow\[and-cuda\]|faiss-gpu"
    r"|paddlepaddle-gpu|jax\[cuda\w*\]|mxnet-cu\d+|cupy-cuda\w*)(?![\w-])"
)
TENSORFLOW = re.compile(r"^tensorflow(?:\s*[<>=!~].*)?$")


@dataclass(frozen=True)
class Reason:
    """One piece of CUDA-only code: its kind, what it is, its line in the file (or where the project
    defines it), and the route to NPU."""

    kind: str  # build | extension | triton | library | tool | operator | state | capability
    what: str
    where: str  # "line 12", "setup.py:30"
    route: str

    @property
    def text(self) -> str:
        return f"{self.what} ({self.where})"


class Project(Protocol):
    """What the project's other modules reach (crossfile.ProjectReach)."""

    def reason(self, importer: str, qualified: str, *, imported: bool, depth: int) -> Reason | None: ...


class Reach:
    """The CUDA-only code of one file, and what a list of nodes reaches of it."""

    def __init__(
        self,
        tree: ast.Module,
        names: dict[str, str],
        rules: RuleSet,
        facts: ProjectFacts,
        capability_uses: dict[int, Reason],
        nodes: list[ast.AST],
        *,
        builds: bool = True,
        origin: str = "",
        project: Project | None = None,
        depth: int = 0,
    ) -> None:
        self.names = names
        self.origin = origin  # the file on disk, when known: the project's modules are found from it
        self.project = project if origin else None
        self.depth = depth  # modules between the file converted and this one (crossfile.MAX_DEPTH)
        self.tree = tree
        self._top: tuple[Reason, ...] | None = None
        self.rules = rules
        self.facts = facts
        self.capability = capability_uses  # id(node) of a capability query read as a number -> Reason
        self.defs: dict[str, _Def] = {}  # module-level functions and classes
        self.methods: dict[str, dict[str, _Def]] = {}  # class -> method name -> def
        for stmt in tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.defs[stmt.name] = stmt
            if isinstance(stmt, ast.ClassDef):
                self.methods[stmt.name] = {
                    s.name: s for s in stmt.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                }
        self.triton: dict[str, int] = {}  # Triton kernels defined here -> line
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                self._is_triton(qualify(_decorator_callee(d), names)) for d in node.decorator_list
            ):
                self.triton[node.name] = node.lineno
        # (cpp_extension's builders need that word in the source)
        self.builds = {(b.line, b.col_offset): b for b in find_builds(tree, names) if b.cuda} if builds else {}
        self.built: dict[str, Reason] = {}  # names bound to what a CUDA build returns
        for node in nodes:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                found = self._build(node.value)
                if found is not None:
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            self.built[target.id] = Reason(
                                "extension", f"the extension {target.id} built by {found.what}", found.where, NPU_ROUTE
                            )
        self.states: dict[str, int] = {}  # self attributes only a kept CUDA path sets -> line (cuda_state.py)
        self._memo: dict[tuple[int, bool], tuple[Reason, ...]] = {}
        self._busy: set[tuple[int, bool]] = set()
        # (id of a node, follow) -> what it is: the regions of nested tests and flags hold the same nodes
        self._markers: dict[tuple[int, bool], Reason | None] = {}

    def know_states(self, states: dict[str, int]) -> None:
        """Count reads of these ``self`` attributes as CUDA-only code from now on."""
        self.states = states
        self._memo.clear()
        self._markers.clear()

    # ---- what a region reaches

    def reasons(self, nodes: Sequence[ast.AST], klass: str | None = None, *, cross: bool = True) -> list[Reason]:
        """The CUDA-only code ``nodes`` reach (in order, without repeats); ``klass`` is the class
        whose methods ``self.name(...)`` calls reach; ``cross``: into the project's other modules too."""
        out: list[Reason] = []
        seen: set[str] = set()
        for node in nodes:
            for reason in self._walk(node, klass, cross):
                key = reason.what
                if reason.kind == "triton" and not reason.what.startswith("the"):
                    key = "triton"
                elif reason.kind == "capability":
                    key = f"capability {reason.where}"  # each query, so that each is known to be guarded
                elif reason.kind == "library":
                    key = reason.what.rsplit("(", 1)[-1]  # one row per library
                if key not in seen and (reason.where not in seen or reason.kind == "capability"):  # each thing once
                    seen.update((key, reason.where))
                    out.append(reason)
        if any(r.what.startswith("the Triton kernel") for r in out):  # the kernel says it better
            out = [r for r in out if r.kind != "triton" or r.what.startswith("the Triton kernel")]
        return out

    def _walk(self, root: ast.AST, klass: str | None, cross: bool):
        called: set[int] = set()  # callees: only a call (or an import) is followed into the project's modules
        for node in walk(root):  # (breadth first: a call comes before its callee)
            if isinstance(node, ast.Call):
                called.add(id(node.func))
            reason = self._marker(
                node, follow=cross and (id(node) in called or isinstance(node, (ast.Import, ast.ImportFrom)))
            )
            if reason is not None:
                yield reason
            target = self._callee_def(node, klass)
            if target is not None:
                yield from self._of_def(target, cross)

    def of_def(self, node: _Def) -> tuple[Reason, ...]:
        """What a function or class of this file reaches."""
        return self._of_def(node)

    def top_level(self) -> tuple[Reason, ...]:
        """What importing this file runs that is CUDA-only by itself: its top-level imports of CUDA-only
        libraries and extensions, and its builds. (Not what the project's modules it imports run in
        turn: importing a package imports most of a project, and something in it is always CUDA-only.)"""
        if self._top is None:
            found: list[Reason] = []
            for stmt in self.tree.body:
                if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Assign, ast.Expr)):
                    found += [r for node in walk(stmt) if (r := self._marker(node, follow=False)) is not None]
            self._top = tuple(found)
        return self._top

    def kernel_reason(self, name: str) -> Reason:
        return Reason("triton", f"the Triton kernel {name}", f"line {self.triton[name]}", TRITON_ROUTE)

    def _of_def(self, node: _Def, cross: bool = True) -> tuple[Reason, ...]:
        key = (id(node), cross)
        if key in self._memo:
            return self._memo[key]
        if key in self._busy:  # recursion: what it reaches is being gathered further up
            return ()
        self._busy.add(key)
        klass = node.name if isinstance(node, ast.ClassDef) else None
        found = tuple(self.reasons(node.body, klass, cross=cross))
        self._busy.discard(key)
        self._memo[key] = found
        return found

    def _callee_def(self, node: ast.AST, klass: str | None) -> _Def | None:
        """A function or class of this file that ``node`` names (``f``, ``Cls.apply``, ``self.meth``)."""
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in self.names:
            return self.defs.get(node.id) if node.id not in self.triton else None  # a kernel is one reason
        if (
            isinstance(node, ast.Attribute)
            and klass is not None
            and isinstance(node.value, ast.Name)
            and node.value.id in ("self", "cls", klass)
        ):
            return self.methods.get(klass, {}).get(node.attr)
        return None

    # ---- the CUDA-only code one node is

    def _marker(self, node: ast.AST, *, follow: bool = True) -> Reason | None:
        key = (id(node), follow)
        if key in self._markers:
            return self._markers[key]
        found = self._markers[key] = self._find_marker(node, follow)
        return found

    def _find_marker(self, node: ast.AST, follow: bool) -> Reason | None:
        where = f"line {getattr(node, 'lineno', 0)}"
        if id(node) in self.capability:
            return self.capability[id(node)]
        if isinstance(node, ast.Call):
            return self._build(node)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for bound in import_bindings(node).values():
                found = self._qualified(bound, where, imported=True, follow=follow)
                if found is not None:
                    return found
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return cudnn_operator(node.value, where) or tool_string(node.value, where)
        if (
            isinstance(node, ast.Attribute)
            and node.attr in self.states
            and isinstance(node.ctx, ast.Load)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ):
            line = self.states[node.attr]
            return Reason("state", f"self.{node.attr}, which only the CUDA path sets", f"line {line}", STATE_ROUTE)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in self.built:
                return self.built[node.id]
            if node.id in self.triton and node.id not in self.names:
                return self.kernel_reason(node.id)
        if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(getattr(node, "ctx", None), ast.Load):
            qualified = qualify(node, self.names)
            if qualified is not None and (isinstance(node, ast.Name) or dotted(node) is not None):
                return self._qualified(qualified, where, follow=follow)
        return None

    def _qualified(self, qualified: str, where: str, *, imported: bool = False, follow: bool = True) -> Reason | None:
        if (operator := cudnn_operator(qualified, where)) is not None:
            return operator
        if (binding := CUDA_BINDING.match(qualified)) is not None:
            return Reason(
                "operator", f"torch._C.{binding.group(1)}, a binding of CUDA builds of torch", where, BINDING_ROUTE
            )
        if self._is_triton(qualified):
            return Reason("triton", f"Triton ({qualified})", where, TRITON_ROUTE)
        if qualified == "tensorrt" or qualified.startswith("tensorrt."):
            return Reason("tool", "TensorRT", where, TENSORRT_ROUTE)
        rule = self.rules.library_of(qualified)
        if rule is not None:
            return Reason(
                "library", f"{qualified}, a CUDA-only library ({rule['module']})", where, rule.get("suggestion", "")
            )
        parts = qualified.lstrip(".").split(".")
        if qualified.startswith("torch.ops.") and len(parts) > 2:
            space = self.facts.namespace(parts[2])
            if space is not None and space.cuda:
                return Reason("extension", f"the custom CUDA operators torch.ops.{parts[2]}", space.where, NPU_ROUTE)
            return None
        for i in range(len(parts), 0, -1):
            head = ".".join(parts[:i])
            module = self.facts.module(head)
            if module is None and qualified.startswith("."):
                module = next((m for m in self.facts.modules if m.name.endswith("." + head)), None)
            if module is not None:
                if not module.cuda:
                    return None
                return Reason("extension", f"the CUDA extension {module.name}", module.where, NPU_ROUTE)
        if self.project is not None and follow:  # a function, class or module of the project: what it reaches
            return self.project.reason(self.origin, qualified, imported=imported, depth=self.depth)
        return None

    def _is_triton(self, qualified: str | None) -> bool:
        return qualified is not None and (qualified == "triton" or qualified.startswith("triton."))

    def _build(self, call: ast.Call) -> Reason | None:
        """A call that builds CUDA code at run time: ``load``/``load_inline`` with CUDA, or any call
        that names ``.cu`` sources or passes nvcc flags / CUDA sources (a project's own build helper)."""
        where = f"line {call.lineno}"
        build = self.builds.get((call.lineno, call.col_offset))
        if build is not None:
            name = f" '{build.name}'" if build.name else ""
            return Reason("build", f"the runtime CUDA build {build.kind}{name}", where, NPU_ROUTE)
        for kw in call.keywords:
            if kw.arg in CUDA_KEYWORDS:
                return Reason("build", f"a runtime CUDA build ({kw.arg}=)", where, NPU_ROUTE)
        for arg in [*call.args, *(kw.value for kw in call.keywords)]:
            for node in ast.walk(arg):
                if (
                    isinstance(node, ast.Constant)
                    and isinstance(node.value, str)
                    and node.value.lower().endswith(CUDA_SOURCE)
                ):
                    callee = ".".join(dotted(call.func) or ["a call"])
                    return Reason("build", f"a runtime CUDA build ({callee} of {node.value})", where, NPU_ROUTE)
        return None


def _decorator_callee(node: ast.expr) -> ast.expr:
    """``triton.jit`` of ``@triton.jit`` and of ``@triton.autotune(...)``."""
    return node.func if isinstance(node, ast.Call) else node


def cudnn_operator(text: str, where: str) -> Reason | None:
    """The cuDNN (or MIOpen) ATen operator ``text`` names, as a string or a qualified name."""
    match = CUDNN_OPERATOR.match(text)
    if match is None:
        return None
    return Reason("operator", f"the cuDNN operator aten::{match.group(1)}", where, CUDNN_ROUTE)


def tool_string(text: str, where: str) -> Reason | None:
    """The CUDA-only tool a string names: an onnxruntime CUDA provider or a GPU package."""
    if text in CUDA_PROVIDERS:
        route = TENSORRT_ROUTE if text.startswith("Tensorrt") else ORT_ROUTE
        return Reason("tool", f"onnxruntime's {text}", where, route)
    if TENSORFLOW.match(text):  # pip's tensorflow is the GPU build on Linux; tensorflow-cpu is not
        return Reason("tool", "the GPU build of TensorFlow (tensorflow, not tensorflow-cpu)", where, GPU_BUILD_ROUTE)
    match = GPU_PACKAGE.search(text)
    if match is not None:
        route = ORT_ROUTE if match.group(1).startswith("onnxruntime") else GPU_BUILD_ROUTE
        return Reason("tool", f"the GPU package {match.group(1)}", where, route)
    return None


__all__ = ["CAPABILITY_ROUTE", "ORT_ROUTE", "Reach", "Reason", "TRITON_ROUTE", "cudnn_operator", "tool_string"]
