"""Is the object of ``x.mode()`` a tensor? Evidence for the unsupported-method rules matched by name.

An UnsupportedRule on a method (``torch.Tensor.mode``, ``torch.nn.Module.share_memory``) matches a
call by the method's name alone, and ``posterior.mode()`` on a distribution object is no tensor.
So the row says what it is: with evidence that the receiver is an object of the rule's class it is
the rule's finding (a warning); without, a note that says it is a guess.

Evidence, read from the file alone (no types are inferred):

* for a tensor: a call of a torch function (``torch.randn(...)``, ``torch.nn.functional.relu(...)``),
  of a method only tensors have (``x.detach()``, ``.contiguous()``, ``.view(...)``, and the device
  and dtype casts ``.float()``, ``.cuda()``, ``.to(...)``), an index or arithmetic of a tensor, a
  parameter annotated ``torch.Tensor``, a variable assigned only tensors in the file, the result
  of a tensor method on a tensor (``logits.argmax(-1)``, not ``.size()`` or ``.tolist()``);
* for a module: a call of a ``torch.nn`` class (``nn.Linear(4, 2)``), or a variable assigned one.

Owns the visitors of parameters it needs (``visit_FunctionDef_params``, ``leave_FunctionDef_body``);
assignments are read off the file's text, so that a conversion through the skeleton and one of the
whole source agree; calls.py asks ``_method_finding``.
"""

from __future__ import annotations

import re

import libcst as cst

from ..rules import Rule
from .state import State

TENSOR = "torch.Tensor"
MODULE = "torch.nn.Module"
# methods whose result is a tensor whatever they are called on (modules and arrays have no .mode())
TENSOR_METHODS = frozenset(
    {
        "detach",
        "contiguous",
        "view",
        "view_as",
        "clone",
        "unsqueeze",
        "permute",
        "type_as",
        "masked_fill",
        "new_zeros",
        "new_ones",
        "new_empty",
        "float",
        "half",
        "bfloat16",
        "double",
        "long",
        "int",
        "bool",
        "cuda",
        "npu",
        "cpu",
        "xpu",
        "to",
    }
)
CASTS = frozenset({"float", "half", "bfloat16", "double", "cuda", "npu", "cpu", "xpu", "to"})  # modules have them too
# tensor methods whose result is no tensor
NOT_TENSOR_METHODS = frozenset(
    {
        "size",
        "tolist",
        "item",
        "numel",
        "dim",
        "element_size",
        "data_ptr",
        "stride",
        "is_contiguous",
        "numpy",
        "storage",
        "untyped_storage",
        "type",
        "get_device",
        "nelement",
        "ndimension",
        "chunk",
        "split",
        "unbind",
        "register_hook",
        "backward",
    }
)
# torch namespaces whose functions return tensors, and torch functions that do not
TENSOR_NAMESPACES = ("torch.nn.functional.", "torch.linalg.", "torch.fft.", "torch.special.")
NOT_TENSORS = frozenset(
    {
        "load",
        "device",
        "no_grad",
        "enable_grad",
        "inference_mode",
        "compile",
        "manual_seed",
        "get_default_dtype",
        "set_default_dtype",
        "is_tensor",
        "numel",
        "is_grad_enabled",
        "set_grad_enabled",
        "dtype",
        "finfo",
        "iinfo",
        "save",
        "autocast",
        "get_rng_state",
        "initial_seed",
        "seed",
        "typename",
        "is_floating_point",
        "is_complex",
    }
)


class ReceiverHandlers(State):
    """What the receiver of a method matched by name is known to be."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.known_objects: list[dict[str, str]] = [{}]  # per function: variable -> TENSOR or MODULE

    # ---- what variables hold

    def visit_FunctionDef_params(self, node: cst.FunctionDef) -> None:
        scope: dict[str, str] = {}
        for param in [*node.params.posonly_params, *node.params.params, *node.params.kwonly_params]:
            if param.annotation is not None and (kind := self._annotated(param.annotation.annotation)) is not None:
                scope[param.name.value] = kind
        self.known_objects.append(scope)

    def leave_FunctionDef_body(self, node: cst.FunctionDef) -> None:
        self.known_objects.pop()

    def _annotated(self, annotation: cst.BaseExpression) -> str | None:
        if isinstance(annotation, cst.SimpleString):
            text = annotation.value.strip("'\"")
            return TENSOR if text in ("torch.Tensor", "Tensor") else None
        qualified = self.resolve_name(annotation)
        return qualified if qualified in (TENSOR, MODULE) else None

    def _kind_of(self, expr: cst.BaseExpression) -> str | None:
        """TENSOR or MODULE when ``expr`` evidently is one (see the module docstring), else None."""
        if isinstance(expr, cst.Name):
            scope = self.known_objects[-1]
            return scope[expr.value] if expr.value in scope else self._assigned_kind(expr.value)
        if isinstance(expr, cst.Subscript):
            return TENSOR if self._kind_of(expr.value) == TENSOR else None
        if isinstance(expr, cst.BinaryOperation):
            return TENSOR if TENSOR in (self._kind_of(expr.left), self._kind_of(expr.right)) else None
        if isinstance(expr, cst.Attribute) and expr.attr.value in ("data", "grad", "T", "mT"):
            return TENSOR if self._kind_of(expr.value) == TENSOR else None
        if not isinstance(expr, cst.Call):
            return None
        func = expr.func
        qualified = self.resolve_name(func)
        if qualified is not None:
            parts = qualified.split(".")
            if (
                qualified.startswith("torch.nn.")
                and parts[-1][:1].isupper()
                and not qualified.startswith("torch.nn.functional.")
            ):
                return MODULE
            if (
                len(parts) == 2 and parts[0] == "torch" and parts[1][:1].islower() and parts[1] not in NOT_TENSORS
            ) or qualified.startswith(TENSOR_NAMESPACES):
                return TENSOR
            return None
        if isinstance(func, cst.Attribute) and func.attr.value in TENSOR_METHODS:
            if func.attr.value in CASTS:  # x.float(), x.to(device): a module when x is one
                return MODULE if self._kind_of(func.value) == MODULE else TENSOR
            return TENSOR
        if isinstance(func, cst.Attribute) and func.attr.value not in NOT_TENSOR_METHODS:
            return TENSOR if self._kind_of(func.value) == TENSOR else None  # logits.argmax(dim=-1)
        return None

    def _assigned_kind(self, name: str) -> str | None:
        """What ``name`` holds by its assignments (``probs = F.softmax(...)``) anywhere in the file,
        read off its text (the skeleton folds most such lines away, so the traversal does not see
        them): the kind all of them agree on, if any. A name is a name for the whole file here, as
        in flow.py."""
        cache = self.__dict__.setdefault("_assigned_kinds", {})
        if name in cache:
            return cache[name]
        cache[name] = None  # (an assignment from itself is no evidence)
        if "_file_text" not in self.__dict__:
            self.__dict__["_file_text"] = b"\n".join([self.module.bytes, *self.folds])
        kinds: set[str | None] = set()
        pattern = re.compile(
            rb"^[ \t]*" + re.escape(name.encode()) + rb"[ \t]*(?::[^=\n]*)?=(?!=)[ \t]*([^\n#]+)", re.MULTILINE
        )
        for m in pattern.finditer(self.__dict__["_file_text"]):
            try:
                value = cst.parse_expression(m.group(1).decode("utf-8").strip().rstrip("\\"))
            except (cst.ParserSyntaxError, UnicodeDecodeError, RecursionError):
                kinds.add(None)
                continue
            kinds.add(self._kind_of(value))
        cache[name] = kind = kinds.pop() if len(kinds) == 1 else None
        return kind

    # ---- the finding (calls.py)

    def _method_finding(self, func: cst.Attribute, rule: Rule, qualified: str | None) -> None:
        """The row for ``<receiver>.NAME(...)`` matched by the unsupported-method ``rule``."""
        if qualified == rule["name"]:  # torch.Tensor.unique_consecutive(x): the class's own function
            self._member_finding(func.attr, rule, "")
            return
        owner = rule["name"].rsplit(".", 1)[0]
        if owner in (TENSOR, MODULE) and self._kind_of(func.value) == owner:
            self._finding(func.attr, rule["name"], rule)
            return
        message = rule.get("message", "not supported on NPU")
        self.record(
            func.attr,
            "note",
            f"{rule['name']}: {message} -- a guess: matched by the name .{func.attr.value}() "
            f"only, and nothing here shows the object is a {owner.rsplit('.', 1)[-1]}",
            rule,
            api=rule["name"],
            level="note",
        )
