"""Core types shared by every stage: errors, units, the typed IR and its dense arrays,
validation, the evaluation and result types. The evaluator that fills an Evaluation is
one layer up (partdsl.evaluator)."""
