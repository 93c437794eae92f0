"""A GPT-style decoder stack written as ONNX with onnx.helper, for the ONNX import's scale
run (`benchmarks/scale.py --onnx-check`, issue 29: 100k operators imported in under 10 s).

Fifteen operators per layer (LayerNormalization, the q/k/v MatMuls, Transpose, the two
attention MatMuls around a Softmax, the output projection, a residual Add, a second
LayerNormalization, the MLP's two MatMuls around a Gelu, a residual Add), fp16. The weights
are declared as external data in a file that is never written: the import reads shapes
only (`onnx.load(..., load_external_data=False)`), so 100k operators take 11 MB.

    python benchmarks/onnx_decoder.py 6667 decoder.onnx        # 100,005 operators
"""
from __future__ import annotations

import sys
from pathlib import Path

PER_LAYER = 15
HIDDEN, SEQ, FFN = 256, 16, 1024


def write(layers: int, path: Path) -> int:
    """Write the stack to `path`; the number of operators."""
    import onnx
    from onnx import TensorProto, helper

    offset = 0

    def weight(name: str, dims: list[int]) -> TensorProto:
        nonlocal offset
        t = TensorProto(name=name, data_type=TensorProto.FLOAT16, dims=dims, data_location=TensorProto.EXTERNAL)
        length = 2 * dims[0] * (dims[1] if len(dims) > 1 else 1)
        for k, v in (("location", "weights.data"), ("offset", str(offset)), ("length", str(length))):
            t.external_data.add(key=k, value=v)
        offset += length
        return t

    nodes, inits, x = [], [], "x"
    for layer in range(layers):
        p = f"l{layer}_"
        shapes = {"wq": [HIDDEN, HIDDEN], "wk": [HIDDEN, HIDDEN], "wv": [HIDDEN, HIDDEN], "wo": [HIDDEN, HIDDEN],
                  "w1": [HIDDEN, FFN], "w2": [FFN, HIDDEN], "g1": [HIDDEN], "g2": [HIDDEN]}
        inits += [weight(p + w, dims) for w, dims in shapes.items()]

        def op(kind: str, ins: list[str], out: str, **attrs: object) -> None:
            nodes.append(helper.make_node(kind, ins, [p + out], name=f"/model/layers.{layer}/{out}", **attrs))

        op("LayerNormalization", [x, p + "g1"], "ln", axis=-1)
        for w in "qkv":
            op("MatMul", [p + "ln", p + "w" + w], w)
        op("Transpose", [p + "k"], "kt", perm=[0, 2, 1])
        op("MatMul", [p + "q", p + "kt"], "scores")
        op("Softmax", [p + "scores"], "probs", axis=-1)
        op("MatMul", [p + "probs", p + "v"], "attn")
        op("MatMul", [p + "attn", p + "wo"], "proj")
        op("Add", [x, p + "proj"], "res")
        op("LayerNormalization", [p + "res", p + "g2"], "ln2", axis=-1)
        op("MatMul", [p + "ln2", p + "w1"], "up")
        op("Gelu", [p + "up"], "act")
        op("MatMul", [p + "act", p + "w2"], "down")
        op("Add", [p + "res", p + "down"], "out")
        x = p + "out"
    graph = helper.make_graph(nodes, "decoder",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT16, ["batch", SEQ, HIDDEN])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT16, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]), str(path))
    return len(nodes)


if __name__ == "__main__":
    print(f"wrote {sys.argv[2]}: {write(int(sys.argv[1]), Path(sys.argv[2])):,} operators")
