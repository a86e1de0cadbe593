"""What one traversal of a file keeps: the rule set, the bindings, and the records it makes.

Owns ``State``, the base of every handler class (scopes, references, calls, values, imports):
the shared fields, ``record`` (which also decides, in one place, whether a change needs
``import torch_npu``), and the cache of parsed rule expressions. It matches nothing itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import libcst as cst

from .. import runtime_mode
from ..records import CODES, OPERATION, Record
from ..rules import Rule, RuleSet
from . import namespace
from .bindings import Bindings
from .dispatch import Dispatch
from .flow import NO_FLOW, Flow
from .multi_backend import HELPER, NO_NPU_ARM, PASS_DEVICE


_C = TypeVar("_C", cst.List, cst.Tuple, cst.Set)


@dataclass
class Pending:
    """A record whose position (and ``old`` text) is filled in from ``anchor`` at the end."""

    anchor: cst.CSTNode
    record: Record

    @property
    def level(self) -> str:
        return self.record.level


class State(Dispatch):
    """The fields and the record keeping shared by the handlers of one traversal."""

    def __init__(
        self, module: cst.Module, rules: RuleSet, bindings: Bindings, excluded: set[int], flow: Flow = NO_FLOW
    ) -> None:
        super().__init__()
        self.module = module
        self.rules = rules
        self.b = bindings
        self.excluded = excluded
        self.flow = flow  # names that carry devices or backends to torch (flow.py)
        self.pending: list[Pending] = []
        self.replacements: dict[int, cst.BaseExpression] = {}
        self.skip_names: set[int] = set()
        self.in_chain: set[int] = set()
        self.shadow: list[set[str]] = []
        self.uses: dict[str, int] = {}
        self.touched: set[str] = set()  # import-bound names with a reference rewritten away
        self.needs_npu = False
        self.index_uses: list[cst.Integer] = []  # integer device indices (device_index.py)
        self.needs_imports: set[str] = set()
        self.kept: dict[int, str] = {}  # nodes of code that already handles NPU -> why (npu_aware.py)
        self.kept_quiet: set[int] = set()  # those of them in tests and collections
        self.force_devices: set[int] = set()  # device strings of a collection converted whole (device_sets.py)
        self.passed: dict[tuple[str, str], str] = {}  # (option, value) the project's scripts pass as is -> where
        self.passed_locals: dict[str, str] = {}  # local names assigned an option's value -> the option
        self.env_twins: set[int] = set()  # CUDA variable names beside their NPU twin in a conditional (values.py)
        self.device_modules: dict[int, str] = {}  # torch.cuda as the module of the device at hand -> how (values.py)
        self.accepted_names: set[int] = set()  # collections of accepted device names gaining "npu" (device_names.py)
        self._kept_said: set[int] = set()
        self.fallbacks: dict[int, str] = {}  # callees of calls an older torch falls back to (legacy_calls.py)
        self.neutral_npu = ""  # where the project shows that it runs on NPU, for a file naming neither CUDA nor GPU
        self.npu_uses: list[cst.CSTNode] = []  # anchors of the changes that need torch_npu (placement.py)
        self.dict_keys: set[int] = set()  # dict keys: not device strings even when they look like one
        self.call_args: set[int] = set()  # argument values: their call handles device templates
        self.device_matches: set[int] = set()  # match statements whose subject is a device
        self.folds: list[bytes] = []  # the skeleton's folded statements, by number (driver.py)
        self.stores: set[int] = set()  # names assigned to (a binding, not a use of what they were bound to)
        self.owned: set[int] = set()  # references another handler keeps or converts: references.py skips them
        self._parsed: dict[str, cst.BaseExpression] = {}
        # references to a renamed callable whose target needs keywords (call_keywords.py): node id -> rule
        self.keyword_refs: dict[int, Rule] = {}
        self.callees: set[int] = set()  # the callees of calls and decorators (call_keywords.py)

    if TYPE_CHECKING:
        # Methods of one handler that others call: the Converter has them all. Declared here for
        # the type checker only (at run time the handler's own definition is the one found).
        def qualified(self, parts: list[str]) -> str | None: ...
        def resolve_name(self, node: cst.BaseExpression) -> str | None: ...
        def _spell(self, root: str, new: str) -> str: ...
        def _need_root(self, new: str) -> None: ...
        def _finding(self, anchor: cst.CSTNode, api: str, rule: Rule, *, matched: str = "") -> None: ...
        def _member_finding(self, anchor: cst.CSTNode, rule: Rule, spelled: str) -> None: ...
        def _method_finding(self, func: cst.Attribute, rule: Rule, qualified: str | None) -> None: ...
        def _absent_member(
            self, nodes: list[cst.BaseExpression], root: str, q_parts: list[str], k: int, base_len: int, rule: Rule
        ) -> bool: ...
        def _backend_value(
            self, value: cst.BaseExpression, anchor: cst.BaseExpression
        ) -> cst.BaseExpression | None: ...
        def _named_value(
            self, name: str | None, value: cst.BaseExpression, anchor: cst.BaseExpression, *, variable: bool = False
        ) -> cst.BaseExpression | None: ...
        def _env_finding(self, anchor: cst.CSTNode, name: str, rule: Rule) -> None: ...
        def _template(
            self, original_node: cst.BaseExpression, updated_node: cst.BaseExpression
        ) -> cst.BaseExpression: ...
        def _named_string(self, original: cst.SimpleString, updated: cst.SimpleString) -> cst.SimpleString: ...
        def _device_prefix_test(self, call: cst.Call, args: list[cst.Arg]) -> bool: ...
        def _shell_command(self, call: cst.Call, qualified: str, args: list[cst.Arg]) -> bool: ...
        def _call_keywords(self, call: cst.Call, args: list[cst.Arg]) -> bool: ...
        def _keywords_unknown(self, anchor: cst.CSTNode, rule: Rule) -> None: ...
        def index_call(self, node: cst.Call) -> None: ...
        def device_module_default(self, node: cst.Call) -> None: ...
        def _accepted(self, original_node: cst.CSTNode, updated_node: _C) -> _C: ...

    # ---- records

    def _code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def record(
        self,
        anchor: cst.CSTNode,
        kind: str,
        message: str,
        rule: Rule | None,
        *,
        api: str = "",
        new: str = "",
        level: str = "fix",
        needs_npu: bool | None = None,
        operation: str | None = None,
        suggestion: str = "",
    ) -> bool:
        if id(anchor) in self.excluded:
            return False
        if level == "fix" and id(anchor) in self.kept:
            if not (kind == "device" and id(anchor) in self.kept_quiet):
                self._kept_note(anchor, message, api)
            return False
        if (
            level in ("error", "warning")
            and api.startswith("torch.cuda")
            and self.kept.get(id(anchor), "").startswith(HELPER)
        ):
            level = (
                "note"  # torch.cuda in the CUDA arm of a multi-backend helper: what CUDA hosts run (multi_backend.py)
            )
            message = f"{message}; kept as it is: {self.kept[id(anchor)]}"
        code = CODES[kind]
        operation = OPERATION.get(kind, "") if operation is None else operation
        reason = None
        if level == "fix" and self.rules.mode == runtime_mode.RUNTIME:
            # a change the runtime migration makes by itself is not made (runtime_mode.py)
            reason = runtime_mode.judge(self, anchor, kind, rule, api, new, message)
            if reason is None:
                return False
            needs_npu = "torch_npu" in new  # torch_npu is loaded by PyTorch; a name of it still needs the import
        if level == "fix" and rule is not None and rule.get("message"):
            message = f"{message} ({rule['message']})"  # what the rule's author wants users to know
        if reason is not None:
            message = runtime_mode.with_reason(message, reason)
        if rule is not None and level != "fix" and not suggestion:
            suggestion = rule.get("suggestion", "")
        self.pending.append(
            Pending(
                anchor,
                Record(
                    0,
                    0,
                    0,
                    0,
                    code,
                    level,
                    operation,
                    message,
                    rule.origin if rule is not None else "builtin",
                    api=api,
                    new=new,
                    suggestion=suggestion,
                ),
            )
        )
        if needs_npu is None:
            # Built-in rules target torch_npu; "npu" device strings exist only once torch_npu is
            # imported. A user rule about another library needs no torch_npu.
            needs_npu = kind != "env" and (rule is None or not rule.user or kind == "device" or "torch_npu" in new)
        if level == "fix" and needs_npu:
            self.needs_npu = True
            if kind != "import":  # a rewritten import (from torch_npu... import x) binds what it needs
                self.npu_uses.append(anchor)
        return True

    def _kept_note(self, anchor: cst.CSTNode, message: str, api: str, why: str = "") -> None:
        """A change not made because the code already handles NPU there (npu_aware.py), or for the
        reason ``why``: said once per place, as a note (a warning where the reason asks for a hand
        edit), so that the CUDA code left is not silent."""
        if id(anchor) in self._kept_said:
            return
        self._kept_said.add(id(anchor))
        why = why or self.kept[id(anchor)]
        self.pending.append(
            Pending(
                anchor,
                Record(
                    0,
                    0,
                    0,
                    0,
                    CODES["note"],
                    "warning" if why.endswith((NO_NPU_ARM, PASS_DEVICE)) else "note",
                    "",
                    f"kept as it is ({message}): {why}",
                    "builtin",
                    api=api or "cuda",
                ),
            )
        )

    def _no_counterpart(self, anchor: cst.CSTNode, qualified: str) -> None:
        """The error of a torch.cuda name no rule knows (namespace.py): said, never passed over in silence."""
        self.record(
            anchor,
            "no_counterpart",
            namespace.message(qualified),
            None,
            api=qualified,
            level="error",
            suggestion=namespace.suggestion(qualified),
        )

    def _library_finding(self, anchor: cst.CSTNode, qualified: str, rule: Rule, *, use: bool = True) -> None:
        """A use or an import (``use`` False) of a CUDA-only library (LibraryRule): said once per place,
        with its route (a library the project scan reports, such as Triton once per kernel, is not
        said here; one whose rule says ``"per_use": false``, a kernel language, only at its imports)."""
        if rule.get("reported_by") == "project":
            return
        per_use = rule.get("per_use", True)
        if use and not per_use:
            return
        module = rule["module"]
        what = module if qualified == module else f"{qualified} (from {module})"
        said = (
            "" if per_use else "; its uses in this file are not listed one by one: the file's kernels are what to port"
        )
        self.record(
            anchor,
            "library",
            f"{what}: {rule.get('message', 'CUDA-only library')}{said}",
            rule,
            api=module,
            level=rule.get("level", "warning"),
        )

    def expr(self, text: str) -> cst.BaseExpression:
        node = self._parsed.get(text)
        if node is None:
            node = self._parsed[text] = cst.parse_expression(text)
        return node
