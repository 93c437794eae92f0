"""ONNX models -> graphs (`graph g = import "model.onnx" as onnx`, `part convert --from onnx`).

One node per operator (Constant nodes fold into their consumers); an edge from each
tensor's producer to each consumer; per sample: output bytes from onnx's shape inference
and dtypes, parameter bytes from the initializers an operator reads, and FLOPs from the
operator catalogue (importers/onnx_ops.py: every standard operator and the com.microsoft ones
common in exported transformers, costed or listed as not modelled). An operator the
catalogue cannot cost (not modelled, unknown, or shapes unknown) is reported by
`options.unknown_ops` (importers/import_options.py: warn, zero or error). The first dimension
of the graph inputs is the batch when it is symbolic (or 0): it is set to 1 before shape
inference, so every number is per sample and the spec's batch scales it; any other
symbolic input dimension is taken from `options.input_shapes` or refused by name. The
work of a node then comes from the device profiles of the spec (importers/cost_model.py).

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
from functools import lru_cache
from pathlib import Path
from typing import Any

from partdsl.core.errors import PartError, Span
from partdsl.core.ir import Graph, Node, Work
from partdsl.core.names import identifier
from partdsl.importers import onnx_ops
from partdsl.importers.import_options import ImportOptions, report_uncosted

FUSABLE = {"BatchNormalization", "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip", "Add", "Mul", "Gelu",
           "HardSigmoid", "HardSwish", "Erf", "Div"}
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
        v = d.dim_value  # 0 when not set
        if v > 0:
            dims.append(int(v))
        elif i == 0 or d.dim_param in batch:
            dims.append(1)  # the batch dimension: per sample
        else:
            return None
    return dims


@lru_cache(maxsize=None)
def _itemsize(elem_type: int) -> int:
    import numpy as np
    from onnx import helper

    try:
        return int(np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).itemsize)
    except (KeyError, TypeError, ValueError):
        return 4


def _bytes(shape: list[int] | None, elem_type: int) -> float:
    return 0.0 if shape is None else float(math.prod(shape) * _itemsize(elem_type))


def _module(nd) -> str | None:  # type: ignore[no-untyped-def]
    """A node's module path as torch.onnx records it: the dynamo exporter (the default since
    torch 2.9) in the `namespace` metadata, `: LlamaForCausalLM/model: LlamaModel/
    model.layers.3: LlamaDecoderLayer/.../mul_7: aten.mul.Tensor` (the path of the
    segment before the op's own); the TorchScript exporter in the name,
    `/model/layers.3/mlp/down_proj/MatMul` for `model.layers.3.mlp.down_proj`."""
    for prop in nd.metadata_props:
        if prop.key == "namespace":
            segments = prop.value.split("/")
            return segments[-2].partition(":")[0].strip() or None if len(segments) > 1 else None
    if "/" not in nd.name:
        return None
    return nd.name.strip("/").rpartition("/")[0].replace("/", ".") or None


def _fix_inputs(model, options: ImportOptions, path: Path, span: Span | None) -> None:  # type: ignore[no-untyped-def]
    """Concrete input shapes before shape inference: `options.input_shapes` where given,
    else the batch (first) dimension set to 1; any other symbolic dimension is refused."""
    g = model.graph
    inits = {t.name for t in g.initializer}
    inputs = [vi for vi in g.input if vi.name not in inits]
    given = options.shapes
    unknown = sorted(set(given) - {vi.name for vi in inputs})
    if unknown:
        raise PartError(f"--input-shape names '{unknown[0]}', which is no input of '{path.name}'", span,
                        "its inputs: " + ", ".join(vi.name for vi in inputs))
    for vi in inputs:
        dims = vi.type.tensor_type.shape.dim
        if vi.name in given:
            shape = given[vi.name]
            if len(shape) != len(dims):
                raise PartError(f"--input-shape {vi.name}: {len(shape)} dimensions given, the input has "
                                f"{len(dims)}", span, f"give {len(dims)} dimensions, the batch first (as 1)")
            for d, n in zip(dims, shape):
                d.dim_value = n
            continue
        for i, d in enumerate(dims):
            if d.HasField("dim_value") and d.dim_value > 0:
                continue
            if i == 0:
                d.dim_value = 1  # the batch: per sample
                continue
            what = f"symbolic dimension '{d.dim_param}'" if d.dim_param else "an unknown dimension"
            example = "x".join(["1"] + [str(x.dim_value) if x.dim_value > 0 else "N" for x in dims[1:]])
            raise PartError(f"import: input '{vi.name}' of '{path.name}' has {what} (dimension {i + 1} of "
                            f"{len(dims)}): its operators cannot be costed", span,
                            f"give its shape: --input-shape {vi.name}={example} with each N a number, the batch "
                            "first as 1 (in Python: parse(..., imports=ImportOptions(input_shapes=...)))")


MS_ROUNDS = 16  # shape inference reruns past com.microsoft operators (one chain of them per round)


def _shapes(onnx, model, path: Path, span: Span | None):  # type: ignore[no-untyped-def]
    """The model after onnx's shape inference, and each tensor's shape (None: unknown) and
    element type. onnx does not know the com.microsoft operators: the outputs of their
    element-wise ones are filled in (onnx_ops.fill_shape) and inference reruns from them."""
    for _ in range(MS_ROUNDS):
        try:
            model = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
        except Exception as e:  # an inconsistent model or --input-shape
            raise PartError(f"import: onnx's shape inference fails on '{path.name}' ({type(e).__name__}: {e})",
                            span, "check --input-shape against the model's inputs") from None
        g = model.graph
        batch = {d.dim_param for vi in g.input for d in vi.type.tensor_type.shape.dim[:1] if d.HasField("dim_param")}
        shapes: dict[str, list[int] | None] = {}
        types: dict[str, int] = {}
        for vi in list(g.input) + list(g.value_info) + list(g.output):
            shapes[vi.name] = _shape(vi, batch)
            types[vi.name] = vi.type.tensor_type.elem_type
        for t in g.initializer:
            shapes[t.name] = list(t.dims)
            types[t.name] = t.data_type
        filled = [o for nd in g.node if nd.domain not in ("", "ai.onnx") for o in onnx_ops.fill_shape(nd, shapes, types)]
        if not filled:
            break
        stale = set(filled)  # onnx's entries for them have unknown shapes: replaced
        keep = [vi for vi in g.value_info if vi.name not in stale]
        del g.value_info[:]
        g.value_info.extend(keep + [onnx.helper.make_tensor_value_info(o, types[o], shapes[o]) for o in filled])
    return model, shapes, types


def _label(node) -> str:  # type: ignore[no-untyped-def]
    k = onnx_ops.key(node)
    return k if isinstance(k, str) else f"{k[0]}:{k[1]}"


def _load(path: Path, span: Span | None, options: ImportOptions) -> tuple[Any, list, dict[str, float], dict, dict]:
    """The model's graph with shapes inferred, its operators, and its Constant nodes folded
    into their consumers' parameters: (graph, operators, constant bytes, shapes, types)."""
    onnx = _onnx()
    try:
        model = onnx.load(str(path), load_external_data=False)  # shapes only: a 16 GB .data file stays on disk
    except FileNotFoundError:
        raise PartError(f"import: no such file '{path}'", span, "paths are relative to the spec file's folder") from None
    except Exception as e:  # onnx raises its own errors (DecodeError, ValidationError, ...)
        raise PartError(f"import: '{path}' is not a valid ONNX model ({type(e).__name__}: {e})".strip(), span,
                        "export it again with torch.onnx.export or onnx.save") from None
    _fix_inputs(model, options, path, span)
    model, shapes, types = _shapes(onnx, model, path, span)
    consts: dict[str, float] = {}
    ops = []
    for nd in model.graph.node:
        if nd.op_type == "Constant" and nd.domain in ("", "ai.onnx"):  # folded into its consumers, as parameters
            v = onnx_ops.attr(nd, "value", None)
            for o in nd.output:
                consts[o] = float(len(v.raw_data)) if v is not None and v.raw_data else 0.0
                if v is not None:
                    shapes[o], types[o] = list(v.dims), v.data_type
            continue
        ops.append(nd)
    if not ops:
        raise PartError(f"import: '{path}' has no operators (is it an ONNX model?)", span,
                        "export the model with its graph (torch.onnx.export or onnx.save)")
    return model.graph, ops, consts, shapes, types


def _chains(ops: list, preds: list[list[int]], consumers: list[list[int]]) -> list[int]:
    """`--fuse`: each operator's chain head; a FUSABLE operator with one producer, which has
    no other consumer, joins its producer's chain (Conv + BatchNormalization + Relu, ...)."""
    group = list(range(len(ops)))
    for i, nd in enumerate(ops):
        if nd.op_type in FUSABLE and len(preds[i]) == 1:
            p = preds[i][0]
            head = group[p]
            if len(consumers[p]) == 1 and ops[head].op_type in {"Conv", "ConvTranspose", "Gemm", "MatMul"} | FUSABLE:
                group[i] = head
    return group


def import_onnx(path: Path, name: str, span: Span | None = None, fuse: bool = False,
                options: ImportOptions = ImportOptions()) -> Graph:
    from partdsl.core.assemble import assemble_graph, output_tensors

    g, ops, consts, shapes, types = _load(path, span, options)
    inits = {t.name: t for t in g.initializer}
    ins = [list(nd.input) for nd in ops]  # read once: a protobuf field access costs a copy each time
    outs = [list(nd.output) for nd in ops]
    producer = {o: i for i, os in enumerate(outs) for o in os}
    used: set[str] = set()
    names = [identifier(nd.name or f"{nd.op_type}_{i}", used) for i, nd in enumerate(ops)]
    uncosted: dict[tuple[str, str], int] = {}
    flops: list[float] = []
    read = {x for xs in ins for x in xs} | {vi.name for vi in g.output}  # outputs whose bytes matter
    for nd, os in zip(ops, outs):
        f = onnx_ops.op_flops(nd, shapes)
        if f is None or any(o in read and shapes.get(o) is None for o in os):
            why = onnx_ops.unmodelled_reason(nd) or "shapes unknown"
            uncosted[(_label(nd), why)] = uncosted.get((_label(nd), why), 0) + 1
        flops.append(f or 0.0)
    report_uncosted(uncosted, options, path, span)
    conv_free = not any(onnx_ops.convolution(onnx_ops.key(nd)) for nd in ops)
    # a model with convolutions is costed by the batch throughout (DiviML's calibration), its matrix products too
    rows = [onnx_ops.op_rows(nd, shapes) if conv_free else None for nd in ops]
    weight = {x: _bytes(list(t.dims), t.data_type) for x, t in inits.items()} | consts
    outb = [sum(_bytes(shapes.get(o), types.get(o, 1)) for o in os) for os in outs]
    dtype = [DTYPE.get(types.get(os[0], 1), "fp32") if os else "fp32" for os in outs]
    preds = [sorted({producer[x] for x in xs if x in producer}) for xs in ins]
    consumers: list[list[int]] = [[] for _ in ops]
    for i, ps in enumerate(preds):
        for p in ps:
            consumers[p].append(i)
    group = _chains(ops, preds, consumers) if fuse else list(range(len(ops)))  # the head of each node's chain
    tied = _tied(ins, group, {x: weight[x] for x in inits})
    params = [sum(weight.get(x, 0.0) for x in xs if x not in tied) for xs in ins]
    members_of: dict[int, list[int]] = {}
    for i, h in enumerate(group):
        members_of.setdefault(h, []).append(i)
    heads = sorted(members_of)
    nodes: list[Node] = []
    taken: set[str] = set()
    for h in heads:
        members = members_of[h]
        last = members[-1]
        label = names[h] if len(members) == 1 else names[h] + "_" + "_".join(ops[i].op_type.lower() for i in members[1:])
        label = label if label not in taken else names[h]
        taken.add(label)
        free = all(onnx_ops.key(ops[i]) in onnx_ops.FREE for i in members)  # a shape input still counts in memory
        nodes.append(Node(name=label, work=(Work(0.0),) if free else (),
                          params=sum(params[i] for i in members), out=outb[last] or None,
                          flops=sum(flops[i] for i in members),
                          dtype=dtype[h] if dtype[h] != "fp32" else None,
                          module=_module(ops[h]), span=span, rows=rows[h],
                          shares=tuple((tied[x][0], tied[x][1]) for x in dict.fromkeys(
                              x for i in members for x in ins[i] if x in tied))))
    index = {h: k for k, h in enumerate(heads)}
    edges = sorted({(index[group[p]], index[group[i]]) for i in range(len(ops)) for p in preds[i]
                    if group[p] != group[i]})
    nodes, tensors = output_tensors(nodes, [outs[members_of[h][-1]] for h in heads],
                                    _readers(ins, outs, group, producer, index, heads, members_of),
                                    lambda o: _bytes(shapes.get(o), types.get(o, 1)), span)
    return assemble_graph(name, nodes, [(nodes[a].name, span, nodes[b].name, span) for a, b in edges], span,
                          tensors)


TIE_BYTES = 2**20  # a smaller constant read by several nodes (an exporter folds equal ones) counts in each


def _tied(ins: list[list[str]], group: list[int], weight: dict[str, float]) -> dict[str, tuple[str, float]]:
    """Issue 71, item 6: the initializers of TIE_BYTES or more that several nodes (fused
    groups) read, as (a name for `shares`, bytes): a tied embedding and LM head hold one
    tensor, once per device that runs either."""
    readers: dict[str, set[int]] = {}
    for i, xs in enumerate(ins):
        for x in xs:
            if weight.get(x, 0.0) >= TIE_BYTES:
                readers.setdefault(x, set()).add(group[i])
    names: set[str] = set()
    return {x: (identifier(x, names), weight[x]) for x, hs in readers.items() if len(hs) > 1}


def _readers(ins: list[list[str]], outs: list[list[str]], group: list[int], producer: dict[str, int],
             index: dict[int, int], heads: list[int], members_of: dict[int, list[int]]) -> dict[str, set[int]]:
    """The nodes (fused groups) reading each output of a node that has several, other than
    the node itself: only those outputs can be tensors of their own (core/assemble.py
    `output_tensors`)."""
    several = {o for h in heads for o in outs[members_of[h][-1]] if len(outs[members_of[h][-1]]) > 1}
    readers: dict[str, set[int]] = {}
    for i, xs in enumerate(ins):
        for x in xs:
            if x in several and group[i] != group[producer[x]]:
                readers.setdefault(x, set()).add(index[group[i]])
    return readers


def read_onnx(path: Path, name: str, span: Span | None = None, options: ImportOptions = ImportOptions()) -> Graph:
    """importers/formats.py's reader of `onnx`."""
    return import_onnx(path, name, span, options=options)


def read_onnx_fused(path: Path, name: str, span: Span | None = None,
                    options: ImportOptions = ImportOptions()) -> Graph:
    """importers/formats.py's reader of `onnx-fused`: chains of operators fused."""
    return import_onnx(path, name, span, fuse=True, options=options)
