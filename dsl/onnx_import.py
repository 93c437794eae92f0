"""ONNX models -> graphs (`graph g = import "model.onnx" as onnx`, `part convert --from onnx`).

One node per operator (Constant nodes fold into their consumers); an edge from each
tensor's producer to each consumer; per sample: output bytes from onnx's shape inference
and dtypes, parameter bytes from the initializers an operator reads, and FLOPs from an
analytic model per operator (`op_flops`: Conv and ConvTranspose, Gemm and MatMul, which
also covers attention built from MatMul and Softmax, element-wise and activation ops,
pooling, normalization, reductions; data movement counts 0). The first dimension of
the graph inputs is the batch when it is symbolic (or 0): shapes are taken with it set
to 1, so every number is per sample and the spec's batch scales it. The work of a node
then comes from the device profiles of the spec (dsl/cost_model.py).

`fuse=True` merges the usual chains into one node, as DiviML's clustering step does:
an operator from FUSABLE whose one graph input comes from an operator with no other
consumer joins that operator (Conv + BatchNormalization + Relu, Gemm + Relu, MatMul +
Add, ...).

Shape inference and the model format are onnx's own (`onnx.shape_inference`); FLOPs are
counted here: onnx-tool, which also profiles per node, needs concrete input shapes, does
its own shape inference and counts MACs with its own conventions (see the README).
"""
from __future__ import annotations

import math
import re
from pathlib import Path

from partdsl.core.errors import PartError, Span
from partdsl.core.ir import Graph, Node

FUSABLE = {"BatchNormalization", "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip", "Add", "Mul", "Gelu",
           "HardSigmoid", "HardSwish", "Erf", "Div"}
ELEMENTWISE = {"Add", "Sub", "Mul", "Div", "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip", "Pow", "Sqrt",
               "Exp", "Log", "Neg", "Abs", "Erf", "Gelu", "HardSigmoid", "HardSwish", "Max", "Min", "Where",
               "Cast", "Reciprocal", "Sum", "Mean", "Elu", "Selu", "Softplus", "PRelu", "Not", "Equal", "Less",
               "Greater", "And", "Or"}
NORMS = {"BatchNormalization": 2, "LayerNormalization": 8, "InstanceNormalization": 8,
         "GroupNormalization": 8, "Softmax": 5, "LogSoftmax": 5, "LpNormalization": 3}
MOVES = {"Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Concat", "Split", "Slice", "Gather",
         "Shape", "Identity", "Expand", "Tile", "Pad", "Dropout", "ConstantOfShape", "Range", "Resize",
         "GatherElements", "ScatterND", "DepthToSpace", "SpaceToDepth"}
DTYPE = {1: "fp32", 10: "fp16", 16: "bf16", 3: "int8", 2: "int8"}  # onnx TensorProto element types


def _onnx():  # type: ignore[no-untyped-def]
    from partdsl.core.solver_errors import optional

    return optional("onnx", "onnx", "importer (Python package onnx)")


def _shape(vi, batch: set[str]) -> list[int] | None:  # type: ignore[no-untyped-def]
    t = vi.type.tensor_type
    if not t.HasField("shape"):
        return None
    dims: list[int] = []
    for i, d in enumerate(t.shape.dim):
        if d.HasField("dim_value") and d.dim_value > 0:
            dims.append(int(d.dim_value))
        elif d.HasField("dim_param") and d.dim_param in batch or i == 0:
            dims.append(1)  # the batch dimension: per sample
        else:
            return None
    return dims


def _bytes(shape: list[int] | None, elem_type: int) -> float:
    import numpy as np
    from onnx import helper

    if shape is None:
        return 0.0
    try:
        size = np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).itemsize
    except (KeyError, TypeError, ValueError):
        size = 4
    return float(math.prod(shape) * size)


def _attr(node, name: str, default):  # type: ignore[no-untyped-def]
    from onnx import helper

    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def op_flops(node, shapes: dict[str, list[int] | None]) -> float:  # type: ignore[no-untyped-def]
    """FLOPs per sample of one operator (a multiply-add counts 2), from its shapes."""
    op = node.op_type
    ins = [shapes.get(x) for x in node.input]
    outs = [shapes.get(x) for x in node.output]
    out = outs[0] if outs else None
    n_out = math.prod(out) if out else 0
    if op in ("Conv", "ConvTranspose") and ins and ins[1] is not None:
        w = ins[1]  # Conv: [M, C/group, k...]; ConvTranspose: [C, M/group, k...]
        kernel = math.prod(w[2:])
        if op == "Conv":
            flops = 2.0 * n_out * w[1] * kernel
        else:
            flops = 2.0 * (math.prod(ins[0]) if ins[0] else 0) * w[1] * kernel
        return flops + (n_out if len(node.input) > 2 else 0)
    if op == "Gemm" and ins[0] is not None:
        k = ins[0][0] if _attr(node, "transA", 0) else ins[0][-1]
        return 2.0 * n_out * k + (n_out if len(node.input) > 2 else 0)
    if op == "MatMul" and ins[0] is not None:
        return 2.0 * n_out * ins[0][-1]
    if op in NORMS:
        return float(NORMS[op] * n_out)
    if op in ("MaxPool", "AveragePool"):
        return float(n_out * math.prod(_attr(node, "kernel_shape", [1])))
    if op in ("GlobalAveragePool", "GlobalMaxPool") or op.startswith("Reduce"):
        return float(math.prod(ins[0]) if ins and ins[0] else n_out)
    if op in MOVES:
        return 0.0
    return float(n_out)  # element-wise, activations, and any other operator: one per output element


def _clean(name: str, used: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_]", "_", name) or "op"
    if not re.match(r"[A-Za-z_]", base):
        base = "n_" + base
    out, i = base, 1
    while out in used:
        i += 1
        out = f"{base}_{i}"
    used.add(out)
    return out


def import_onnx(path: Path, name: str, span: Span | None = None, fuse: bool = False) -> Graph:
    from partdsl.dsl.assemble import assemble_graph

    onnx = _onnx()
    try:
        model = onnx.load(str(path))
        model = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except FileNotFoundError:
        raise PartError(f"import: no such file '{path}'", span, "paths are relative to the spec file's folder") from None
    except Exception as e:  # onnx raises its own errors (DecodeError, ValidationError, ...)
        raise PartError(f"import: '{path}' is not a valid ONNX model ({type(e).__name__}: {e})".strip(), span,
                        "export it again with torch.onnx.export or onnx.save") from None
    g = model.graph
    batch = {d.dim_param for vi in g.input for d in vi.type.tensor_type.shape.dim[:1] if d.HasField("dim_param")}
    inits = {t.name: t for t in g.initializer}
    shapes: dict[str, list[int] | None] = {}
    types: dict[str, int] = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        shapes[vi.name] = _shape(vi, batch)
        types[vi.name] = vi.type.tensor_type.elem_type
    for t in inits.values():
        shapes[t.name] = list(t.dims)
        types[t.name] = t.data_type
    consts: dict[str, float] = {}
    ops = []
    for nd in g.node:
        if nd.op_type == "Constant":  # folded into its consumers, as parameters
            v = _attr(nd, "value", None)
            for o in nd.output:
                consts[o] = float(len(v.raw_data)) if v is not None and v.raw_data else 0.0
                if v is not None:
                    shapes[o], types[o] = list(v.dims), v.data_type
            continue
        ops.append(nd)
    if not ops:
        raise PartError(f"import: '{path}' has no operators (is it an ONNX model?)", span,
                        "export the model with its graph (torch.onnx.export or onnx.save)")
    producer = {o: i for i, nd in enumerate(ops) for o in nd.output}
    used: set[str] = set()
    names = [_clean(nd.name or f"{nd.op_type}_{i}", used) for i, nd in enumerate(ops)]
    flops = [op_flops(nd, shapes) for nd in ops]
    params = [sum(_bytes(list(inits[x].dims), inits[x].data_type) for x in nd.input if x in inits)
              + sum(consts.get(x, 0.0) for x in nd.input) for nd in ops]
    outb = [sum(_bytes(shapes.get(o), types.get(o, 1)) for o in nd.output) for nd in ops]
    dtype = [DTYPE.get(types.get(nd.output[0], 1), "fp32") if nd.output else "fp32" for nd in ops]
    preds = [sorted({producer[x] for x in nd.input if x in producer}) for nd in ops]
    consumers: list[list[int]] = [[] for _ in ops]
    for i, ps in enumerate(preds):
        for p in ps:
            consumers[p].append(i)
    group = list(range(len(ops)))  # fused: the head of each chain
    if fuse:
        for i, nd in enumerate(ops):
            if nd.op_type in FUSABLE and len(preds[i]) == 1:
                p = preds[i][0]
                head = group[p]
                if len(consumers[p]) == 1 and ops[head].op_type in {"Conv", "ConvTranspose", "Gemm", "MatMul"} | FUSABLE:
                    group[i] = head
    heads = sorted(set(group))
    nodes: list[Node] = []
    for h in heads:
        members = [i for i in range(len(ops)) if group[i] == h]
        last = members[-1]
        label = names[h] if len(members) == 1 else names[h] + "_" + "_".join(ops[i].op_type.lower() for i in members[1:])
        nodes.append(Node(name=label if label not in {n.name for n in nodes} else names[h],
                          params=sum(params[i] for i in members), out=outb[last] or None,
                          flops=sum(flops[i] for i in members), dtype=dtype[h] if dtype[h] != "fp32" else None,
                          span=span))
    index = {h: k for k, h in enumerate(heads)}
    edges = sorted({(index[group[p]], index[group[i]]) for i in range(len(ops)) for p in preds[i]
                    if group[p] != group[i]})
    return assemble_graph(name, nodes, [(nodes[a].name, span, nodes[b].name, span) for a, b in edges], span)
