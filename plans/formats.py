"""A pipeline (plans/stages.py) in the forms the training and serving frameworks read.
Each writer returns the document written to the output file; `text` says it for people.
Each format's grammar, checked against its source (see docs/plans.md):

- megatron: `--pipeline-model-parallel-layout`, stages split by `|`, `E` embedding,
  `t` decoder layer, `L` loss (final norm and output layer), `x*N` repeats; the stages
  list VPP rank 0's PP ranks, then VPP rank 1's (Megatron-LM,
  megatron/core/transformer/pipeline_parallel_layer_layout.py). Without interleaving,
  also `--decoder-first/last-pipeline-num-layers` (TransformerConfig's
  `num_layers_in_first/last_pipeline_stage`) when Megatron takes them: both larger than 0
  and the middle stages even and not empty (transformer_config.py refuses the rest).
- fqn: module names per model chunk. `module_fqns_per_model_part` is torchtitan's
  (torchtitan/config/configs.py, ParallelismConfig), in torchtitan's model names:
  `tok_embeddings`, `layers.N` (N from 0 in the order the layers run), `norm`, `lm_head`,
  and `rotary_emb` in every chunk when the model has one (torchtitan's Hugging Face
  backend builds it on every stage). `module_paths_per_model_part` and PiPPy's
  `split_spec` (the first module of each chunk after the first, `SplitPoint.BEGINNING`)
  use the imported model's own module paths, which `torch.distributed.pipelining.pipeline`
  traces.
- vllm: `VLLM_PP_LAYER_PARTITION`, decoder layers per PP rank, comma separated, summing
  to the model's layers; embedding on the first rank, LM head on the last
  (vllm/distributed/utils.py, get_pp_indices). A rank with no decoder layer is refused:
  vLLM gives it no KV cache.
- deepspeed: `PipelineModule.parts`, stage s holding layer specs parts[s]..parts[s+1]-1
  (deepspeed/runtime/pipe/module.py, _partition_layers), over the layer-spec list a
  decoder has: the embedding, the N decoder layers, the final norm, the head (N + 3
  specs; written beside it).
"""
from __future__ import annotations

import json
from collections.abc import Callable

from partdsl.core.errors import PartError
from partdsl.plans.stages import Chunk, Pipeline

FORMATS = ("megatron", "fqn", "vllm", "deepspeed")


def _stage_layout(line: Pipeline, c: Chunk) -> str:
    n = len(c.layers(line.units))
    return ("E" if c.first == 0 else "") + ("" if n == 0 else "t" if n == 1 else f"t*{n}") \
        + ("L" if c.last == line.units.tail else "")


def _ranks(line: Pipeline) -> list[dict]:
    return [{"rank": r, "device": d} for r, d in enumerate(line.ranks)]


def _megatron_takes_uneven(counts: list[int]) -> bool:
    """Megatron's TransformerConfig takes first/last stage counts larger than 0, with the
    layers between them spread evenly over the middle stages, none of them empty."""
    middle = counts[1:-1]
    return len(counts) >= 2 and counts[0] > 0 and counts[-1] > 0 and len(set(middle)) <= 1 \
        and all(c > 0 for c in middle)


def megatron(line: Pipeline) -> dict:
    p, layers = line.size, line.units.layers
    layout = "|".join(_stage_layout(line, c) for c in line.chunks)
    args = ["--num-layers", str(layers), "--pipeline-model-parallel-size", str(p),
            "--pipeline-model-parallel-layout", layout]
    doc: dict = {"format": "megatron", "pipeline_model_parallel_size": p, "num_layers": layers,
                 "pipeline_model_parallel_layout": layout, "virtual_stages_per_rank": line.virtual}
    counts = [len(c.layers(line.units)) for c in line.chunks]
    if line.virtual == 1 and _megatron_takes_uneven(counts):
        doc["decoder_first_pipeline_num_layers"], doc["decoder_last_pipeline_num_layers"] = counts[0], counts[-1]
        doc["uneven_args"] = ["--num-layers", str(layers), "--pipeline-model-parallel-size", str(p),
                              "--decoder-first-pipeline-num-layers", str(counts[0]),
                              "--decoder-last-pipeline-num-layers", str(counts[-1])]
    doc["args"] = args
    doc["ranks"] = _ranks(line)
    return doc


def torchtitan_names(line: Pipeline) -> list[list[str]]:
    """Each chunk's modules as torchtitan names them (its Decoder: tok_embeddings, layers,
    norm, lm_head), with `rotary_emb` in every chunk when the model has one."""
    u = line.units
    rotary = any(m.rsplit(".", 1)[-1] == "rotary_emb" for mods in u.modules for m in mods)
    return [(["tok_embeddings"] if c.first == 0 else []) + [f"layers.{k - 1}" for k in c.layers(u)]
            + (["norm", "lm_head"] if c.last == u.tail else []) + (["rotary_emb"] if rotary else [])
            for c in line.chunks]


def fqn(line: Pipeline) -> dict:
    mods = line.units.modules
    paths = [[m for u in range(c.first, c.last + 1) for m in mods[u]] for c in line.chunks]
    split = {part[0]: "BEGINNING" for part in paths[1:] if part}
    return {"format": "fqn", "pipeline_parallel_degree": line.size, "module_fqns_per_model_part": torchtitan_names(line),
            "module_paths_per_model_part": paths, "split_spec": split, "stages_per_rank": line.virtual,
            "ranks": _ranks(line)}


def vllm(line: Pipeline) -> dict:
    line.need_one_chunk_per_rank("vllm")
    counts = [len(c.layers(line.units)) for c in line.chunks]
    empty = [r for r, n in enumerate(counts) if n == 0]
    if empty:
        r = empty[0]
        raise PartError(f"rank {r} ({line.ranks[r]}) holds no decoder layer ({line.held(line.ranks[r])}); vLLM "
                        "gives such a rank no KV cache", None,
                        f"solve on {len(counts) - len(empty)} device(s), so that every rank holds a layer, or export "
                        "the plan as megatron or fqn")
    return {"format": "vllm", "pipeline_parallel_size": line.size, "VLLM_PP_LAYER_PARTITION": ",".join(map(str, counts)),
            "layers": line.units.layers, "ranks": _ranks(line)}


def deepspeed(line: Pipeline) -> dict:
    line.need_one_chunk_per_rank("deepspeed")
    u = line.units
    # unit k is spec k; L (unit layers + 1) is one spec per module after the layers (final norm, head)
    names = [" + ".join(u.modules[0]) or "(embedding)"] + [" + ".join(u.modules[k]) for k in range(1, u.tail)] \
        + (list(u.modules[u.tail]) or ["(head)"])
    parts = [c.first for c in line.chunks] + [len(names)]
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
        out = ("# torchtitan: its trainer config's ParallelismConfig (torchtitan/config/configs.py)\n"
               f"parallelism.pipeline_parallel_degree = {doc['pipeline_parallel_degree']}\n"
               f"parallelism.module_fqns_per_model_part = {json.dumps(doc['module_fqns_per_model_part'])}")
        if doc["stages_per_rank"] > 1:
            out += "\n# stage i runs on rank i mod the degree: an interleaved (looped) schedule, e.g. Interleaved1F1B"
        out += "\n# the model's own module paths: " + json.dumps(doc["module_paths_per_model_part"])
        out += "\n# PiPPy split_spec: " + json.dumps({k: "SplitPoint.BEGINNING" for k in doc["split_spec"]})
    elif f == "vllm":
        out = (f"VLLM_PP_LAYER_PARTITION={doc['VLLM_PP_LAYER_PARTITION']} "
               f"vllm serve MODEL --pipeline-parallel-size {doc['pipeline_parallel_size']}")
    else:
        out = (f"PipelineModule(..., num_stages={doc['num_stages']}): parts = {doc['parts']}\n"
               "# over the layer specs " + json.dumps(doc["layers"]))
    return out + f"\n# ranks: {ranks}"
