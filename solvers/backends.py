"""Deprecated: the solver registry is `partdsl.solvers.registry` (one table of each
solver's facts), the error types `partdsl.core.solver_errors`."""
from __future__ import annotations

import warnings

from partdsl.core.solver_errors import SolverFailed, SolverUnavailable  # noqa: F401
from partdsl.solvers.registry import SOLVERS, failures, is_installed, pyomo_names, require  # noqa: F401

warnings.warn("partdsl.solvers.backends is deprecated: use partdsl.solvers.registry (SOLVERS replaces BACKENDS) "
              "and partdsl.core.solver_errors", DeprecationWarning, stacklevel=2)
BACKENDS = {name: (s.detect, s.hint) for name, s in SOLVERS.items()}
