"""Code that already supports NPU keeps its CUDA alternatives (issue 18, pattern 2).

Owns finding, before the traversal, the parts of a file that must stay as they are because the
project already tells NPU from CUDA there:

* an if/elif chain or a ``match`` one of whose tests names NPU (``"npu"``, ``torch.npu``,
  ``torch_npu``, ``is_npu_available()``, ``use_npu``): every test of it, and the branches for
  the other devices (else included); the NPU branches are converted as usual. Converting the CUDA
  branch would make a second NPU branch and leave the project's own one dead;
* a bare ``torch.cuda.X()`` call statement in a block with such an ``if``
  (``torch.cuda.empty_cache()`` then ``if device == "npu": torch.npu.empty_cache()``): converting
  it would flush NPU's cache twice;
* a dict with an ``"npu"`` key and a list, set or tuple with an ``"npu"`` element (``choices``):
  whole, so that no entry is duplicated;
* in a file that tests for NPU somewhere (such a chain or match, a comparison with ``"npu"``), a
  comparison with a CUDA device string, ``.startswith("cuda")``, a ``case "cuda":``: "cuda" there
  means CUDA. (A dict or a list of choices naming NPU says that NPU is an option, not that the
  code tells it apart.) An ``if`` tested that way is kept whole (a CUDA-only branch converted to NPU calls
  runs nowhere). Defaults that pick the device (``default="cuda"``) are not tests and still convert,
  but a parameter's default of a value such a kept test reads (``device="cuda"`` beside
  ``if self.device == "cuda":``) stays with its test: one decision;
* in a project that already runs on NPU (project/npu_support.py), every file's "cuda" tests mean CUDA
  as above, whether or not the file names NPU itself.

The result maps the id of every node in those parts to the reason; state.py's ``record`` turns a
change anchored there into a note saying why it was kept (findings still go through), except a
device string kept in a test or a collection, which ties nothing to CUDA. Runs only
on files whose bytes name NPU, so CUDA-only projects pay nothing.
"""

from __future__ import annotations

import re

import libcst as cst

from .cst_util import string_value
from .literals import is_cuda_device
from .traverse import children, descendants, walk

NPU_STRING = re.compile(r"^npu(:\d+)?$")
NPU_WORD = re.compile(r"(?:^|_)npu(?:_|$)")
CUDA_WORD = re.compile(r"(?:^|_)cuda(?:_|$)")
DEVICE_WORD = re.compile(r"(?:^|_)(?:device|dev|type|accelerator|backend|platform)$", re.IGNORECASE)
NPU_WORD_BYTES = re.compile(rb"npu(?<![A-Za-z0-9]npu)")  # (literal first: a fast scan)
# an "npu" device string: a file with one is converted whole, not through the skeleton (driver.py)
NPU_STRING_BYTES = re.compile(rb"""npu(?<=['"]npu)[:'"]""")
# a test for NPU in statements the skeleton folded away (they hold no CUDA word, so they are read
# as bytes): a comparison with an "npu" string, an NPU availability test
NPU_TEST_BYTES = re.compile(
    rb"""(?:==|!=|\bin)\s*[(\[{]?\s*f?['"]npu\b|\bf?['"]npu(?::\d*)?['"]\s*(?:==|!=)"""
    rb"""|\bis_\w*npu_available\(|\btorch\.npu\.is_available\(|\bcase\s+['"]npu['"]"""
)

CHAIN = "a branch for another device of an if/elif chain that already handles NPU"
MATCH = "a case for another device of a match that already handles NPU"
COLLECTION = "a collection that already names NPU (no entry is duplicated)"
SIBLING = "a CUDA call beside an if that handles NPU itself"
TEST = "a 'cuda' test in a file that already tells NPU from CUDA: it means CUDA"
DEFAULT = (
    "the default of a value that this file tests against 'cuda' in tests that stay (they mean CUDA): "
    "converted alone, a run that leaves it would take the test's other branch"
)
PROJECT_TEST = (
    "a 'cuda' test in a project that already runs on NPU (its device helpers tell NPU from CUDA): it means CUDA"
)


def _npu_string(node: cst.CSTNode) -> bool:
    if isinstance(node, cst.SimpleString):
        value = string_value(node)
        return value is not None and NPU_STRING.match(value) is not None
    if isinstance(node, cst.FormattedString):
        first = node.parts[0] if node.parts else None
        return isinstance(first, cst.FormattedStringText) and (
            first.value == "npu:" or NPU_STRING.match(first.value) is not None
        )
    return False


def _cuda_api(func: cst.BaseExpression) -> bool:
    """A call of ``torch.cuda.<name>`` (spelled so)."""
    parts = []
    while isinstance(func, cst.Attribute):
        parts.append(func.attr.value)
        func = func.value
    return isinstance(func, cst.Name) and func.value == "torch" and parts[-1:] == ["cuda"] and len(parts) >= 2


def _query(func: cst.BaseExpression) -> bool:
    """``torch.cuda.is_available``, ``device_count``, ``is_bf16_supported``: a question, whose answer
    can be a flag (a constructor or an action cannot)."""
    name = func.attr.value if isinstance(func, cst.Attribute) else ""
    return name.startswith("is_") or name == "device_count"


def names_npu(node: cst.CSTNode) -> bool:
    """Does ``node`` name NPU: an "npu" device string, or a name or attribute with an ``npu`` word
    (``torch.npu``, ``torch_npu``, ``is_npu_available``, ``args.use_npu``)?"""
    for n in descendants(node):
        if _npu_string(n) or isinstance(n, cst.Name) and NPU_WORD.search(n.value):
            return True
    return False


class _Finder(cst.CSTVisitor):
    def __init__(self, aware: bool, project: bool = False) -> None:
        self.aware = aware  # the file tests for NPU somewhere: its "cuda" tests mean CUDA
        self.project = project  # the project runs on NPU (project/npu_support.py): so do they
        self._tests: list[tuple[cst.CSTNode, bool]] = []  # "cuda" tests, kept if the file is aware
        # what to keep, in the order asked: (subtree, why, quiet); marked() marks every node once
        self._regions: list[tuple[cst.CSTNode, str, bool]] = []
        self._chained: set[int] = set()
        self._weak: set[int] = set()  # tests that read no device by its name: kept only if the file is aware
        self._tested: set[str] = set()  # names of the values tested against "cuda" (args.device -> device)
        self._defaults: list[tuple[cst.CSTNode, str]] = []  # parameters' CUDA defaults, by parameter name

    def _keep(self, node: cst.CSTNode | None, reason: str, *, quiet: bool = False) -> None:
        if node is not None:
            self._regions.append((node, reason, quiet))

    def marked(self, module: cst.Module) -> tuple[dict[int, str], set[int]]:
        """(id -> why, the quiet ids) of the nodes of the regions asked for: a node's reason is that
        of the first region asked for that holds it (regions nest), and it is quiet (tests and
        collections: a device string kept there needs no note) when any region holding it is
        quiet. One walk of the module, however deeply the regions nest."""
        kept: dict[int, str] = {}
        quiet: set[int] = set()
        if not self._regions:
            return kept, quiet
        roots: dict[int, tuple[int, bool]] = {}
        for order, (region, _reason, region_quiet) in enumerate(self._regions):
            earliest, was_quiet = roots.get(id(region), (order, False))
            roots[id(region)] = (earliest, was_quiet or region_quiet)
        reasons = [reason for _node, reason, _quiet in self._regions]
        stack: list[tuple[cst.CSTNode, int | None, bool]] = [(module, None, False)]
        while stack:
            node, first, is_quiet = stack.pop()
            root = roots.get(id(node))
            if root is not None:
                first = root[0] if first is None else min(first, root[0])
                is_quiet = is_quiet or root[1]
            if first is not None:
                kept[id(node)] = reasons[first]
                if is_quiet:
                    quiet.add(id(node))
            stack.extend((child, first, is_quiet) for child in children(node))
        return kept, quiet

    def visit_If(self, node: cst.If) -> None:
        if id(node) in self._chained:
            return
        branches: list[tuple[cst.BaseExpression | None, cst.CSTNode]] = []
        current: cst.If | cst.Else | None = node
        while isinstance(current, cst.If):
            self._chained.add(id(current))
            branches.append((current.test, current.body))
            current = current.orelse
        if current is not None:
            branches.append((None, current.body))
        if any(test is not None and names_npu(test) for test, _ in branches):
            self.aware = True
            for test, body in branches:
                self._keep(test, CHAIN, quiet=True)
                if test is None or not names_npu(test):
                    self._keep(body, CHAIN)
        elif any(self._cuda_test(test) for test, _ in branches if test is not None):
            tests = [test for test, _ in branches if test is not None]
            self._tests += [(test, True) for test in tests]
            self._tests.append((node, False))
            if not any(_device_test(test) for test in tests):
                self._weak.update(id(n) for n in (*tests, node))

    # torch.cuda.empty_cache() next to `if device == "npu": torch.npu.empty_cache()`: the project
    # flushes each device's cache itself; converting the CUDA call would flush NPU's twice

    def visit_Module(self, node: cst.Module) -> None:
        self._siblings(node.body)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._siblings(node.body)

    def _siblings(self, body) -> None:
        if not any(isinstance(stmt, cst.If) and names_npu(stmt.test) for stmt in body):
            return
        for stmt in body:
            if isinstance(stmt, cst.SimpleStatementLine) and all(
                isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and _cuda_api(small.value.func)
                for small in stmt.body
            ):
                self.aware = True
                self._keep(stmt, SIBLING)

    def visit_Match(self, node: cst.Match) -> None:
        if any(names_npu(case.pattern) for case in node.cases):
            self.aware = True
            for case in node.cases:
                self._keep(case.pattern, MATCH, quiet=True)
                if not names_npu(case.pattern):
                    self._keep(case.body, MATCH)
        else:
            for case in node.cases:
                if any(is_cuda_device(n) for n in descendants(case.pattern)):
                    self._tests += [(case.pattern, True), (case, False)]
                    if not _device_operand(node.subject):
                        self._weak.update((id(case.pattern), id(case)))

    def _collection(self, node: cst.CSTNode, items) -> None:
        if any(_npu_string(item) for item in items):
            self._keep(node, COLLECTION, quiet=True)

    def visit_Dict(self, node: cst.Dict) -> None:
        self._collection(node, [el.key for el in node.elements if isinstance(el, cst.DictElement)])

    def visit_List(self, node: cst.List) -> None:
        self._collection(node, [el.value for el in node.elements])

    def visit_Set(self, node: cst.Set) -> None:
        self._collection(node, [el.value for el in node.elements])

    def visit_Tuple(self, node: cst.Tuple) -> None:
        self._collection(node, [el.value for el in node.elements])

    def visit_Comparison(self, node: cst.Comparison) -> None:
        operands = [node.left, *(c.comparator for c in node.comparisons)]
        if any(_npu_string(o) for o in operands):
            self.aware = True
        if self._cuda_comparison(node):
            self._tests.append((node, True))
            if not any(_device_operand(o) for o in operands):
                self._weak.add(id(node))
            for operand in operands:
                name = _last_name(operand)
                if name:
                    self._tested.add(name)

    def visit_Param(self, node: cst.Param) -> None:
        if node.default is not None and is_cuda_device(node.default):
            self._defaults.append((node.default, node.name.value))

    def visit_Assign(self, node: cst.Assign) -> None:
        """``is_cuda_available = torch.cuda.is_available()``: the project's CUDA flag (see _cuda_flag)."""
        if any(isinstance(t.target, cst.Name) and CUDA_WORD.search(t.target.value) for t in node.targets) and any(
            isinstance(n, cst.Call) and _cuda_api(n.func) and _query(n.func) for n in descendants(node.value)
        ):  # (``cuda_stream = torch.cuda.Stream()`` is no flag)
            self._tests.append((node.value, False))

    def visit_Call(self, node: cst.Call) -> None:
        if self._prefix_test(node):
            self._tests.append((node, True))
            if not (isinstance(node.func, cst.Attribute) and _device_operand(node.func.value)):
                self._weak.add(id(node))

    @staticmethod
    def _cuda_comparison(node: cst.Comparison) -> bool:
        operands = [node.left, *(c.comparator for c in node.comparisons)]
        return any(
            is_cuda_device(o)
            or isinstance(o, (cst.List, cst.Tuple, cst.Set))
            and any(is_cuda_device(el.value) for el in o.elements)
            for o in operands
        )

    @staticmethod
    def _prefix_test(node: cst.Call) -> bool:
        return (
            isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "startswith"
            and len(node.args) >= 1
            and (string_value(node.args[0].value) or "").startswith("cuda")
        )

    def _cuda_test(self, test: cst.BaseExpression) -> bool:
        return _cuda_flag(test) or any(
            isinstance(n, cst.Comparison)
            and self._cuda_comparison(n)
            or isinstance(n, cst.Call)
            and self._prefix_test(n)
            for n in descendants(test)
        )


def _device_operand(node: cst.BaseExpression) -> bool:
    """Does ``node`` read a device by its name (``device``, ``args.device_type``, ``x.device.type``,
    ``str(device)``, ``device.lower()``)? ("cuda" in ``contents``, a list of options, does not.)"""
    while isinstance(node, cst.Call):
        if isinstance(node.func, cst.Attribute) and not node.args:
            node = node.func.value  # device.lower()
        elif isinstance(node.func, cst.Name) and len(node.args) == 1:
            node = node.args[0].value  # str(device)
        else:
            return False
    return DEVICE_WORD.search(_last_name(node)) is not None


def _device_test(test: cst.BaseExpression) -> bool:
    """A test that reads a device by its name, or the project's own CUDA flag."""
    return _cuda_flag(test) or any(
        isinstance(n, cst.Comparison)
        and any(_device_operand(o) for o in [n.left, *(c.comparator for c in n.comparisons)])
        or isinstance(n, cst.Call)
        and isinstance(n.func, cst.Attribute)
        and n.func.attr.value == "startswith"
        and _device_operand(n.func.value)
        for n in descendants(test)
    )


def _last_name(node: cst.BaseExpression) -> str:
    """``device`` of ``device``, ``self.device``, ``args.device``; "" for anything else."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute) and isinstance(node.value, (cst.Name, cst.Attribute)):
        return node.attr.value
    return ""


def _cuda_flag(test: cst.BaseExpression) -> bool:
    """The project's own CUDA flag tested alone (``if is_cuda_available:``, ``if not use_cuda:``,
    ``if args.cuda:``): in a file that tells NPU from CUDA, it means CUDA (issue 31: an allocator call
    under such a test stays a CUDA call). A tensor's ``x.is_cuda`` is not one."""
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test = test.expression
    if isinstance(test, cst.Name):
        return CUDA_WORD.search(test.value) is not None
    if isinstance(test, cst.Attribute) and test.attr.value != "is_cuda":
        return CUDA_WORD.search(test.attr.value) is not None and isinstance(test.value, cst.Name)
    return False


def kept_regions(module: cst.Module, text: bytes) -> tuple[dict[int, str], set[int]]:
    """(id of every node that must stay as it is -> why, the ids of those in tests and collections),
    empty for a file that never names NPU. ``text`` is the whole source (folded statements too)."""
    finder = kept_finder(text)
    if finder is not None:
        walk(module, [finder])
    return kept_result(finder, module)


def kept_finder(text: bytes, project_npu: bool = False) -> _Finder | None:
    """The visitor of kept_regions, for a walk shared with other analyses (None: nothing to find).
    ``project_npu``: the project already runs on NPU (project/npu_support.py): its device helpers
    tell NPU from CUDA for every file, so a "cuda" test means CUDA in each of them."""
    if NPU_WORD_BYTES.search(text) is None:  # ("inputs" is no NPU word)
        return _Finder(False, True) if project_npu and b"cuda" in text else None
    return _Finder(NPU_TEST_BYTES.search(text) is not None, project_npu)


def kept_result(finder: _Finder | None, module: cst.Module) -> tuple[dict[int, str], set[int]]:
    """kept_regions' result once ``finder`` has walked ``module``."""
    if finder is None:
        return {}, set()
    if finder.aware or finder.project:
        why = TEST if finder.aware else PROJECT_TEST
        for node, quiet in finder._tests:
            if finder.aware or id(node) not in finder._weak:  # (a project's own: only tests of a device)
                finder._keep(node, why, quiet=quiet)
        for default, name in finder._defaults:
            if name in finder._tested:  # the test of the value stays: so does its default (one decision)
                finder._keep(default, DEFAULT)
    return finder.marked(module)
