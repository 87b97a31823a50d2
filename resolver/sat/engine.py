"""The SAT engine: compiles variables and constraints to CNF and answers with models or MUSes.

Every applied constraint gets its own *selector* literal ``s`` and is added as
``(not s) or clause``; solving assumes every selector. When the problem is unsatisfiable, the
solver's core (a set of selectors) is shrunk by deletion to a minimal unsatisfiable subset (MUS):
dropping any one constraint of the explanation makes the rest satisfiable. Neither OLM nor deppy
shrinks cores.

Two ways to pick among the models of a satisfiable problem:

* :meth:`Engine.preference_search` reproduces OLM v0/deppy: a breadth-first walk over the
  dependency candidate lists, taking the first candidate that still admits a solution, then
  minimising the number of extra variables (used by the ``olm-v0``/``deppy``/``olmv1-deppy``
  profiles).
* :meth:`Engine.optimize` minimises an ordered vector of objectives exactly (lexicographic
  optimisation with incremental totalizers; each level is optimal given the levels before it),
  then breaks any remaining tie canonically (used by pivoter's default profile).

Both end with :meth:`Engine.canonical_model`, so the answer depends only on the input order,
never on the solver's internal choices. Called by :mod:`resolver.profiles`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pysat.card import CardEnc, EncType, ITotalizer
from pysat.solvers import Solver

from resolver.sat.constraints import (
    AppliedConstraint,
    AtMost,
    ConflictsWith,
    Dependency,
    Mandatory,
    Or,
    Prohibited,
    Variable,
    order_of,
)

SOLVER_NAME = "glucose4"
"""The pysat backend: incremental, with assumptions and cores."""


class ProblemError(ValueError):
    """The input is malformed (duplicate or unknown identifiers)."""


class NotSatisfiable(Exception):
    """No selection satisfies the constraints; ``constraints`` is a minimal explanation."""

    def __init__(self, constraints: Sequence[AppliedConstraint]) -> None:
        self.constraints: tuple[AppliedConstraint, ...] = tuple(constraints)
        super().__init__(self.message())

    def message(self, separator: str = ", ") -> str:
        """Return OLM's text: ``constraints not satisfiable: A, B``."""
        if not self.constraints:
            return "constraints not satisfiable"
        lead = separator if "\n" in separator else " "
        return (
            "constraints not satisfiable:" + lead + separator.join(str(c) for c in self.constraints)
        )


@dataclass(frozen=True, slots=True)
class Objective:
    """One level of an objective vector: minimise how many of ``literals`` are true.

    ``literals`` are solver literals (negative for "this variable is false"); a literal listed
    twice counts twice, and ranks are expressed with unary literals (:meth:`Engine.rank_literals`).
    """

    name: str
    literals: tuple[int, ...]


class Engine:
    """One compiled problem, kept in an incremental solver for repeated questions."""

    def __init__(self, variables: Sequence[Variable]) -> None:
        self.variables: tuple[Variable, ...] = tuple(variables)
        self._lit: dict[str, int] = {}
        errors: list[str] = []
        for var in self.variables:
            if var.id in self._lit:
                errors.append(f"duplicate identifier {var.id!r} in input")
                continue
            self._lit[var.id] = len(self._lit) + 1
        self.top = len(self._lit)
        self.solver = Solver(name=SOLVER_NAME)
        self.applied: list[AppliedConstraint] = []
        self._selector_of: dict[int, AppliedConstraint] = {}
        self.selectors: list[int] = []
        for var in self.variables:
            for constraint in var.constraints:
                referenced = [*order_of(constraint)]
                if isinstance(constraint, ConflictsWith | Or):
                    referenced.append(constraint.id)
                if isinstance(constraint, AtMost):
                    referenced.extend(constraint.ids)
                missing = [r for r in referenced if r not in self._lit]
                if missing:
                    errors.extend(f"variable {m!r} referenced but not provided" for m in missing)
                    continue
                self._add(var, constraint)
        if errors:
            self.solver.delete()
            if len(errors) == 1:
                raise ProblemError(errors[0])
            raise ProblemError(f"{len(errors)} errors encountered: " + ", ".join(errors))
        self._model: set[int] | None = None

    # ------------------------------------------------------------------ compiling

    def lit(self, variable_id: str) -> int:
        """Return the positive literal of a variable."""
        return self._lit[variable_id]

    def fresh(self) -> int:
        """Return a new auxiliary literal."""
        self.top += 1
        return self.top

    def _add(self, var: Variable, constraint: object) -> None:
        assert isinstance(
            constraint, Mandatory | Prohibited | Dependency | ConflictsWith | AtMost | Or
        )
        applied = AppliedConstraint(var, constraint, len(self.applied))
        sel = self.fresh()
        self.applied.append(applied)
        self.selectors.append(sel)
        self._selector_of[sel] = applied
        s = self._lit[var.id]
        clauses: list[list[int]]
        if isinstance(constraint, Mandatory):
            clauses = [[s]]
        elif isinstance(constraint, Prohibited):
            clauses = [[-s]]
        elif isinstance(constraint, Dependency):
            clauses = [[-s, *(self._lit[i] for i in constraint.ids)]]
        elif isinstance(constraint, ConflictsWith):
            clauses = [[-s, -self._lit[constraint.id]]]
        elif isinstance(constraint, Or):
            a = -s if constraint.negate_subject else s
            b = self._lit[constraint.id] * (-1 if constraint.negate_operand else 1)
            clauses = [[a, b]]
        else:
            lits = sorted({self._lit[i] for i in constraint.ids})
            if constraint.n >= len(lits):
                clauses = []
            elif constraint.n <= 0:
                clauses = [[-x] for x in lits]
            else:
                enc = CardEnc.atmost(
                    lits=lits, bound=constraint.n, top_id=self.top, encoding=EncType.seqcounter
                )
                self.top = max(self.top, enc.nv)
                clauses = [list(c) for c in enc.clauses]
        for clause in clauses:
            self.solver.add_clause([-sel, *clause])

    def add_definition(self, clauses: Iterable[Sequence[int]]) -> None:
        """Add clauses that only define auxiliary literals (never part of an explanation)."""
        for clause in clauses:
            self.solver.add_clause(list(clause))

    def any_literal(self, lits: Sequence[int]) -> int:
        """Return a fresh literal true exactly when one of ``lits`` is (an auxiliary definition)."""
        y = self.fresh()
        for x in lits:
            self.solver.add_clause([-x, y])
        self.solver.add_clause([-y, *lits])
        return y

    def rank_literals(self, groups: Sequence[Sequence[int]]) -> list[int]:
        """Return unary rank literals for groups of literals ordered best first.

        Literal ``j`` (1-based) is true exactly when a literal of group ``j`` or later is true,
        so with at most one literal true overall, the number of true rank literals is the rank
        of the selected group: summing them over packages is a linear cost.
        """
        result: list[int] = []
        later = 0
        for group in reversed(groups[1:]):
            y = self.fresh()
            members = list(group) + ([later] if later else [])
            for x in members:
                self.solver.add_clause([-x, y])
            self.solver.add_clause([-y, *members])
            result.append(y)
            later = y
        return result

    # ------------------------------------------------------------------ solving

    def _solve(self, assumptions: Sequence[int]) -> bool:
        ok = bool(self.solver.solve(assumptions=[*self.selectors, *assumptions]))
        if ok:
            model = self.solver.get_model() or []
            self._model = {x for x in model if x > 0}
        return ok

    def satisfiable(self, assumptions: Sequence[int] = ()) -> bool:
        """Return whether the constraints (plus ``assumptions``) have a solution."""
        return self._solve(assumptions)

    def value(self, literal: int) -> bool:
        """The value of ``literal`` in the last model found."""
        assert self._model is not None
        return (literal in self._model) if literal > 0 else (-literal not in self._model)

    def selected(self) -> list[str]:
        """The variables true in the last model, in input order."""
        assert self._model is not None
        return [v.id for v in self.variables if self._lit[v.id] in self._model]

    def explain(self, assumptions: Sequence[int] = ()) -> list[AppliedConstraint]:
        """Return a minimal unsatisfiable subset of the applied constraints, in input order.

        ``assumptions`` are held fixed (they are not constraints and never appear). Raises
        ValueError if the problem is satisfiable.
        """
        fixed = list(assumptions)
        if self.solver.solve(assumptions=[*self.selectors, *fixed]):
            raise ValueError("explain() called on a satisfiable problem")
        core = set(self.solver.get_core() or []) & set(self._selector_of)
        candidates = sorted(core, key=lambda s: self._selector_of[s].index)
        critical: list[int] = []
        # Deletion-based shrinking with core refinement: try dropping each constraint; when the
        # rest is still unsatisfiable, keep only the (smaller) new core.
        while candidates:
            head, rest = candidates[0], candidates[1:]
            if self.solver.solve(assumptions=[*critical, *rest, *fixed]):
                critical.append(head)
                candidates = rest
            else:
                new_core = set(self.solver.get_core() or [])
                candidates = [c for c in rest if c in new_core]
        return sorted((self._selector_of[s] for s in critical), key=lambda a: a.index)

    def check(self) -> None:
        """Raise :class:`NotSatisfiable` with a minimal explanation if there is no solution."""
        if not self._solve(()):
            raise NotSatisfiable(self.explain())

    # ------------------------------------------------------------------ choosing a model

    def preference_search(self) -> list[int]:
        """Reproduce OLM v0's preference search; return the guessed literals (see module doc).

        Must be called on a satisfiable problem (after :meth:`check`).
        """
        assert self._model is not None
        anchors = [
            self._lit[v.id]
            for v in self.variables
            if any(isinstance(c, Mandatory) for c in v.constraints)
        ]
        choices: deque[list[int]] = deque([a] for a in anchors)
        guesses: list[int] = []
        guessed: set[int] = set()
        var_of = {self._lit[v.id]: v for v in self.variables}
        while choices:
            candidates = choices.popleft()
            if any(c in guessed for c in candidates):
                continue
            for cand in candidates:
                # The last model already witnesses this candidate: no solver call needed.
                if self.value(cand) or self._solve([*guesses, cand]):
                    guesses.append(cand)
                    guessed.add(cand)
                    for constraint in var_of[cand].constraints:
                        order = order_of(constraint)
                        if order:
                            choices.append([self._lit[i] for i in order])
                    break
            # No candidate fits: the dependency is satisfied by the solver later (as in OLM,
            # where an exhausted choice adds no assumption).
        self._solve(guesses)
        return guesses

    def minimize_extras(self, guesses: Sequence[int]) -> list[int]:
        """OLM's post-pass: fix guesses and false variables, minimise the other true ones.

        Returns the assumptions that pin the result (for :meth:`canonical_model`).
        """
        assert self._model is not None
        var_lits = [self._lit[v.id] for v in self.variables]
        gset = set(guesses)
        excluded = [-x for x in var_lits if x not in gset and not self.value(x)]
        extras = [x for x in var_lits if x not in gset and self.value(x)]
        fixed = [*guesses, *excluded]
        fixed += self._minimize_count(extras, fixed)
        return fixed

    def _minimize_count(self, lits: Sequence[int], fixed: Sequence[int]) -> list[int]:
        """Minimise how many of ``lits`` are true given ``fixed``; return the bound assumptions."""
        assert self._model is not None
        if not lits:
            return []
        best = sum(1 for x in lits if self.value(x))
        # Try the absolute minimum first: often every literal can be false.
        if best == 0 or self._solve([*fixed, *(-x for x in lits)]):
            return [-x for x in lits]
        # The totalizer below has about len(free) * best clauses, so keep both small: literals
        # that unit propagation from ``fixed`` already decides count as constants, and the
        # solver is told to try each literal false first for a cheap starting model (a hint: it
        # never changes which models exist, so the minimum found below is exact either way).
        free = self._undecided(lits, fixed)
        forced = best - sum(1 for x in free if self.value(x))  # literals true in every model
        self.solver.set_phases([-x for x in free])
        if self._solve(fixed):
            best = min(best, forced + sum(1 for x in free if self.value(x)))
        if best == forced:  # the least any model can cost: every undecided literal false
            return [-x for x in free]
        tot = ITotalizer(lits=free, ubound=best - forced, top_id=self.top)
        self.top = max(self.top, tot.top_id)
        self.add_definition(tot.cnf.clauses)
        # rhs[k] is true when at least k+1 free literals are; assuming it false bounds their sum
        # by k. Descend from the model's cost: each success may drop the cost by more than one.
        while best - forced > 0 and self._solve([*fixed, -tot.rhs[best - forced - 1]]):
            best = forced + sum(1 for x in free if self.value(x))
        bound = [-tot.rhs[best - forced]] if best - forced < len(tot.rhs) else []
        self._solve([*fixed, *bound])
        return bound

    def _undecided(self, lits: Sequence[int], fixed: Sequence[int]) -> list[int]:
        """The literals of ``lits`` that unit propagation from ``fixed`` does not decide."""
        consistent, implied = self.solver.propagate(assumptions=[*self.selectors, *fixed])
        if not consistent:
            return list(lits)
        decided = set(implied or [])
        return [x for x in lits if x not in decided and -x not in decided]

    def optimize(self, objectives: Sequence[Objective], fixed: Sequence[int] = ()) -> list[int]:
        """Minimise each objective in turn, keeping the optimum of the earlier ones.

        Exact: level k's value is the minimum over all solutions that are optimal for levels
        1..k-1. Returns the assumptions pinning every level's optimum.
        """
        pinned = list(fixed)
        if not self._solve(pinned):
            raise ValueError("optimize() called on an unsatisfiable problem")
        for objective in objectives:
            pinned += self._minimize_count(objective.literals, pinned)
        return pinned

    def canonical_model(self, fixed: Sequence[int], order: Sequence[str] = ()) -> list[str]:
        """Among the models allowed by ``fixed``, return the one the canonical order prefers.

        Variables are visited in ``order`` (default: input order); each is made false if that
        still admits a model. The result is unique, whatever the solver's internal choices.
        """
        pinned = list(fixed)
        if not self._solve(pinned):
            raise ValueError("canonical_model() called with unsatisfiable assumptions")
        ids = order or [v.id for v in self.variables]
        for vid in ids:
            x = self._lit[vid]
            if not self.value(x) or self._solve([*pinned, -x]):
                pinned.append(-x)
            else:
                pinned.append(x)
        self._solve(pinned)
        return self.selected()

    def close(self) -> None:
        """Free the solver."""
        self.solver.delete()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
