"""`part generate`: synthetic workloads. randwire (DiviML's randomly wired networks),
regal (REGAL-style random DAGs for Archer et al.), decoder_graph (LLM decoders of any
size at the operator level)."""
