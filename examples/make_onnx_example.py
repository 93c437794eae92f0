"""Write examples/cnn_transformer.onnx: a small CNN with two branches feeding a
transformer block (single-head self-attention from MatMul and Softmax, LayerNorm,
residuals, an MLP with Gelu), written with onnx.helper, batch dimension symbolic ("N").
No download; deterministic weights.

    python examples/make_onnx_example.py            # then: part solve examples/onnx_cnn.part
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def cnn_with_branches(h):  # type: ignore[no-untyped-def]  # h: an onnx.helper-based builder (Model below)
    """x [N,3,32,32] -> stem conv+bn+relu -> two branches (3x3 and 1x1 conv) -> add -> tokens [N,64,32]."""
    c1 = h.op("Conv", ["x", h.w("w_stem", 32, 3, 3, 3)], pads=[1, 1, 1, 1], strides=[2, 2], name="stem")
    b1 = h.op("BatchNormalization", [c1, h.w("bn_s", 32), h.w("bn_b", 32), h.w("bn_m", 32), h.w("bn_v", 32, pos=True)],
              name="stem_bn")
    r1 = h.op("Relu", [b1], name="stem_relu")
    a = h.op("Conv", [r1, h.w("w_a", 32, 32, 3, 3)], pads=[1, 1, 1, 1], name="branch3x3")
    a = h.op("Relu", [a], name="branch3x3_relu")
    b = h.op("Conv", [r1, h.w("w_b", 32, 32, 1, 1)], name="branch1x1")
    s = h.op("Add", [a, b], name="merge")
    p = h.op("MaxPool", [s], kernel_shape=[2, 2], strides=[2, 2], name="pool")  # [N,32,8,8]
    t = h.op("Reshape", [p, h.const("tok_shape", np.array([0, 32, 64], dtype=np.int64))], name="to_tokens")
    return h.op("Transpose", [t], perm=[0, 2, 1], name="tokens")  # [N,64,32]


def transformer_block(h, x: str, d: int = 32):  # type: ignore[no-untyped-def]
    """Pre-norm single-head attention and MLP, with residuals."""
    ln = h.op("LayerNormalization", [x, h.w("ln1_g", d), h.w("ln1_b", d)], axis=-1, name="ln1")
    q = h.op("MatMul", [ln, h.w("wq", d, d)], name="q")
    k = h.op("MatMul", [ln, h.w("wk", d, d)], name="k")
    v = h.op("MatMul", [ln, h.w("wv", d, d)], name="v")
    kt = h.op("Transpose", [k], perm=[0, 2, 1], name="k_t")
    sc = h.op("MatMul", [q, kt], name="scores")
    sc = h.op("Div", [sc, h.const("sqrt_d", np.array(np.sqrt(d), dtype=np.float32))], name="scale")
    att = h.op("Softmax", [sc], axis=-1, name="softmax")
    o = h.op("MatMul", [att, v], name="attend")
    o = h.op("MatMul", [o, h.w("wo", d, d)], name="proj")
    x2 = h.op("Add", [x, o], name="residual1")
    ln2 = h.op("LayerNormalization", [x2, h.w("ln2_g", d), h.w("ln2_b", d)], axis=-1, name="ln2")
    m = h.op("MatMul", [ln2, h.w("w1", d, 4 * d)], name="mlp_up")
    m = h.op("Gelu", [m], name="gelu")
    m = h.op("MatMul", [m, h.w("w2", 4 * d, d)], name="mlp_down")
    return h.op("Add", [x2, m], name="residual2")


class Model:
    """A tiny builder over onnx.helper: weights, constants and operators with fresh names."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []
        self.count = 0

    def w(self, name: str, *shape: int, pos: bool = False) -> str:
        from onnx import numpy_helper

        a = self.rng.standard_normal(shape).astype(np.float32) * 0.1
        self.inits.append(numpy_helper.from_array(np.abs(a) + 1.0 if pos else a, name))
        return name

    def const(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(value, name))
        return name

    def op(self, kind: str, inputs: list[str], name: str, **attrs: object) -> str:
        from onnx import helper

        self.count += 1
        out = f"{name}_out"
        self.nodes.append(helper.make_node(kind, inputs, [out], name=name, **attrs))
        return out

    def model(self, output: str, out_shape: list, name: str, batch: str | int = "N"):  # type: ignore[no-untyped-def]
        import onnx
        from onnx import TensorProto, helper

        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 32, 32])
        y = helper.make_tensor_value_info(output, TensorProto.FLOAT, [batch, *out_shape])
        m = helper.make_model(helper.make_graph(self.nodes, name, [x], [y], self.inits),
                              opset_imports=[helper.make_opsetid("", 20)])
        onnx.checker.check_model(m, full_check=True)
        return m


def cnn_transformer(batch: str | int = "N"):  # type: ignore[no-untyped-def]
    h = Model()
    out = transformer_block(h, cnn_with_branches(h))
    return h.model(out, [64, 32], "cnn_transformer", batch)


def main() -> None:
    import onnx

    path = HERE / "cnn_transformer.onnx"
    onnx.save(cnn_transformer(), str(path))
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
