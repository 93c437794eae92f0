"""DiviML schedule kernels: list schedulers (MET, Greedy/EFT, HEFT) and the searches over
DiviML's integer strings (simulated annealing, the biased (1+1) EA)."""
