"""The solver-agnostic entry point `solve(spec, method=...)`, the method registry and Result."""
