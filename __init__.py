"""partdsl: declare a DNN graph, a platform, an objective and constraints; get the best
partition you can afford, with a certificate (incumbent, lower bound, gap).

    from partdsl import parse_file, solve, evaluate
    spec = parse_file("examples/tiny.part", overrides={"k": 4})
    result = solve(spec)
"""
from .core.errors import PartError, Span
from .core.evaluate import Evaluation, Violation, evaluate
from .core.ir import (Constraints, DeviceClass, Graph, Link, Node, Objective, Platform, SolveOptions,
                      Spec, Target, Work)
from .dsl.builder import GraphBuilder, SpecBuilder
from .dsl.parser import parse, parse_file
from .dsl.printer import to_part
from .solvers.api import solve
from .solvers.result import Result, Status

__all__ = ["PartError", "Span", "Evaluation", "Violation", "evaluate", "Constraints", "DeviceClass",
           "Graph", "Link", "Node", "Objective", "Platform", "SolveOptions", "Spec", "Target", "Work",
           "GraphBuilder", "SpecBuilder", "parse", "parse_file", "to_part", "solve", "Result", "Status"]
__version__ = "0.1.0"
