"""What one conversion works with: the rules, the project's facts and the run's switches.

A Session is built once by the mode that converts (repository mode, the file modes, stdin, the
language server) and handed to every file's conversion, to the format modules' pre-checks and
converters (transplant.filekinds), and to worker processes. It is immutable: a worker gets the
parent's session as it was when the pool started.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .project import NO_FACTS, ProjectFacts
from .rules import RuleSet


@dataclass(frozen=True)
class Session:
    rules: RuleSet
    facts: ProjectFacts = NO_FACTS  # the project-wide first pass (transplant.project.gather)
    prefilter: bool = True  # skip a file whose bytes hold none of the rules' trigger words
    debug: bool = False  # let an internal error end the run with its traceback

    def with_facts(self, facts: ProjectFacts) -> Session:
        return replace(self, facts=facts)
