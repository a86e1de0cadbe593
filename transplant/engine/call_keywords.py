"""Renames whose target needs keyword arguments: ``torch.cuda.amp.custom_fwd`` becomes
``torch.amp.custom_fwd(device_type="npu")``.

A FuncNameModifyRule with ``call_keywords`` (name -> Python expression) names a callable whose
new spelling takes those keywords. references.py notes each reference to the old name that names
the callable itself (``keyword_refs``); here a call of it gets the keywords it does not pass
(``custom_fwd(cast_inputs=torch.float32)`` -> ``custom_fwd(cast_inputs=torch.float32,
device_type="npu")``), and a bare decorator becomes a call (``@custom_fwd`` ->
``@custom_fwd(device_type="npu")``: both decorators return the same function, as
``torch.amp.custom_fwd(fwd=None, ...)`` returns the decorator). Any other reference (the name
passed on or stored) cannot take the keywords: it is kept and reported, with what to write.
"""

from __future__ import annotations

import libcst as cst

from ..rules import Rule
from .state import State


class CallKeywordHandlers(State):
    """Keywords added to the calls and bare decorators of renamed callables."""

    # visited before the callee itself, so that references.py knows a callee when it meets one
    def visit_Call_func(self, node: cst.Call) -> None:
        if not any(arg.star == "**" for arg in node.args):  # f(**options): what it passes is unknown
            self.callees.add(id(node.func))

    def visit_Decorator(self, node: cst.Decorator) -> None:
        self.callees.add(id(node.decorator))

    def _call_keywords(self, call: cst.Call, args: list[cst.Arg]) -> bool:
        """Add the keywords of the rule that renamed ``call.func``; True when args changed."""
        rule = self.keyword_refs.pop(id(call.func), None)
        if rule is None:
            return False
        given = {a.keyword.value for a in args if a.keyword is not None}
        missing = [(k, v) for k, v in rule["call_keywords"].items() if k not in given]
        if not missing:
            return False
        added = ", ".join(f"{k}={v}" for k, v in missing)
        if not self.record(call.func, "args", f"pass {added}", rule, api=rule["old_name"], new=added):
            return False
        if args and args[-1].comma is cst.MaybeSentinel.DEFAULT:
            args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        for i, (key, value) in enumerate(missing):
            arg = cst.Arg(self.expr(value), keyword=cst.Name(key), equal=_EQUAL)
            if i < len(missing) - 1:
                arg = arg.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            args.append(arg)
        return True

    def leave_Decorator(self, original_node: cst.Decorator, updated_node: cst.Decorator) -> cst.Decorator:
        rule = self.keyword_refs.pop(id(original_node.decorator), None)
        if rule is None:
            return updated_node
        keywords = rule["call_keywords"]
        added = ", ".join(f"{k}={v}" for k, v in keywords.items())
        if not self.record(original_node.decorator, "args", f"pass {added}", rule, api=rule["old_name"], new=added):
            return updated_node
        args = [
            cst.Arg(
                self.expr(v),
                keyword=cst.Name(k),
                equal=_EQUAL,
                comma=_COMMA if i < len(keywords) - 1 else cst.MaybeSentinel.DEFAULT,
            )
            for i, (k, v) in enumerate(keywords.items())
        ]
        return updated_node.with_changes(decorator=cst.Call(func=updated_node.decorator, args=args))

    def _keywords_unknown(self, anchor: cst.CSTNode, rule: Rule) -> None:
        added = ", ".join(f"{k}={v}" for k, v in rule["call_keywords"].items())
        self.record(
            anchor,
            "unsupported",
            f"kept as it is: its NPU form {rule['new_name']} needs {added}, which only a call can pass",
            rule,
            api=rule["old_name"],
            level="warning",
        )


_EQUAL = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
_COMMA = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
