"""Inputs several tests write or read: a per-layer profile (PROFILE) and its conversion,
Metis's profile folder, REGAL's text graphs, the worked example of activation memory."""
from __future__ import annotations

import json
from pathlib import Path

from tests.support import run_part

PROFILE = {
    "format": "partdsl-layers", "version": 1, "model": "llama-8b",
    "devices": {"h100": {"count": 2, "memory_bytes": 80e9, "link_bytes_per_s": 50e9},
                "a100": {"count": 2, "memory_bytes": 40e9, "link_bytes_per_s": 25e9}},
    "layers": [{"name": "embed", "module": "model.embed_tokens", "forward_ms": {"h100": 0.4, "a100": 0.7},
                "params_bytes": 1.05e9, "output_bytes": 3.4e7}]
    + [{"name": f"layers.{i}", "module": f"model.layers.{i}", "forward_ms": {"h100": 5, "a100": {"1": 9, "4": 30}},
        "params_bytes": 4.3e8, "activation_bytes": 2e8, "output_bytes": 3.4e7} for i in range(6)]
    + [{"name": "head", "module": "lm_head", "forward_ms": {"h100": 6, "a100": 11}, "params_bytes": 1.05e9,
        "output_bytes": 1e9}],
}


def convert_profile(tmp_path: Path, doc: dict, *extra: str):  # type: ignore[no-untyped-def]
    src, out = tmp_path / "profile.json", tmp_path / "p.part"
    src.write_text(json.dumps(doc))
    return run_part("convert", str(src), "--from", "layers", "-o", str(out), *extra), out


def metis_files(folder: Path, layers: int = 8) -> None:
    """Profiles in Metis's format (the fields its ProfileDataLoader reads), numbers of ours:
    an embedding, `layers - 2` decoder layers and the post-process, per device type."""
    folder.mkdir()
    for gpu, speed in (("A100", 1.0), ("H100", 0.4)):
        for tp in (1, 2):
            times = [3.0 * speed] + [20.0 * speed / tp] * (layers - 2) + [30.0 * speed]
            doc = {"model": {"model_name": "gpt", "num_layers": layers,
                             "parameters": {"total_parameters_bytes": 1e9,
                                            "parameters_per_layer_bytes": [1e8] * layers}},
                   "execution_time": {"total_time_ms": sum(times), "forward_backward_time_ms": sum(times),
                                      "batch_generator_time_ms": 1.0, "optimizer_time_ms": 5.0,
                                      "layer_compute_total_ms": times},
                   "execution_memory": {"total_memory_mb": 8000, "layer_memory_total_mb": [1000.0] * layers}}
            (folder / f"DeviceType.{gpu}_tp{tp}_bs1.json").write_text(json.dumps(doc))


def as_pbtxt(g) -> str:  # type: ignore[no-untyped-def]
    """A Graph in REGAL's text format (node v as id v + 1, after _SOURCE)."""
    preds: dict[int, list[int]] = {}
    for a, b in g.edges:
        preds.setdefault(b, []).append(a)
    out = ['node {\n  name: "_SOURCE"\n}']
    for v, nd in enumerate(g.nodes):
        ins = "".join(f"  input_info {{ preceding_node: {a + 1} }}\n" for a in preds.get(v, []))
        out.append(f'node {{\n  name: "node_{v}"\n  id: {v + 1}\n{ins}  output_info {{\n    size: {nd.comm!r}\n'
                   f'    alias_input_port: -1\n  }}\n  control_input: 0\n  compute_cost: {nd.work[0].time!r}\n}}')
    return "\n".join(out) + "\n"


ACTIVATIONS_TEXT = """
graph g {
  node a { work 1 ms; params 2 MB; out 4 MB }
  node b { work 1 ms; params 1 MB; out 1 MB }
  node c { work 1 ms; params 1 MB; out 2 MB }
  node d { work 1 ms; params 1 MB }
  a -> {b, c}
  b -> d
  c -> d
}
platform { device gpu[2] { memory 8 MB; link 1 GB/s } }
minimize bottleneck
subject to { memory overflow; activations }
"""
