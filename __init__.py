"""partdsl: declare a DNN graph, a platform, an objective and constraints; get the best
partition you can afford, with a certificate (incumbent, lower bound, gap).

    from partdsl import parse_file, solve, evaluate
    spec = parse_file("examples/tiny.part", overrides={"k": 4})
    result = solve(spec)
"""
from partdsl.core.errors import PartError, Span
from partdsl.core.evaluation import Evaluation, Violation
from partdsl.core.ir import (
    Constraints,
    DeviceClass,
    Graph,
    Link,
    Node,
    Objective,
    Platform,
    SolveOptions,
    Spec,
    Target,
    Work,
)
from partdsl.core.result import Result, Status
from partdsl.dsl.builder import GraphBuilder, SpecBuilder
from partdsl.dsl.parser import parse, parse_file
from partdsl.dsl.printer import to_part
from partdsl.evaluator.evaluate import evaluate
from partdsl.importers.import_options import ImportOptions, UncostedOperators

__all__ = ["PartError", "Span", "Evaluation", "Violation", "evaluate", "Constraints", "DeviceClass",
           "Graph", "Link", "Node", "Objective", "Platform", "SolveOptions", "Spec", "Target", "Work",
           "GraphBuilder", "SpecBuilder", "ImportOptions", "UncostedOperators", "parse", "parse_file", "to_part", "solve", "Result", "Status"]
__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """`solve` is imported when first asked for: it pulls in every method (numba, SciPy,
    the peers), about a second, which worker processes that only solve a module MIP or
    score a sweep point do not need (MILP-SPLIT's workers started 2.4 s into a 5 s limit)."""
    if name == "solve":
        from partdsl.methods.solve import solve

        return solve
    raise AttributeError(f"module 'partdsl' has no attribute {name!r}")

