"""Max-load (bottleneck) kernels: splits of topological orders (segments, segment DP),
the DP over ideals (Tarnawski sec. 5.1.1) and its reference order, order searches
(Archer sec. 4: SliceGraph, random-T, BRKGA, MLA), the load search, the baselines."""
