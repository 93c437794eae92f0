"""`part convert`'s library: an imported model or a profile -> a complete .part spec
(to_part: dnn-partitioning, ONNX, torch.export, REGAL; layer_profile: layer profiles and
Metis; pipedream_profile: PipeDream's graph.txt), above the language whose printer and
SpecBuilder they use. Benchmarks and tests import it from here, not from the CLI."""
