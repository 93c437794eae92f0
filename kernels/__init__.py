"""Vectorized NumPy (and numba) algorithms grouped by family, as networkx groups its
algorithms: graph/ (orders, contraction, modules), bottleneck/ (max-load splits and
searches), latency/ (Tarnawski's latency objective), schedule/ (DiviML list schedules and
searches), peers/ (METIS, Scotch, Mt-KaHyPar). Kernels yield candidates
(core/events.py); the evaluator re-scores each one."""
