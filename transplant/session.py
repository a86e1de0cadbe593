"""What one conversion works with: the rules, the project's facts and the run's switches.

A Session is built once by the mode that converts (repository mode, the file modes, stdin, the
language server, each from its own RuleOptions with ``load_rules``) and handed to every file's
conversion (filetypes.convert_in), to the format modules' pre-checks and converters
(transplant.filekinds), and to worker processes (pool.py). It is immutable: a worker gets the
parent's session as it was when the pool started. There is no process-wide rule set or fact table.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .config import RuleOptions
from .project import NO_FACTS, ProjectFacts
from .rules import RuleSet, load_ruleset


@dataclass(frozen=True)
class Session:
    rules: RuleSet
    facts: ProjectFacts = NO_FACTS  # the project-wide first pass (transplant.project.gather)
    prefilter: bool = True  # skip a file whose bytes hold none of the rules' trigger words
    debug: bool = False  # let an internal error end the run with its traceback
    slow_note: float | None = None  # seconds after which a file still converting is noted (slowfiles.py)

    def unfiltered(self) -> Session:
        """This session without the pre-filter (for a file that passed it already)."""
        return replace(self, prefilter=False) if self.prefilter else self


def load_rules(options: RuleOptions) -> RuleSet:
    """The RuleSet of ``options`` (the built-in rules and the user's), read from the rule files now;
    raises RuleError for a bad user rule file."""
    return load_ruleset(
        options.user_rules,
        specify_device=options.specify_device,
        similar=options.similar,
        pytorch_version=options.pytorch_version,
        torch_npu=options.torch_npu,
        mode=options.mode,
    )
