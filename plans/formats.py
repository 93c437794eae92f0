"""A pipeline (plans/stages.py) in the forms the training and serving frameworks read.
Each writer returns the document written to the output file; `text` says it for people.
Each format's grammar, checked against its source (see docs/plans.md):

- megatron: `--pipeline-model-parallel-layout`, stages split by `|`, `E` embedding,
  `t` decoder layer, `L` loss (final norm and output layer), `x*N` repeats; the stages
  list VPP rank 0's PP ranks, then VPP rank 1's (Megatron-LM,
  megatron/core/transformer/pipeline_parallel_layer_layout.py). Without interleaving,
  also `--decoder-first/last-pipeline-num-layers` when the middle stages are even.
- fqn: module names per model chunk, torchtitan's `module_fqns_per_model_part`
  (torchtitan/config/job_config.py) and PiPPy's `split_spec` (the first module of each
  chunk after the first, `SplitPoint.BEGINNING`).
- vllm: `VLLM_PP_LAYER_PARTITION`, decoder layers per PP rank, comma separated, summing
  to the model's layers; embedding on the first rank, LM head on the last
  (vllm/distributed/utils.py, get_pp_indices).
- deepspeed: `PipelineModule.parts`, stage s holding layer specs parts[s]..parts[s+1]-1
  (deepspeed/runtime/pipe/module.py, _partition_layers); the list of units it indexes
  is written beside it.
"""
from __future__ import annotations

import json
from collections.abc import Callable

from partdsl.plans.stages import Chunk, Pipeline

FORMATS = ("megatron", "fqn", "vllm", "deepspeed")


def _stage_layout(line: Pipeline, c: Chunk) -> str:
    n = len(c.layers(line.units))
    return ("E" if c.first == 0 else "") + ("" if n == 0 else "t" if n == 1 else f"t*{n}") \
        + ("L" if c.last == line.units.tail else "")


def _ranks(line: Pipeline) -> list[dict]:
    return [{"rank": r, "device": d} for r, d in enumerate(line.ranks)]


def megatron(line: Pipeline) -> dict:
    p, layers = line.size, line.units.layers
    layout = "|".join(_stage_layout(line, c) for c in line.chunks)
    args = ["--num-layers", str(layers), "--pipeline-model-parallel-size", str(p),
            "--pipeline-model-parallel-layout", layout]
    doc: dict = {"format": "megatron", "pipeline_model_parallel_size": p, "num_layers": layers,
                 "pipeline_model_parallel_layout": layout, "virtual_stages_per_rank": line.virtual}
    counts = [len(c.layers(line.units)) for c in line.chunks]
    if line.virtual == 1 and p >= 2 and len(set(counts[1:-1])) <= 1:
        doc["decoder_first_pipeline_num_layers"], doc["decoder_last_pipeline_num_layers"] = counts[0], counts[-1]
        doc["uneven_args"] = ["--num-layers", str(layers), "--pipeline-model-parallel-size", str(p),
                              "--decoder-first-pipeline-num-layers", str(counts[0]),
                              "--decoder-last-pipeline-num-layers", str(counts[-1])]
    doc["args"] = args
    doc["ranks"] = _ranks(line)
    return doc


def fqn(line: Pipeline) -> dict:
    mods = line.units.modules
    parts = [[m for u in range(c.first, c.last + 1) for m in mods[u]] for c in line.chunks]
    split = {part[0]: "BEGINNING" for part in parts[1:] if part}
    return {"format": "fqn", "pipeline_parallel_degree": line.size, "module_fqns_per_model_part": parts,
            "split_spec": split, "stages_per_rank": line.virtual, "ranks": _ranks(line)}


def vllm(line: Pipeline) -> dict:
    line.need_one_chunk_per_rank("vllm")
    counts = [len(c.layers(line.units)) for c in line.chunks]
    return {"format": "vllm", "pipeline_parallel_size": line.size, "VLLM_PP_LAYER_PARTITION": ",".join(map(str, counts)),
            "layers": line.units.layers, "ranks": _ranks(line)}


def deepspeed(line: Pipeline) -> dict:
    line.need_one_chunk_per_rank("deepspeed")
    u = line.units
    names = [" + ".join(u.modules[k]) or ("(embedding)" if k == 0 else "(head)") for k in range(u.tail + 1)]
    parts = [c.first for c in line.chunks] + [u.tail + 1]
    return {"format": "deepspeed", "num_stages": line.size, "parts": parts, "layers": names, "ranks": _ranks(line)}


WRITERS: dict[str, Callable[[Pipeline], dict]] = {"megatron": megatron, "fqn": fqn, "vllm": vllm,
                                                  "deepspeed": deepspeed}


def text(doc: dict) -> str:
    """What a person pastes: the launcher arguments, the config lines, the environment."""
    f = doc["format"]
    ranks = ", ".join(f"{r['rank']}: {r['device']}" for r in doc["ranks"])
    if f == "megatron":
        out = " ".join(a if a.startswith("--") or a.isdigit() else f'"{a}"' for a in doc["args"])
        if "uneven_args" in doc:
            out += "\n# or, without a layout:\n" + " ".join(doc["uneven_args"])
    elif f == "fqn":
        out = (f"[parallelism]\npipeline_parallel_degree = {doc['pipeline_parallel_degree']}\n"
               f"module_fqns_per_model_part = {json.dumps(doc['module_fqns_per_model_part'])}")
        if doc["stages_per_rank"] > 1:
            out += "\n# stage i runs on rank i mod the degree: an interleaved (looped) schedule, e.g. Interleaved1F1B"
        out += "\n# PiPPy split_spec: " + json.dumps({k: "SplitPoint.BEGINNING" for k in doc["split_spec"]})
    elif f == "vllm":
        out = (f"VLLM_PP_LAYER_PARTITION={doc['VLLM_PP_LAYER_PARTITION']} "
               f"vllm serve MODEL --pipeline-parallel-size {doc['pipeline_parallel_size']}")
    else:
        out = (f"PipelineModule(..., num_stages={doc['num_stages']}): parts = {doc['parts']}\n"
               "# over the layer specs " + json.dumps(doc["layers"]))
    return out + f"\n# ranks: {ranks}"
