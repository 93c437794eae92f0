"""Plans out: a partition of an LLM graph as the pipeline layouts Megatron-LM, torchtitan /
PiPPy, vLLM and DeepSpeed read (units.py: the layers from node names; stages.py: the
partition as a pipeline; formats.py: the writers)."""
