"""Write examples/llama_tiny.onnx and examples/llama_tiny.pt2: Hugging Face transformers'
LlamaForCausalLM (4 decoder layers, hidden 32, vocabulary 512, random weights, 16 tokens)
exported by torch.onnx's default (dynamo) exporter, which names nodes `node_MatMul_12` and
records each node's module path in its `namespace` metadata, and saved by
torch.export.save (the program as JSON in a zip, each node's `nn_module_stack`). A model partdsl did not write: its graph is
transformers' code (Apache-2.0), traced by torch. torch, transformers and onnxscript are
needed to regenerate it only, never to run partdsl:

    pip install torch==2.13.0 transformers onnxscript && python examples/make_llama_tiny.py
"""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    import onnx
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=512, hidden_size=32, intermediate_size=86, num_hidden_layers=4,
                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64, use_cache=False)
    model = LlamaForCausalLM(cfg).eval()
    ids = torch.randint(0, cfg.vocab_size, (1, 16))
    out = HERE / "llama_tiny.onnx"
    program = torch.onnx.export(model, (ids,), kwargs={"use_cache": False}, input_names=["input_ids"],
                                output_names=["logits"], dynamo=True)
    program.save(str(out))
    onnx.save(onnx.load(str(out)), str(out), save_as_external_data=False)  # one file
    Path(str(out) + ".data").unlink(missing_ok=True)
    print(f"wrote {out} ({out.stat().st_size:,} bytes)")
    pt2 = HERE / "llama_tiny.pt2"
    torch.export.save(torch.export.export(model, (ids,), kwargs={"use_cache": False}), str(pt2))
    print(f"wrote {pt2} ({pt2.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
