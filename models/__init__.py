"""MIP formulations, one module each, citing the paper section they come from; each
builds a model plus a VarMap and decodes a solution back to an assignment.
`mtpp.py`: Archer et al. Fig. 3 (exact MTPP MIP), in matrix form (`matrix.py`)."""
