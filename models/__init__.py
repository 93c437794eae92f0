"""MIP formulations, one module each, citing the paper section they come from; each
builds a model plus a VarMap and decodes a solution back to an assignment.
`mtpp.py`: Archer et al. Fig. 3 (exact MTPP MIP); `maxload.py`: Tarnawski et al. Fig. 6
(max-load IP); both in matrix form (`matrix.py`)."""
