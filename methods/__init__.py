"""Methods: the `solve` entry point and the method table, method `exact` over the
formulation table, MILP-SPLIT, MIP starts, the simple bounds and the bound hierarchy.
A method yields candidates and proofs (core/events.py); `solve` re-scores every
candidate with the evaluator."""
