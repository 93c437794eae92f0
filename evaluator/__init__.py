"""The one evaluator: the cost semantics of every objective, one module per concern.
Every solver's and kernel's answer is re-scored here before it is returned.

- evaluate: the entry point, an assignment (node -> device) -> Evaluation
- violations: every violated constraint (placement, memory, colocation, contiguity,
  acyclic stages, stage limits, latency subgraphs)
- levels: transfers on server levels and direct links (the slowest fabric of a route)
- replicas: data-parallel stages and their gradient synchronization
- activations: peak live activations and PipeDream's stash, in memory
- subgraphs: Tarnawski's latency recursion over accelerator subgraphs
- schedule_eval, schedule_checks: DiviML's batched schedules, scored and checked
"""
