"""A generic constraint solver on python-sat, with minimal explanations and exact optimisation.

Callers build :class:`~resolver.sat.constraints.Variable` lists (see :mod:`resolver.rules` and
the conformance runner) and ask :class:`~resolver.sat.engine.Engine` for a model, an optimum or
a minimal unsatisfiable subset of the constraints.
"""

from resolver.sat.constraints import (
    AppliedConstraint,
    AtMost,
    ConflictsWith,
    Constraint,
    Dependency,
    Mandatory,
    Or,
    Prohibited,
    Variable,
)
from resolver.sat.engine import Engine, NotSatisfiable, Objective, ProblemError

__all__ = [
    "AppliedConstraint",
    "AtMost",
    "ConflictsWith",
    "Constraint",
    "Dependency",
    "Engine",
    "Mandatory",
    "NotSatisfiable",
    "Objective",
    "Or",
    "ProblemError",
    "Prohibited",
    "Variable",
]
