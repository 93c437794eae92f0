"""Peer graph partitioners run as methods: METIS, Scotch and Mt-KaHyPar on the graph they
see, their blocks mapped to devices, and the repair moves that make a block feasible."""
