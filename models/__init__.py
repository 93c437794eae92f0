"""Pyomo model builders, one module per formulation (Archer Fig. 3 and its relaxations,
Tarnawski Fig. 6). Not part of the foundation: the exact-MIP issue adds them; until then
`part solve` routes to the kernels in `partdsl.kernels`."""
