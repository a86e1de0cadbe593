"""What the project's own modules reach: a guard's reach across files (issue 31, mechanism 1).

``if x.is_cuda: from .triton_kernels import f``, ``fp8_linear(x)`` imported from a module that calls
``torch._scaled_mm``, ``plugin.get().op(x)`` where plugin.py builds ``.cu`` sources: the branch names a
function or class of another module of the project, and what that one reaches (reach.py, followed
into further modules the same way) is what the branch reaches. An import inside the branch also runs
the imported module's top-level imports and builds.

:class:`ProjectReach` keeps one :class:`~transplant.guards.reach.Reach` per module of the project
(project/modules.py finds and parses the files), built when a guard first names the module and kept
for the process: each module is analysed at most once per depth (``MAX_DEPTH``, 2) per run and
worker, each of its functions followed once (Reach's memo), import cycles end (a function being
followed reaches nothing more through itself). Decides nothing about rewriting.
"""

from __future__ import annotations

import ast
from ..project import ProjectFacts
from ..project.modules import Found, ModuleIndex
from ..project.pynames import bindings, index
from ..rules import RuleSet

from .markers import marks
from .probes import probes
from .reach import Reach, Reason

REACHES = ", which reaches "
MAX_HOPS = 8  # re-exports followed from one name (a cycle of re-exports ends here)
# modules followed from the file converted: the guard's own file calls into A, A into B ("two imports
# away"); what B calls in further modules is not followed. Deeper chains in a large framework reach
# every kernel it has (a trainer class reaches all of them), which says nothing about this branch.
MAX_DEPTH = 2


class ProjectReach:
    """The modules of one project as guards see them (one per rules and facts, per process)."""

    def __init__(self, rules: RuleSet, facts: ProjectFacts) -> None:
        self.rules = rules
        self.facts = facts
        self.index = ModuleIndex(facts.root)
        self._reach: dict[tuple[str, int], tuple[tuple[int, int], Reach]] = {}
        self._may: dict[tuple[str, int], bool] = {}

    def reach_of(self, path: str, depth: int) -> Reach | None:
        """The Reach of the module at ``path`` seen ``depth`` modules away from the file converted
        (built once per depth; again when the file changed). At ``MAX_DEPTH`` it follows no further."""
        parsed = self.index.parsed(path)
        if parsed is None:
            return None
        key = (path, depth)
        known = self._reach.get(key)
        if known is not None and known[0] == parsed.stamp:
            return known[1]
        tree = parsed.tree
        names = bindings(tree)
        nodes, parents = index(tree)
        reach = Reach(
            tree,
            names,
            self.rules,
            self.facts,
            _capability_uses(parsed.data, tree, names, nodes, parents, self.rules.pytorch_version),
            nodes,
            builds=b"cpp_extension" in parsed.data,
            origin=path,
            project=self if depth < MAX_DEPTH else None,
            depth=depth,
        )
        self._reach[key] = (parsed.stamp, reach)
        return reach

    def may_reach(self, path: str, depth: int) -> bool:
        """Can the module at ``path``, ``depth`` modules away, reach CUDA-only code? Its words say so
        (markers.py), or, short of ``MAX_DEPTH``, those of a project module it imports: most modules of
        a project are neither, and are never parsed."""
        key = (path, depth)
        known = self._may.get(key)
        if known is not None:
            return known
        self._may[key] = False  # (an import cycle back here adds nothing)
        source = self.index.source(path)
        found = source is not None and (
            marks(source[0], self.rules, self.facts)
            or depth < MAX_DEPTH
            and any(self.may_reach(other, depth + 1) for other in self.index.imports(source[0], path))
        )
        self._may[key] = found
        return found

    def may_be_reached(self, source: bytes, importer: str) -> bool:
        """Does the file ``importer`` (its ``source``) import a module of the project that may reach
        CUDA-only code? (bytes only: the file is parsed for guards only then)"""
        return self.index.may_import(source, importer) and any(
            self.may_reach(path, 1) for path in self.index.imports(source, importer)
        )

    def reason(self, importer: str, qualified: str, *, imported: bool, depth: int, hops: int = 0) -> Reason | None:
        """The first CUDA-only code that the project's name ``qualified``, named in the file
        ``importer`` (itself ``depth`` modules away from the file converted), reaches, said from the
        importer's side; ``imported``: the name is imported there, so the module's top level runs
        too. A name a package only re-exports is followed to where it is defined (``MAX_HOPS`` at most)."""
        if hops > MAX_HOPS:
            return None
        found = self.index.resolve(importer, qualified)
        if found is None:
            return None
        if not self.may_reach(found.path, depth + 1):
            return None
        reach = self.reach_of(found.path, depth + 1)
        if reach is None:
            return None
        reasons: list[Reason] = []
        if found.rest:
            target = reach.defs.get(found.rest[0])
            if target is not None and len(found.rest) > 1 and isinstance(target, ast.ClassDef):
                target = _member(target, found.rest[1]) or target
            if found.rest[0] in reach.triton and target is not None:
                return _said(found, reach.kernel_reason(found.rest[0]))
            if target is not None:
                reasons += reach.of_def(target)
            elif found.rest[0] in reach.names:  # from .fp8 import linear, in a package's __init__.py
                further = ".".join([reach.names[found.rest[0]], *found.rest[1:]])
                again = self.reason(found.path, further, imported=False, depth=depth, hops=hops + 1)
                reasons += [again] if again is not None else []
        if imported:  # an import in the branch runs the module's top level there
            reasons += reach.top_level()
        return _said(found, reasons[0]) if reasons else None


def _capability_uses(
    data: bytes,
    tree: ast.Module,
    names: dict[str, str],
    nodes: list[ast.AST],
    parents: dict[int, ast.AST],
    pytorch_version: str,
) -> dict[int, Reason]:
    """The CUDA capability queries of a module that it reads as numbers (probes.py): they stay CUDA
    queries in that module's own conversion, so a test elsewhere that calls the function holding one
    (``torch.cuda.is_available() and not check_fp8_capability()``) chooses CUDA-only code."""
    if b"get_device_capability" not in data and b"get_device_properties" not in data:
        return {}
    return probes(tree, names, nodes, parents, pytorch_version)[1]


def _member(klass: ast.ClassDef, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None:
    """A method or nested class of ``klass`` (``Scaled.run``, ``Block.Config``)."""
    return next(
        (
            s
            for s in klass.body
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and s.name == name
        ),
        None,
    )


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
