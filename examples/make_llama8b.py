"""Write examples/llama8b.pt2 and examples/llama8b.onnx: Hugging Face transformers' LlamaForCausalLM at Llama 3 8B's
shape (32 decoder layers, hidden 4096, 32 heads of which 8 for keys and values, SwiGLU MLP
of width 14,336, vocabulary 128,256; 8.03 billion parameters in bf16), 4,096 tokens,
exported on the meta device: the program (every call, its tensor shapes and module path)
without the 16 GB of weights, which partdsl never reads. The .pt2 is torch.export's; the
.onnx is torch.onnx's dynamo export (unoptimized: constant folding needs the weights) with
each weight an initializer whose data lies in `llama8b.onnx.data`, as large ONNX models
keep theirs, a file not written here. The end-to-end example of
docs/plans.md plans it on four H100s and four A100s. torch and transformers are needed
to regenerate it only, never to run partdsl:

    pip install torch==2.13.0 transformers onnxscript && python examples/make_llama8b.py
"""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                      num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192,
                      use_cache=False)
    with torch.device("meta"):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16).eval()
    ids = torch.zeros((1, 4096), dtype=torch.long, device="meta")
    out = HERE / "llama8b.pt2"
    torch.export.save(torch.export.export(model, (ids,), kwargs={"use_cache": False}), str(out))
    print(f"wrote {out} ({out.stat().st_size:,} bytes)")
    out = HERE / "llama8b.onnx"
    program = torch.onnx.export(model, (ids,), kwargs={"use_cache": False}, input_names=["input_ids"],
                                output_names=["logits"], dynamo=True, optimize=False)
    program.save(str(out), include_initializers=False, keep_initializers_as_inputs=True)
    _weights_as_external_initializers(out)
    print(f"wrote {out} ({out.stat().st_size:,} bytes)")


def _weights_as_external_initializers(path: Path) -> None:
    """Each weight (a graph input but input_ids) becomes an initializer of its shape and
    dtype whose data is at its offset in `<path>.data`."""
    import math

    import onnx
    from onnx import TensorProto, helper

    m = onnx.load(str(path), load_external_data=False)
    g, inputs, offset = m.graph, [], 0
    for vi in list(g.input):
        if vi.name == "input_ids":
            inputs.append(vi)
            continue
        tt = vi.type.tensor_type
        dims = [d.dim_value for d in tt.shape.dim]
        size = math.prod(dims) * helper.tensor_dtype_to_np_dtype(tt.elem_type).itemsize
        t = TensorProto(name=vi.name, data_type=tt.elem_type, dims=dims, data_location=TensorProto.EXTERNAL)
        for key, value in (("location", path.name + ".data"), ("offset", str(offset)), ("length", str(size))):
            entry = t.external_data.add()
            entry.key, entry.value = key, value
        offset += size
        g.initializer.append(t)
    del g.input[:]
    g.input.extend(inputs)
    onnx.save(m, str(path))


if __name__ == "__main__":
    main()
