"""Core types shared by every stage: errors, units, the typed IR, the evaluator, results."""
