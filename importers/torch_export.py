"""torch.export programs -> graphs, without torch (`part convert model.pt2 --from
torch-export`). A `.pt2` file (torch.export.save) is a zip holding the serialized
ExportedProgram as JSON (`<name>/models/model.json`, torch/_export/serde/schema.py, major
version 8): graph nodes calling ATen operators, tensor metadata (sizes, dtype), the
signature saying which inputs are parameters, and each node's `nn_module_stack`.

One node per operator call (a getitem of a multi-output call folds into its producer), an
edge from each tensor's producer to each consumer, and per sample: output bytes from the
tensors' sizes and dtypes, parameter bytes from the parameters and buffers the call reads,
FLOPs from the same analytic rules as the ONNX import (a multiply-add counts 2; shape ops
0; elementwise 1 per output element), its module path from the innermost entry of its
`nn_module_stack`. An ATen operator the catalogue does not know is costed by
`--unknown-ops` (importers/import_options.py)."""
from __future__ import annotations

import json
import math
import re
import zipfile
from dataclasses import replace as dc_replace
from pathlib import Path
from typing import Any, Callable

from partdsl.core.errors import PartError, Span
from partdsl.core.ir import Graph, Node, Work
from partdsl.core.names import identifier
from partdsl.importers.import_options import ImportOptions, report_uncosted

SCHEMA_MAJOR = 8  # torch 2.5 to 2.13 write 8.x
BYTES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 2, 7: 4, 8: 8, 12: 1, 13: 2}  # serde ScalarType -> bytes
DTYPES = {6: "fp16", 13: "bf16"}
ZERO = frozenset("""view _unsafe_view reshape expand expand_as permute transpose t slice select unsqueeze squeeze
clone contiguous alias detach cat stack split split_with_sizes chunk unbind embedding index index_select gather
arange full full_like zeros zeros_like ones ones_like empty empty_like _to_copy to copy lift_fresh_copy
scalar_tensor type_as sym_size sym_numel flatten unflatten repeat narrow as_strided dropout native_dropout
masked_fill where clamp triu tril bitwise_not eq ne lt le gt ge logical_not _assert_tensor_metadata
sym_constrain_range_for_size new_ones new_zeros new_full __and__ __or__ bitwise_and bitwise_or""".split())
# calls that launch no kernel (a view of their input's storage, a size) or make a constant the
# compiler folds: no work on any device (issue 72, item 3); their tensors still cross devices
FREE = frozenset("""view _unsafe_view reshape expand expand_as permute transpose t slice select unsqueeze squeeze
alias detach split split_with_sizes chunk unbind sym_size sym_numel flatten unflatten narrow as_strided
arange full full_like zeros zeros_like ones ones_like empty empty_like scalar_tensor new_ones new_zeros new_full
_assert_tensor_metadata sym_constrain_range_for_size lift_fresh_copy""".split())
GEMMS = frozenset("linear mm addmm bmm matmul baddbmm".split())
ATTENTION = frozenset(("scaled_dot_product_attention", "_scaled_dot_product_flash_attention",
                       "_scaled_dot_product_efficient_attention"))
CONVS = frozenset(("convolution", "conv1d", "conv2d", "conv3d"))
ELEMENTWISE = frozenset("""add sub mul div neg pow rsqrt sqrt exp log cos sin tanh sigmoid relu abs reciprocal
mean sum amax max min rsub square erf diff cumsum""".split())
PER_ELEMENT = {"softmax": 5, "_softmax": 5, "log_softmax": 5, "_log_softmax": 5, "layer_norm": 8,
               "native_layer_norm": 8, "rms_norm": 8, "_fused_rms_norm": 8, "gelu": 8, "silu": 4,
               "group_norm": 8, "native_group_norm": 8, "batch_norm": 4, "_native_batch_norm_legit_no_training": 4}


def _bad(message: str, span: Span | None, hint: str) -> PartError:
    return PartError(f"import: {message}", span, hint)


def _program(path: Path, span: Span | None) -> dict:
    try:
        z = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        raise _bad(f"'{path}' is not a .pt2 archive ({e})", span,
                   "save the program with torch.export.save(ep, 'model.pt2'), a zip file") from None
    with z:
        found = [n for n in z.namelist() if re.fullmatch(r"(?:[^/]+/)?models/[^/]+\.json", n)]
        if not found:
            raise _bad(f"'{path}' holds no serialized program (no models/*.json)", span,
                       "save it with torch.export.save (torch 2.5 or newer)")
        try:
            data = json.loads(z.read(found[0]))
        except ValueError as e:
            raise _bad(f"'{path}': {found[0]} is not JSON ({e})", span, "save it again with torch.export.save") \
                from None
    version = (data.get("schema_version") or {}).get("major")
    if version != SCHEMA_MAJOR:
        raise _bad(f"'{path}' has torch.export schema version {version}, and partdsl reads {SCHEMA_MAJOR}.x", span,
                   "export with a torch from 2.5 to 2.13, or convert the model through ONNX")
    return data


def _size(dim: dict, where: str, span: Span | None) -> int:
    if "as_int" in dim:
        return int(dim["as_int"])
    hint = (dim.get("as_expr") or {}).get("hint") or {}
    if "as_int" in hint:
        return int(hint["as_int"])
    raise _bad(f"{where} has a symbolic size with no example value", span,
               "export with static shapes (no dynamic_shapes), or give the size a hint")


def _module(meta: dict) -> str | None:
    """The innermost `nn_module_stack` entry's path: `L__self__model.layers.0,model.layers.0,...;...`."""
    stack = meta.get("nn_module_stack") or ""
    entries = [e.split(",") for e in stack.split(";") if e]
    return (entries[-1][1] or None) if entries and len(entries[-1]) > 1 else None


def _flops(op: str, ins: list[list[int]], outs: list[list[int]]) -> float | None:
    """Analytic FLOPs of one ATen call (None: not in the catalogue)."""
    out = math.prod(outs[0]) if outs else 0
    if op in ZERO:
        return 0.0
    if op in GEMMS:
        a = ins[1] if op in ("addmm", "baddbmm") else ins[0]
        return 2.0 * out * a[-1]
    if op in CONVS:
        w = ins[1]
        return 2.0 * out * math.prod(w[1:])
    if op in ATTENTION:
        q, k, v = ins[0], ins[1], ins[2]
        heads = math.prod(q[:-2])
        return heads * (2.0 * q[-2] * k[-2] * q[-1] + 5.0 * q[-2] * k[-2] + 2.0 * q[-2] * k[-2] * v[-1])
    if op in ELEMENTWISE:
        return float(max(out, max((math.prod(s) for s in ins), default=0)))
    if op in PER_ELEMENT:
        return PER_ELEMENT[op] * float(out)
    return None


def _rows(op: str, ins: list[list[int]], outs: list[list[int]]) -> float | None:
    """The rows of a call's matrix product (its output's leading dimensions: tokens, heads
    batched), for the cost model's shape (issue 72); element-wise and normalizing calls too.
    The import keeps them only in a model without convolutions (a CNN is costed by the
    batch, as DiviML's calibration has it). None: no rows (convolutions, the rest)."""
    shape = ins[0] if op in ATTENTION and ins else (outs[0] if outs else [])
    if op not in GEMMS | ATTENTION | ELEMENTWISE and op not in PER_ELEMENT or len(shape) < 2:
        return None
    return float(math.prod(shape[:-1])) or None


def import_torch_export(path: Path, name: str, span: Span | None = None,
                        options: ImportOptions = ImportOptions()) -> Graph:
    from partdsl.core.assemble import assemble_graph, output_tensors

    module = _program(path, span)["graph_module"]
    g = module["graph"]
    tensors: dict[str, Any] = g.get("tensor_values") or {}
    weights = _weights(module.get("signature") or {})
    parameters = _weights(module.get("signature") or {}, ("parameter",))

    def dims(t: str) -> list[int]:
        meta = tensors.get(t)
        return [] if meta is None else [_size(d, f"tensor '{t}'", span) for d in meta.get("sizes", [])]

    def nbytes(t: str) -> float:
        meta = tensors.get(t)
        return 0.0 if meta is None else float(math.prod(dims(t)) * BYTES.get(meta.get("dtype"), 4))

    producer: dict[str, int] = {}
    nodes: list[Node] = []
    outputs: list[list[str]] = []  # each node's output tensors (a getitem's included)
    readers: dict[str, set[int]] = {}  # each tensor's reading nodes
    edges: set[tuple[int, int]] = set()
    used: set[str] = set()
    uncosted: dict[tuple[str, str], int] = {}
    weight_readers: dict[str, list[int]] = {}  # each parameter's reading calls (tied weights: several)
    convs = 0  # convolutions seen
    for nd in g["nodes"]:
        target = str(nd.get("target", ""))
        ins = [t for a in nd.get("inputs", []) for t in _tensors(a.get("arg", {}))]
        outs = [t for o in nd.get("outputs", []) for t in _tensors(o)]
        if not outs:  # an assertion, or a call for its effect on no tensor
            continue
        if target.startswith("_operator.getitem") or target == "operator.getitem":
            src = next((producer[t] for t in ins if t in producer), None)
            if src is not None:
                for t in outs:
                    producer[t] = src
                outputs[src] += outs
            continue
        op = target.split(".")[-2] if target.count(".") >= 2 else target
        in_dims, out_dims = [dims(t) for t in ins], [dims(t) for t in outs]
        flops = _flops(op, in_dims, out_dims)
        if flops is None:  # reported below, by --unknown-ops
            why = (op, "not in the ATen catalogue")
            uncosted[why] = uncosted.get(why, 0) + 1
            flops = 0.0
        k = len(nodes)
        dtype = (tensors.get(outs[0]) or {}).get("dtype")
        convs += op in CONVS
        params = sum(nbytes(t) for t in ins if t in weights)
        free = op in FREE  # a view of a weight still holds it (params)
        nodes.append(Node(name=identifier(outs[0], used), params=params, work=(Work(0.0),) if free else (),
                          out=sum(nbytes(t) for t in outs) or None, flops=flops, dtype=DTYPES.get(dtype),
                          module=_module(nd.get("metadata") or {}), span=span,
                          rows=_rows(op, in_dims, out_dims)))
        for t in ins:
            if t in parameters:
                weight_readers.setdefault(t, []).append(k)
            if t in producer and producer[t] != k:
                edges.add((producer[t], k))
                readers.setdefault(t, set()).add(k)
        for t in outs:
            producer[t] = k
        outputs.append(outs)
    if not nodes:
        raise _bad(f"'{path}' has no operator calls", span, "export a model with torch.export.export")
    report_uncosted(uncosted, options, path, span)
    if convs:  # a model with convolutions is costed by the batch throughout (DiviML's calibration)
        nodes = [nd if nd.rows is None else dc_replace(nd, rows=None) for nd in nodes]
    nodes = _tie(nodes, {t: ks for t, ks in weight_readers.items() if len(set(ks)) > 1}, nbytes, used)
    nodes, tensors = output_tensors(nodes, outputs, readers, nbytes, span)
    return assemble_graph(name, nodes, [(nodes[a].name, span, nodes[b].name, span) for a, b in sorted(edges)], span,
                          tensors)


def _tie(nodes: list[Node], tied: dict[str, list[int]], nbytes: Callable[[str], float], used: set[str]) -> list[Node]:
    """Issue 71, item 6: a weight read by several calls (GPT-2's embedding and LM head) is
    one tensor: each reader `shares` it instead of counting it in its parameters, so a
    device holds it once however many of its readers it runs (on two devices, a copy
    each, as Megatron keeps the tied embedding on its first and last stages)."""
    for t, ks in tied.items():
        name, size = identifier(t, used), nbytes(t)
        for k in dict.fromkeys(ks):
            nd = nodes[k]
            nodes[k] = dc_replace(nd, params=nd.params - size, shares=nd.shares + ((name, size),))
    return nodes


def _tensors(arg: dict) -> list[str]:
    """The tensor names an argument or output refers to."""
    if "as_tensor" in arg:
        return [arg["as_tensor"]["name"]]
    if "as_tensors" in arg:
        return [t["name"] for t in arg["as_tensors"]]
    if "as_optional_tensors" in arg:
        return [t["as_tensor"]["name"] for t in arg["as_optional_tensors"] if "as_tensor" in t]
    return []


def _weights(signature: dict, kinds: tuple[str, ...] = ("parameter", "buffer", "tensor_constant")) -> set[str]:
    """The graph inputs of these kinds: parameters, buffers or constants (not the user's inputs)."""
    out = set()
    for spec in signature.get("input_specs", []):
        for kind in kinds:
            if kind in spec:
                out.add(spec[kind]["arg"]["name"])
    return out


def read_torch_export(path: Path, name: str, span: Span | None = None,
                      options: ImportOptions = ImportOptions()) -> Graph:
    """importers/formats.py's reader of `torch-export`."""
    return import_torch_export(path, name, span, options=options)
