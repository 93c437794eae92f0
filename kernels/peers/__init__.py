"""Peer graph partitioners run as methods: METIS, Scotch and Mt-KaHyPar on the graph they
see, their blocks mapped to devices, and the repair moves that make a block feasible."""

# name: (Python package, the partdsl extra that installs it, the peer's own default imbalance);
# here, apart from the runners (scipy.optimize), for the method table
PEERS: dict[str, tuple[str, str, float]] = {
    "metis": ("pymetis", "peers", 0.03),
    "scotch": ("pyscotch", "peers", 0.01),
    "kahypar": ("mtkahypar", "peers", 0.03),
}
