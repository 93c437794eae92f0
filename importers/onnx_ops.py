"""The ONNX operator catalogue of the cost model: FLOPs per sample for every operator of
the standard opset (domains "" / "ai.onnx", up to CATALOGUE_OPSET) and for the com.microsoft
operators common in exported transformers, or the operator listed by name as not
modelled. A multiply-add counts 2. Families:

- matrix products (MatMul, Gemm and their quantized forms): 2 x outputs x K;
- convolutions: 2 x outputs x C/group x kernel (ConvTranspose: per input element);
- Einsum: 2 x the product of every index's size (one multiply-add per index tuple);
- LSTM / GRU / RNN: 2 x steps x (W + R elements) + a few FLOPs per hidden unit and step;
- attention (ONNX Attention, com.microsoft Attention and MultiHeadAttention): 2 S_q S_kv
  (d_qk + d_v) + 5 heads S_q S_kv for the softmax, plus the input projection where the
  operator holds its weights;
- pooling: outputs x kernel; global pooling and reductions: input elements;
- element-wise operators and normalizations: a fixed count per output element (PER_ELEMENT);
- data movement: 0.
An operator in UNMODELLED (control flow, strings, detection post-processing, ...) or in no
table is not costed: the importer reports it (`--unknown-ops`), as it does an operator
whose shapes are unknown.
"""
from __future__ import annotations

import math
from typing import Any

CATALOGUE_OPSET = 28  # the newest standard opset this catalogue was checked against (onnx 1.23.2)
MS = "com.microsoft"

MATMUL = {"MatMul": (0, 1), "MatMulInteger": (0, 1), "QLinearMatMul": (0, 3), (MS, "FusedMatMul"): (0, 1),
          (MS, "MatMulIntegerToFloat"): (0, 1), (MS, "DynamicQuantizeMatMul"): (0, 1), (MS, "MatMulNBits"): (0, None)}
CONV = {"Conv": 1, "ConvInteger": 1, "QLinearConv": 3, (MS, "FusedConv"): 1, (MS, "NhwcConv"): 1}
RNN = {"LSTM": 9, "GRU": 8, "RNN": 2}  # FLOPs per hidden unit and step beyond the two products
PER_ELEMENT: dict[Any, float] = {
    **{op: 1.0 for op in (
        "Add", "Sub", "Mul", "Div", "Neg", "Abs", "Max", "Min", "Sum", "Mean", "Where", "Reciprocal", "Sqrt", "Relu",
        "Sign", "Ceil", "Floor", "Round", "Not", "And", "Or", "Xor", "Equal", "Less", "Greater", "LessOrEqual",
        "GreaterOrEqual", "Mod", "BitShift", "BitwiseAnd", "BitwiseNot", "BitwiseOr", "BitwiseXor", "IsInf",
        "IsNaN", "Clip", "PRelu", "LeakyRelu", "ThresholdedRelu", "Shrink", "Cast", "CastLike", "Pow", "Exp",
        "Log", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Erf",
        "Tanh", "Sigmoid", "Softplus", "Softsign", "Elu", "Selu", "Celu", "HardSigmoid", "Bernoulli",
        "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "BlackmanWindow",
        "HammingWindow", "HannWindow", "MelWeightMatrix", "Hardmax")},
    "HardSwish": 2.0, "Swish": 4.0, "Mish": 5.0, "Gelu": 8.0, "SwiGLU": 5.0, "RotaryEmbedding": 3.0,
    "QuantizeLinear": 2.0, "DequantizeLinear": 2.0, "DynamicQuantizeLinear": 3.0, "Resize": 4.0, "Upsample": 4.0,
    "BatchNormalization": 2.0, "LayerNormalization": 8.0, "InstanceNormalization": 8.0, "GroupNormalization": 8.0,
    "RMSNormalization": 4.0, "MeanVarianceNormalization": 6.0, "LpNormalization": 3.0, "Softmax": 5.0,
    "LogSoftmax": 5.0,
    (MS, "FastGelu"): 8.0, (MS, "Gelu"): 8.0, (MS, "BiasGelu"): 9.0, (MS, "QuickGelu"): 4.0, (MS, "BiasAdd"): 1.0,
    (MS, "SkipLayerNormalization"): 9.0, (MS, "SimplifiedLayerNormalization"): 4.0,
    (MS, "SkipSimplifiedLayerNormalization"): 5.0, (MS, "LayerNormalization"): 8.0, (MS, "RotaryEmbedding"): 3.0,
    (MS, "EmbedLayerNormalization"): 8.0, (MS, "BiasSplitGelu"): 8.0, (MS, "BiasSoftmax"): 6.0,
}
POOL = {"MaxPool", "AveragePool", "LpPool"}
INPUT_SIZED = {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", "ReduceL1", "ReduceL2", "ReduceLogSum",
               "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare",
               "ArgMax", "ArgMin", "CumSum", "CumProd", "TopK", "Unique"}
MOVES = {"Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Concat", "Split", "Slice", "Gather",
         "GatherElements", "GatherND", "Scatter", "ScatterElements", "ScatterND", "TensorScatter", "Shape", "Size",
         "Identity", "Expand", "Tile", "Pad", "Dropout", "ConstantOfShape", "Range", "DepthToSpace", "SpaceToDepth",
         "Compress", "NonZero", "OneHot", "EyeLike", "Trilu", "ReverseSequence", "CenterCropPad", "Col2Im",
         "MaxUnpool", "BitCast", "Optional", "OptionalGetElement", "OptionalHasElement", "SequenceAt",
         "SequenceConstruct", "SequenceEmpty", "SequenceErase", "SequenceInsert", "SequenceLength",
         "SplitToSequence", "ConcatFromSequence", "Constant", (MS, "Trilu")}
ATTENTION = {"Attention", (MS, "Attention"), (MS, "MultiHeadAttention")}
UNMODELLED = {  # named, not costed: the importer reports them (why, in a word)
    "If": "control flow", "Loop": "control flow", "Scan": "control flow", "SequenceMap": "control flow",
    "DFT": "signal", "STFT": "signal", "GridSample": "sampling", "AffineGrid": "sampling", "RoiAlign": "detection",
    "MaxRoiPool": "detection", "NonMaxSuppression": "detection", "DeformConv": "deformable convolution",
    "Det": "linear algebra", "LinearAttention": "linear attention", "CausalConvWithState": "stateful convolution",
    "ImageDecoder": "image decoding", "StringConcat": "strings", "StringNormalizer": "strings",
    "StringSplit": "strings", "RegexFullMatch": "strings", "TfIdfVectorizer": "strings",
    "NegativeLogLikelihoodLoss": "training loss", "SoftmaxCrossEntropyLoss": "training loss",
    (MS, "GroupQueryAttention"): "attention with a KV cache", (MS, "PackedAttention"): "packed attention",
    (MS, "QAttention"): "quantized attention", (MS, "DecoderMaskedMultiHeadAttention"): "attention with a KV cache",
}
SPECIAL = {"ConvTranspose", "Gemm", "Einsum", "LRN"} | set(RNN)


def key(node: Any) -> Any:
    """The catalogue's key of a node: its op type (standard domain) or (domain, op type)."""
    return node.op_type if node.domain in ("", "ai.onnx") else (node.domain, node.op_type)


def unmodelled_reason(node: Any) -> str | None:
    """Why a node's operator is not costed at all, or None if the catalogue costs it."""
    k = key(node)
    if k in UNMODELLED:
        return f"not modelled ({UNMODELLED[k]})"
    if (k in MATMUL or k in CONV or k in PER_ELEMENT or k in POOL or k in INPUT_SIZED or k in MOVES
            or k in ATTENTION or k in SPECIAL):
        return None
    return "not in the cost model" if not isinstance(k, tuple) else f"not in the cost model (domain {k[0]})"


def fill_shape(node: Any, shapes: dict[str, list[int] | None], types: dict[str, int]) -> list[str]:
    """onnx's shape inference does not know the com.microsoft operators: an element-wise
    one (PER_ELEMENT; normalizations included) gives its first output its first input's
    shape and type, by the operator's definition. The outputs filled in."""
    k = key(node)
    if not (isinstance(k, tuple) and k in PER_ELEMENT and node.output and node.input):
        return []
    out, first = node.output[0], node.input[0]
    if shapes.get(out) is not None or shapes.get(first) is None:
        return []
    shapes[out] = list(shapes[first])
    types[out] = types.get(out) or types.get(first, 1)
    return [out]


def attr(node: Any, name: str, default: Any) -> Any:
    from onnx import helper

    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def convolution(k: Any) -> bool:
    """Whether a catalogue key (`key(node)`) is a convolution."""
    return k in CONV or k == "ConvTranspose"


def op_flops(node: Any, shapes: dict[str, list[int] | None]) -> float | None:
    """FLOPs per sample of one operator from its shapes; None where it cannot be costed
    (see `unmodelled_reason`, or a shape it needs is unknown)."""
    if unmodelled_reason(node) is not None:
        return None
    k = key(node)
    ins = [shapes.get(x) if x else None for x in node.input]
    out = shapes.get(node.output[0]) if node.output else None
    n_out = math.prod(out) if out is not None else None
    if k in MOVES:
        return 0.0
    if k in INPUT_SIZED:
        return float(math.prod(ins[0])) if ins and ins[0] is not None else None
    if n_out is None:
        return None
    if k in PER_ELEMENT:
        return PER_ELEMENT[k] * n_out
    if k in POOL:
        return float(n_out * math.prod(attr(node, "kernel_shape", [1])))
    if k in MATMUL:
        a, _ = MATMUL[k]
        return 2.0 * n_out * ins[a][-1] if ins[a] is not None else None
    if convolution(k):
        w = ins[CONV.get(k, 1)] if len(ins) > CONV.get(k, 1) else None
        if w is None:
            return None
        kernel = math.prod(w[2:])
        if k == "ConvTranspose":  # W: [C, M/group, k...]: every input element meets M/group x kernel weights
            return 2.0 * math.prod(ins[0]) * w[1] * kernel + (n_out if len(node.input) > 2 else 0) if ins[0] else None
        return 2.0 * n_out * w[1] * kernel + (n_out if len(node.input) > 2 and k == "Conv" else 0)
    if k == "Gemm":
        if ins[0] is None:
            return None
        kk = ins[0][0] if attr(node, "transA", 0) else ins[0][-1]
        return 2.0 * n_out * kk + (n_out if len(node.input) > 2 else 0)
    if k == "LRN":
        return float(n_out * (attr(node, "size", 1) + 3))
    if k == "Einsum":
        return _einsum(node, ins)
    if k in RNN:
        return _rnn(node, ins, RNN[k])
    return _attention(node, ins)


# operators that launch no kernel (a view of their input, a shape) or make a constant: no work on
# any device (issue 72, item 3); their tensors still cross devices. Transpose, Slice and Concat copy
FREE = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Shape", "Size", "Dropout", "Constant",
        "ConstantOfShape"}


def op_rows(node: Any, shapes: dict[str, list[int] | None]) -> float | None:
    """The rows of an operator's matrix product per its shapes (the output's leading
    dimensions: tokens, heads batched), for the cost model's shape (issue 72); element-wise
    and normalizing operators too. The import keeps them only in a model without
    convolutions. None: no rows (convolutions, moves, an unknown shape)."""
    k = key(node)
    if k not in MATMUL and k != "Gemm" and k not in ATTENTION and k not in PER_ELEMENT:
        return None
    shape = shapes.get(node.output[0]) if node.output else None
    if k in ATTENTION and node.input:
        shape = shapes.get(node.input[0])
        if shape is not None and len(shape) == 4:  # [B, heads, S, d]; [B, S, hidden]: the tokens, below
            return float(math.prod(shape[:-1]))
    if shape is None or len(shape) < 2:
        return None
    return float(math.prod(shape[:-1])) or None


def _einsum(node: Any, ins: list[list[int] | None]) -> float | None:
    eq = attr(node, "equation", b"")
    eq = (eq.decode() if isinstance(eq, bytes) else eq).replace(" ", "")
    lhs = eq.split("->")[0].split(",")
    if len(lhs) != len(ins) or any(s is None for s in ins):
        return None
    sizes: dict[str, int] = {}
    for term, shape in zip(lhs, ins):
        if "..." in term:  # the ellipsis stands for the dimensions the letters do not name
            extra = len(shape) - (len(term) - 3)
            term = term.replace("...", "".join(chr(0x100 + i) for i in range(extra)))
        if len(term) != len(shape):
            return None
        for label, n in zip(term, shape):
            sizes[label] = max(sizes.get(label, 1), n)
    total = float(math.prod(sizes.values()))
    return 2.0 * total * max(len(ins) - 1, 1) if len(ins) > 1 else total


def _rnn(node: Any, ins: list[list[int] | None], per_unit: float) -> float | None:
    x, w, r = (ins + [None] * 3)[:3]
    if x is None or w is None or r is None:
        return None
    steps = x[1] * x[0]  # seq x batch (either layout): per sample, batch is 1 here
    dirs, hidden = w[0], r[2]
    return 2.0 * steps * (math.prod(w) + math.prod(r)) + per_unit * steps * dirs * hidden


def _attention(node: Any, ins: list[list[int] | None]) -> float | None:
    if key(node) == (MS, "Attention"):  # input [B, S, in], weights [in, 3 hidden] (q, k, v projections)
        x, w = ins[0], ins[1]
        if x is None or w is None:
            return None
        tokens = math.prod(x[:-1])
        hidden, heads = w[1] / 3, attr(node, "num_heads", 1)
        return 2.0 * tokens * x[-1] * w[1] + 4.0 * tokens * x[-2] * hidden + 5.0 * heads * tokens * x[-2]
    q, kk = ins[0], ins[1] if len(ins) > 1 else None
    v = ins[2] if len(ins) > 2 else None
    if q is None or kk is None or v is None:
        return None
    if len(q) == 4:  # [B, heads, S, d]
        heads, sq, skv = q[1], q[2], kk[2]
        return 2.0 * q[0] * heads * sq * skv * (q[3] + v[3]) + 5.0 * q[0] * heads * sq * skv
    heads = attr(node, "q_num_heads", attr(node, "num_heads", 1))  # [B, S, heads x d]
    sq, skv = q[1], kk[1]
    return 2.0 * q[0] * sq * skv * (q[2] + v[2]) + 5.0 * q[0] * heads * sq * skv
