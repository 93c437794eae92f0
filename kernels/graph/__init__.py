"""Graph algorithms every family uses: topological orders and Kahn keys, contraction of
colocated and strongly connected nodes, module decomposition (bridges, articulations)."""
