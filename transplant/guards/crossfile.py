"""What the project's own modules reach: a guard's reach across files (issue 31, mechanism 1).

``if x.is_cuda: from .triton_kernels import f``, ``fp8_linear(x)`` imported from a module that calls
``torch._scaled_mm``, ``plugin.get().op(x)`` where plugin.py builds ``.cu`` sources: the branch names a
function or class of another module of the project, and what that one reaches (reach.py, followed
into further modules the same way) is what the branch reaches. An import inside the branch also runs
the imported module's top-level imports and builds.

:class:`ProjectReach` keeps one :class:`~transplant.guards.reach.Reach` per module of the project
(project/modules.py finds and parses the files), built when a guard first names the module and kept
for the process: each module is analysed at most once per run and worker, each of its functions
followed once (Reach's memo), import cycles end (a function being followed reaches nothing more
through itself). Decides nothing about rewriting.
"""

from __future__ import annotations

import ast
from ..project import ProjectFacts
from ..project.modules import Found, ModuleIndex
from ..project.pynames import bindings
from ..rules import RuleSet

from .reach import Reach, Reason

REACHES = ", which reaches "
MAX_HOPS = 8  # re-exports followed from one name (a cycle of re-exports ends here)


class ProjectReach:
    """The modules of one project as guards see them (one per rules and facts, per process)."""

    def __init__(self, rules: RuleSet, facts: ProjectFacts) -> None:
        self.rules = rules
        self.facts = facts
        self.index = ModuleIndex(facts.root)
        self._reach: dict[str, tuple[tuple[int, int], Reach | None]] = {}

    def reach_of(self, path: str) -> Reach | None:
        """The Reach of the module at ``path`` (built once; again when the file changed)."""
        parsed = self.index.parsed(path)
        if parsed is None:
            return None
        known = self._reach.get(path)
        if known is not None and known[0] == parsed.stamp:
            return known[1]
        tree = parsed.tree
        nodes = list(ast.walk(tree))
        reach = Reach(
            tree,
            bindings(tree),
            self.rules,
            self.facts,
            {},
            nodes,
            builds=b"cpp_extension" in parsed.data,
            origin=path,
            project=self,
        )
        self._reach[path] = (parsed.stamp, reach)
        return reach

    def reason(self, importer: str, qualified: str, *, imported: bool, depth: int = 0) -> Reason | None:
        """The first CUDA-only code that the project's name ``qualified`` (seen from the file
        ``importer``) reaches, said from the importer's side; ``imported``: the name is imported
        here, so the module's top level runs too. A name a module only re-exports is followed to
        where it is defined (``MAX_HOPS`` re-exports at most)."""
        if depth > MAX_HOPS:
            return None
        found = self.index.resolve(importer, qualified)
        if found is None:
            return None
        reach = self.reach_of(found.path)
        if reach is None:
            return None
        reasons: list[Reason] = []
        if found.rest:
            target = reach.defs.get(found.rest[0])
            if target is not None and len(found.rest) > 1 and isinstance(target, ast.ClassDef):
                method = reach.methods.get(target.name, {}).get(found.rest[1])
                target = method if method is not None else target
            if found.rest[0] in reach.triton and target is not None:
                return _said(found, reach.kernel_reason(found.rest[0]))
            if target is not None:
                reasons += reach.of_def(target)
            elif found.rest[0] in reach.names:  # from .fp8 import linear, in a package's __init__.py
                further = ".".join([reach.names[found.rest[0]], *found.rest[1:]])
                again = self.reason(found.path, further, imported=False, depth=depth + 1)
                reasons += [again] if again is not None else []
        if imported:  # an import in the branch runs the module's top level there
            reasons += reach.top_level()
        return _said(found, reasons[0]) if reasons else None


def _said(found: Found, reason: Reason) -> Reason:
    """``reason`` (found in the module ``found``) as the importing file says it: what it names there,
    the module, and the CUDA-only code at the end of the chain with its place."""
    name = ".".join(found.rest) or found.rel.rsplit("/", 1)[-1].removesuffix(".py")
    inner = reason.what.rsplit(REACHES, 1)[-1]
    where = reason.where
    if where.startswith("line "):
        where = f"{found.rel}:{where[5:]}"
    return Reason(reason.kind, f"{name} ({found.rel}){REACHES}{inner}", where, reason.route)


_CURRENT: list[ProjectReach] = []  # the one of this process's current rules and facts


def project_reach(rules: RuleSet, facts: ProjectFacts) -> ProjectReach:
    """The ProjectReach of ``rules`` and ``facts``, kept while they are the process's (a worker's
    session does not change; the language server's does when settings change)."""
    if _CURRENT and _CURRENT[0].rules is rules and _CURRENT[0].facts is facts:
        return _CURRENT[0]
    _CURRENT[:] = [ProjectReach(rules, facts)]
    return _CURRENT[0]


__all__ = ["ProjectReach", "project_reach"]
