"""Latency kernels (Tarnawski sec. 4 and 7): the fill greedy and max-load DP split, the
latency search, and the path segmentation bound with its run cuts."""
