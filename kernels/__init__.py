"""Vectorized NumPy heuristics that return assignments (re-scored by the evaluator)."""
