"""Assignments to ``torch.cuda`` (and to CUDA members of torch's classes): patches, never uses.

``torch.cuda.synchronize = torch.xpu.synchronize``, ``torch.Tensor.is_cuda = torch.Tensor.is_xpu``,
``setattr(torch.cuda, name, ...)``, ``del torch.cuda.foo``: the attribute on the left is being
*replaced*, not called. Renaming it (``torch_npu.npu.synchronize = ...``) would overwrite torch_npu's
own function and destroy the route the code was written for, so a target is never rewritten and
adds no ``import torch_npu``.

Two cases:

* A module that redirects ``torch.cuda`` to another backend (a value of such an assignment names
  one: ``torch.xpu``, ``is_xpu``, ``ipex``, ``torch.npu``...) is that backend's compatibility layer.
  It is left as it is, whole, with one note saying so (driver.py asks ``shim_note``).
* Elsewhere (a test that fakes ``torch.cuda.is_available``) the target is kept and gets a note:
  the converted code calls the torch_npu counterpart, which the assignment does not replace.

Owns ``visit_Call`` (the builtins ``setattr``/``delattr`` on such an object) and the target
visitors of assignments and ``del``; references.py skips the targets (``owned``).
"""

from __future__ import annotations

import re

import libcst as cst

from .cst_util import dotted_parts, string_value
from . import namespace
from .state import Pending, State
from ..records import CODES, Record

# classes whose CUDA members other backends' layers replace (torch.Tensor.is_cuda, Module.cuda)
PATCHED_CLASSES = ("torch.Tensor", "torch.nn.Module", "torch.TypedStorage", "torch.UntypedStorage")
# a word of another backend, in a value assigned to torch.cuda (torch.xpu.synchronize, is_xpu,
# ipex.xpu, torch_musa, habana_frameworks, torch.npu): that value redirects torch.cuda there
OTHER_BACKEND = re.compile(
    r"(?:^|[._])(?:xpu|hpu|mps|musa|mlu|npu|ipex|habana|xla|gcu|sdaa|dml|directml|"
    r"intel_extension_for_pytorch|habana_frameworks|torch_npu)(?:$|[._\d])"
)


class RedirectHandlers(State):
    """Assignment targets in torch.cuda and in torch's classes: kept, noted, or the whole module left."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # (anchor, qualified target, value, what is done to it)
        self.redirects: list[tuple[cst.CSTNode, str, cst.BaseExpression | None, str]] = []

    def _redirect_target(
        self,
        target: cst.BaseExpression,
        value: cst.BaseExpression | None,
        anchor: cst.CSTNode | None = None,
        member: str | None = None,
        verb: str = "assigned",
    ) -> None:
        """Keep ``target`` (an expression being assigned or deleted; ``member`` is the attribute a
        ``setattr`` names) when it is a torch.cuda name or a CUDA member of torch's classes."""
        for node in _targets(target):
            parts = dotted_parts(node)
            qualified = self.qualified(parts) if parts is not None and (len(parts) > 1 or member) else None
            if qualified is not None and member is not None:
                qualified = f"{qualified}.{member}"
            if qualified is None or parts is None or not _patched(qualified):
                continue
            self.owned.add(id(node))
            self.uses[parts[0]] = self.uses.get(parts[0], 0) + 1
            self.redirects.append((anchor if anchor is not None else node, qualified, value, verb))

    def visit_Assign_targets(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._redirect_target(target.target, node.value)

    def visit_AnnAssign_target(self, node: cst.AnnAssign) -> None:
        self._redirect_target(node.target, node.value)

    def visit_AugAssign_target(self, node: cst.AugAssign) -> None:
        self._redirect_target(node.target, node.value)

    def visit_Del_target(self, node: cst.Del) -> None:
        self._redirect_target(node.target, None, verb="deleted")

    def visit_Call(self, node: cst.Call) -> None:
        self.index_call(node)  # integer device indices (device_index.py)
        self.device_module_default(node)  # getattr(torch, device_type, torch.cuda) (values.py)
        func = node.func
        if (
            isinstance(func, cst.Name)
            and func.value in ("setattr", "delattr")
            and node.args
            and not any(func.value in scope for scope in self.shadow)
        ):
            # setattr(torch.cuda, name, getattr(torch.xpu, name)): every other argument is the value
            member = string_value(node.args[1].value) if len(node.args) > 1 else None
            self._redirect_target(
                node.args[0].value,
                cst.Tuple([cst.Element(a.value) for a in node.args[1:]]),
                node,
                member if member is not None and member.isidentifier() else None,
                "assigned" if func.value == "setattr" else "deleted",
            )

    # ---- after the traversal (driver.py)

    def redirect_notes(self) -> list[Pending]:
        """The note on each kept target, when the module is not another backend's layer."""
        out = []
        for anchor, qualified, _value, verb in self.redirects:
            found = self.rules.new_name(qualified)
            member = qualified.rsplit(".", 1)[-1]
            renamed = self.rules.rename_attribute.get(member) or self.rules.rename_method.get(member)
            if found is not None and found[0] != qualified:
                after = f"; the converted code calls {found[0]}, which this does not replace"
            elif namespace.in_namespace(qualified):
                after = f"; on NPU the code runs through {namespace.COUNTERPART}, which this does not replace"
            elif renamed is not None:
                after = (
                    f"; the converted code uses .{renamed['new_name'].rsplit('.', 1)[-1]}, which this does not replace"
                )
            else:
                after = ""
            out.append(
                Pending(
                    anchor,
                    Record(
                        0,
                        0,
                        0,
                        0,
                        CODES["note"],
                        "note",
                        "",
                        f"{qualified} is {verb} here (a patch, not a use): kept as it is{after}",
                        "builtin",
                        api=qualified,
                    ),
                )
            )
        return out

    def _function_names_backend(self, name: str) -> bool:
        """Does the module's function ``name`` (``torch.cuda.synchronize = torch_cuda_synchronize``)
        name another backend? Found among the module's statements, or in the text the skeleton folded."""
        functions = [stmt for stmt in self.module.body if isinstance(stmt, cst.FunctionDef) and stmt.name.value == name]
        if any(_names_backend(f) for f in functions):
            return True
        header = re.compile(rb"^[ \t]*(?:async[ \t]+)?def[ \t]+" + re.escape(name.encode()) + rb"\b", re.MULTILINE)
        return any(header.search(fold) and OTHER_BACKEND.search(fold.decode("utf-8", "replace")) for fold in self.folds)

    def shim_note(self) -> Pending | None:
        """One note for the whole module when it redirects torch.cuda to another backend."""
        redirects = self.redirects
        if not redirects:
            return None
        if not any(
            _names_backend(value) or (isinstance(value, cst.Name) and self._function_names_backend(value.value))
            for _anchor, _q, value, _verb in redirects
        ):
            return None
        anchor = redirects[0][0]
        count = len(redirects)
        return Pending(
            anchor,
            Record(
                0,
                0,
                0,
                0,
                CODES["note"],
                "note",
                "",
                f"another backend's compatibility layer: this module replaces "
                f"{count} CUDA attribute{'s' if count != 1 else ''} of torch (first {redirects[0][1]}) with that "
                f"backend's; left as it is (converting it would overwrite torch_npu's own functions)",
                "builtin",
                api="torch.cuda",
            ),
        )


def _targets(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for element in target.elements for n in _targets(element.value)]
    if isinstance(target, cst.StarredElement):
        return _targets(target.value)
    return [target]


def _patched(qualified: str) -> bool:
    """Is ``qualified`` in torch.cuda, or a CUDA member (``is_cuda``, ``cuda``) of one of torch's
    classes other backends patch? (A member of another name, ``torch.Tensor.npu``, is no CUDA name:
    like every statement without one, the skeleton folds it away.)"""
    if namespace.in_namespace(qualified):
        return True
    owner, member = qualified.rsplit(".", 1)
    return owner in PATCHED_CLASSES and "cuda" in member


def _names_backend(value: cst.CSTNode | None) -> bool:
    """Does ``value`` name another backend (an identifier or a string in it)?"""
    if value is None:
        return False
    found = False

    class Scan(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            nonlocal found
            found = found or OTHER_BACKEND.search(node.value) is not None

        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            nonlocal found
            found = found or OTHER_BACKEND.search(node.value.strip("'\"")) is not None

    value.visit(Scan())
    return found
