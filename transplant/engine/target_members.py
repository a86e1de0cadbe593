"""Members of a renamed class or enum that its target does not have.

``torch.profiler.ProfilerActivity`` is renamed to ``torch_npu.profiler.ProfilerActivity``, but
torch_npu's enum has only ``CPU`` and ``NPU``: ``ProfilerActivity.XPU`` (or ``.HPU``, ``.MTIA``) there
raises AttributeError when the module is imported. A rule that renames a class or an enum may
list the members its target has (``members``, with the ``source`` of that fact); a member it
does not list keeps its old owner:

* ``torch.profiler.ProfilerActivity.XPU`` spelled through ``torch`` is left as it is;
* ``ProfilerActivity.XPU`` whose ``from torch.profiler import ProfilerActivity`` is rewritten to
  torch_npu is spelled ``torch.profiler.ProfilerActivity.XPU`` (and ``import torch`` added if needed).

A member with its own rule (``ProfilerActivity.CUDA`` -> ``...NPU``) is matched before this is asked.
references.py calls ``_absent_member`` when its rename rule lists members.
"""

from __future__ import annotations

import libcst as cst

from ..rules import Rule
from .cst_util import make_dotted
from .state import State


class TargetMemberHandlers(State):
    """References to members that a renamed class's target lacks."""

    def _absent_member(
        self, nodes: list[cst.BaseExpression], root: str, q_parts: list[str], k: int, base_len: int, rule: Rule
    ) -> bool:
        """Handle ``q_parts[:k]`` renamed by ``rule`` followed by member ``q_parts[k]``: True when the
        target lacks that member (the reference then keeps its old owner), False to rename as usual."""
        members = rule.get("members")
        if members is None or k >= len(q_parts) or q_parts[k] in members:
            return False
        old_owner = ".".join(q_parts[:k])
        rewritten = self.b.rewritten.get(root)
        if rewritten is None or rewritten == self.b.original.get(root):
            self.uses[root] = self.uses.get(root, 0) + 1  # torch.profiler.ProfilerActivity.XPU: stays
            return True
        # the import that binds the root now binds the target: spell the member through its old owner
        node = nodes[k - base_len + 1]
        old = f"{old_owner}.{q_parts[k]}"
        if self.record(
            node,
            "rename",
            f"{self._code(node)} -> {old} ({rule['new_name']} has no {q_parts[k]}: kept on {old_owner})",
            rule,
            api=old,
            new=old,
            needs_npu=False,
        ):
            self.replacements[id(node)] = make_dotted(old)
            self.touched.add(root)
            self._need_root(old)
        return True
