"""Plans out (plans/): the units read from node names, a partition as a pipeline, and the
four formats, each checked against its framework's grammar as documented (docs/plans.md);
what a format cannot express is refused with the reason, exit 2, nothing written."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from partdsl.core.errors import PartError
from partdsl.dsl.builder import GraphBuilder, SpecBuilder
from partdsl.evaluator.evaluate import evaluate
from partdsl.generators.decoder_graph import Decoder, decoder_graph, decoder_spec
from partdsl.plans.baselines import baseline
from partdsl.plans.formats import WRITERS, deepspeed, fqn, megatron, vllm
from partdsl.plans.grouping import group_by
from partdsl.plans.stages import pipeline
from partdsl.plans.units import units

from tests.support import run_part


def megatron_stages(layout: str) -> list[list[str]]:
    """The layout grammar as Megatron-LM's docs give it: commas cosmetic, `(x)*N` and `x*N`
    repeat, `|` splits stages, symbols E t m L."""
    s = layout.replace(",", "")
    s = re.sub(r"\(([^)]+)\)\*(\d+)", lambda m: m.group(1) * int(m.group(2)), s)
    s = re.sub(r"(.)\*(\d+)", lambda m: m.group(1) * int(m.group(2)), s)
    stages = [list(st) for st in s.split("|")]
    assert all(c in "EtmL" for st in stages for c in st), layout
    return stages


def decoder(layers: int, gpus: int = 4):
    return decoder_spec(Decoder(layers=layers, hidden=64, heads=4, seq=16, vocab=1000), gpus=gpus)


def by_layers(spec, where: list[str]) -> np.ndarray:
    """A device per node from a device per unit (E, the layers, L)."""
    u = units(spec)
    idx = {d: i for i, d in enumerate(spec.platform.devices)}
    return np.array([idx[where[k]] for k in u.unit.tolist()])


def onnx_like(modules: bool = True) -> GraphBuilder:
    """Names (identifiers) and module paths as the ONNX import makes them of a Hugging Face
    decoder's export (`/model/layers.0/self_attn/q_proj/MatMul`)."""
    g = GraphBuilder("hf")
    onnx = ["/model/embed_tokens/Gather", "/model/Constant_3"]
    for i in range(3):
        onnx += [f"/model/layers.{i}/self_attn/q_proj/MatMul", f"/model/layers.{i}/mlp/down_proj/MatMul"]
    onnx += ["/model/norm/Mul_1", "/lm_head/MatMul"]
    names = [re.sub(r"[^A-Za-z0-9_]", "_", n) for n in onnx]
    for n, o in zip(names, onnx):
        g.node(n, 1.0, out="1 MB", params="1 MB", module=o.strip("/").rpartition("/")[0].replace("/", ".") or None
               if modules else None)
    g.edge(names[0], names[2])
    for i in range(2, len(names) - 1):
        g.edge(names[i], names[i + 1])
    for i in range(3):
        g.edge(names[1], f"_model_layers_{i}_self_attn_q_proj_MatMul")
    return g


def test_units_of_a_generated_decoder() -> None:
    spec = decoder(3)
    u = units(spec)
    names = spec.graph.nodes
    assert u.layers == 3 and u.tail == 4
    got = {nd.name: int(k) for nd, k in zip(names, u.unit)}
    assert got["embed"] == 0 and got["l1_ln1"] == 1 and got["l2_add2"] == 2 and got["l3_q"] == 3
    assert got["ln_f"] == 4 and got["lm_head"] == 4
    assert u.modules == (("embed",), ("l1",), ("l2",), ("l3",), ("ln_f", "lm_head"))


def test_units_of_onnx_names_skip_containers_and_place_glue() -> None:
    spec = SpecBuilder(onnx_like()).device("gpu", 2, link="10 GB/s").minimize("bottleneck").build()
    u = units(spec)
    assert u.modules == (("model.embed_tokens",), ("model.layers.0",), ("model.layers.1",), ("model.layers.2",),
                         ("model.norm", "lm_head"))
    const = spec.graph.index["_model_Constant_3"]
    assert u.unit[const] == 0  # no layer before it: it runs with the embedding, not as a module `model`
    spec = SpecBuilder(onnx_like(modules=False)).device("gpu", 2, link="10 GB/s").minimize("bottleneck").build()
    u = units(spec)  # names only: the same units, named as the names go
    assert u.modules == (("model_embed_tokens",), ("model_layers_0",), ("model_layers_1",), ("model_layers_2",),
                         ("model_norm", "lm_head"))
    const = spec.graph.index["_model_Constant_3"]
    assert u.unit[const] == 0  # no layer before it: it runs with the embedding, not as a module `model`


def test_a_node_between_layers_is_refused_by_name() -> None:
    g = onnx_like(modules=False).node("_model_Add_9", 1.0)
    g.edge("_model_layers_0_mlp_down_proj_MatMul", "_model_Add_9").edge("_model_Add_9", "_model_layers_1_self_attn_q_proj_MatMul")
    spec = SpecBuilder(g).device("gpu", 2, link="10 GB/s").minimize("bottleneck").build()
    with pytest.raises(PartError, match=r"between decoder layers.*_model_Add_9"):
        units(spec)
    u = units(spec, re.compile(r"^(_model_(?:layers_\d+|Add_9))"))  # the user says it is a unit of its own
    assert u.layers == 4


def test_a_tensor_carrier_goes_with_its_layer() -> None:
    """Issue 71.5: a fused QKV (GPT-2's `split`) sends each output as a tensor of its own; its
    carriers (`qkv~1` ...) had no module path and stood 'between decoder layers'."""
    from partdsl.dsl.parser import parse

    spec = parse("""
    graph g {
      node embed { work 1 ms on gpu; module "transformer.wte" }
      node qkv { work 1 ms on gpu; module "transformer.h.0.attn" }
      node q { work 1 ms on gpu; module "transformer.h.0.attn" }
      node k { work 1 ms on gpu; module "transformer.h.0.attn" }
      node mlp1 { work 1 ms on gpu; module "transformer.h.1.mlp" }
      node head { work 1 ms on gpu; module "lm_head" }
      embed -> qkv
      qkv -> {q} out 1 MB
      qkv -> {k} out 1 MB
      q -> mlp1
      k -> mlp1
      mlp1 -> head
    }
    platform { device gpu[2] { memory 16 GB; link 10 GB/s } }
    minimize bottleneck
    """)
    carriers = [nd for nd in spec.graph.nodes if nd.tensor_of]
    assert [(nd.name, nd.module) for nd in carriers] == [("qkv~1", "transformer.h.0.attn"),
                                                          ("qkv~2", "transformer.h.0.attn")]
    u = units(spec)
    assert u.layers == 2 and u.modules[1] == ("transformer.h.0",)
    assert {int(u.unit[spec.graph.index[nd.name]]) for nd in carriers} == {1}


def test_a_graph_without_layers_is_refused() -> None:
    g = GraphBuilder("cnn").node("conv", 1.0).node("fc", 1.0).edge("conv", "fc")
    with pytest.raises(PartError, match="no node .* is in a decoder layer"):
        units(SpecBuilder(g).device("gpu", 2, link="10 GB/s").minimize("bottleneck").build())


def test_megatron_layout_reads_back_as_the_plan() -> None:
    spec = decoder(8)
    where = ["gpu[0]"] * 3 + ["gpu[1]"] * 3 + ["gpu[2]"] * 2 + ["gpu[3]"] * 2  # E l1 l2 | l3-5 | l6 l7 | l8 L
    line = pipeline(spec, by_layers(spec, where), units(spec))
    doc = megatron(line)
    stages = megatron_stages(doc["pipeline_model_parallel_layout"])
    assert doc["pipeline_model_parallel_layout"] == "Et*2|t*3|t*2|tL"
    assert [st.count("t") for st in stages] == [2, 3, 2, 1]
    flat = [c for st in stages for c in st]
    assert flat[0] == "E" and flat[-1] == "L" and flat.count("t") == doc["num_layers"] == 8
    assert len(stages) % doc["pipeline_model_parallel_size"] == 0
    assert "decoder_first_pipeline_num_layers" not in doc  # middle stages 3 and 2: not expressible so
    even = ["gpu[0]"] * 3 + ["gpu[1]"] * 3 + ["gpu[2]"] * 3 + ["gpu[3]"]  # 2 | 3 | 3 | 0 + L
    doc = megatron(pipeline(spec, by_layers(spec, even), units(spec)))
    assert doc["pipeline_model_parallel_layout"] == "Et*2|t*3|t*3|L"
    # Megatron's TransformerConfig refuses a last stage of 0 layers (issue 71.2): the layout only
    assert "decoder_last_pipeline_num_layers" not in doc and "uneven_args" not in doc
    even = ["gpu[0]"] * 2 + ["gpu[1]"] * 3 + ["gpu[2]"] * 3 + ["gpu[3]"] * 2  # 1 | 3 | 3 | 1 + L
    doc = megatron(pipeline(spec, by_layers(spec, even), units(spec)))
    assert (doc["decoder_first_pipeline_num_layers"], doc["decoder_last_pipeline_num_layers"]) == (1, 1)


def test_megatron_uneven_counts_only_where_its_config_takes_them() -> None:
    """transformer_config.py: first and last larger than 0, the middle stages even and not empty."""
    from partdsl.plans.formats import _megatron_takes_uneven

    assert _megatron_takes_uneven([2, 3, 3, 1]) and _megatron_takes_uneven([4, 4])
    for counts in ([0, 4], [4, 0], [2, 0, 0, 2], [1, 3, 2, 1], [0, 10, 6]):
        assert not _megatron_takes_uneven(counts), counts


def test_interleaved_chunks_are_virtual_stages_for_megatron_and_torchtitan_only() -> None:
    spec = decoder(6, gpus=2)
    where = ["gpu[0]", "gpu[0]", "gpu[1]", "gpu[1]", "gpu[0]", "gpu[0]", "gpu[1]", "gpu[1]"]  # 4 chunks, 2 ranks
    line = pipeline(spec, by_layers(spec, where), units(spec))
    doc = megatron(line)
    stages = megatron_stages(doc["pipeline_model_parallel_layout"])
    assert doc["pipeline_model_parallel_size"] == 2 and len(stages) == 4 and doc["virtual_stages_per_rank"] == 2
    assert [st.count("t") for st in stages] == [1, 2, 2, 1]
    parts = fqn(line)["module_paths_per_model_part"]
    assert parts == [["embed", "l1"], ["l2", "l3"], ["l4", "l5"], ["l6", "ln_f", "lm_head"]]
    assert fqn(line)["module_fqns_per_model_part"] == [["tok_embeddings", "layers.0"], ["layers.1", "layers.2"],
                                                       ["layers.3", "layers.4"], ["layers.5", "norm", "lm_head"]]
    for writer in (vllm, deepspeed):
        with pytest.raises(PartError, match="interleaves 2 chunks"):
            writer(line)


def test_plans_that_are_no_pipeline_are_refused() -> None:
    spec = decoder(4, gpus=3)
    u = units(spec)
    split = by_layers(spec, ["gpu[0]"] * 6)
    split[spec.graph.index["l2_up"]] = 1
    with pytest.raises(PartError, match="layer l2 is split across devices: .*l2_up on gpu\\[1\\]"):
        pipeline(spec, split, u)
    ragged = ["gpu[0]", "gpu[1]", "gpu[0]", "gpu[2]", "gpu[2]", "gpu[2]"]  # gpu[0] twice, not round by round
    with pytest.raises(PartError, match="do not form a pipeline: gpu\\[0\\] holds"):
        pipeline(spec, by_layers(spec, ragged), u)


def test_vllm_deepspeed_and_fqn_cover_every_layer_once() -> None:
    spec = decoder(7, gpus=3)
    where = ["gpu[1]"] * 3 + ["gpu[0]"] * 3 + ["gpu[2]"] * 3  # the device order is the plan's, not the names'
    line = pipeline(spec, by_layers(spec, where), units(spec))
    v = vllm(line)
    counts = [int(x) for x in v["VLLM_PP_LAYER_PARTITION"].split(",")]
    assert counts == [2, 3, 2] and sum(counts) == v["layers"] == 7 and len(counts) == v["pipeline_parallel_size"]
    assert [r["device"] for r in v["ranks"]] == ["gpu[1]", "gpu[0]", "gpu[2]"]
    ds = deepspeed(line)  # the specs: embedding, 7 layers, final norm, head (issue 71.4: the head was left out)
    assert ds["parts"] == [0, 3, 6, 10] and ds["num_stages"] == 3
    assert ds["layers"] == ["embed"] + [f"l{i}" for i in range(1, 8)] + ["ln_f", "lm_head"]
    f = fqn(line)
    flat = [m for part in f["module_paths_per_model_part"] for m in part]
    assert flat == ["embed"] + [f"l{i}" for i in range(1, 8)] + ["ln_f", "lm_head"]
    assert list(f["split_spec"]) == ["l3", "l6"]
    # torchtitan's names (issue 71.1): its Decoder's tok_embeddings, layers.N from 0, norm, lm_head
    assert f["module_fqns_per_model_part"] == [["tok_embeddings", "layers.0", "layers.1"],
                                               ["layers.2", "layers.3", "layers.4"],
                                               ["layers.5", "layers.6", "norm", "lm_head"]]


def test_vllm_refuses_a_rank_without_layers() -> None:
    """Issue 71.3: `2,3,3,0` gave vLLM a rank with no KV cache."""
    spec = decoder(8)
    where = ["gpu[0]"] * 3 + ["gpu[1]"] * 3 + ["gpu[2]"] * 3 + ["gpu[3]"]  # 2 | 3 | 3 | L only
    with pytest.raises(PartError, match=r"rank 3 \(gpu\[3\]\) holds no decoder layer") as e:
        vllm(pipeline(spec, by_layers(spec, where), units(spec)))
    assert "solve on 3 device(s)" in e.value.hint


def test_group_by_layer_plans_whole_layers_and_the_evaluator_scores_the_operators() -> None:
    from partdsl.methods.solve import solve

    spec = decoder(6)
    grouped = group_by(spec, "layer")
    assert grouped.constraints.colocate and grouped.constraints.acyclic
    assert {nd.group for nd in grouped.graph.nodes} == {"embedding", "head"} | {f"l{i}" for i in range(1, 7)}
    r = solve(grouped, method="auto", time_limit=10)
    dev = np.array([spec.platform.devices.index(r.assignment[nd.name]) for nd in spec.graph.nodes])
    assert evaluate(spec, dev).objective == pytest.approx(r.objective)
    line = pipeline(grouped, dev, units(grouped))  # every layer whole on one device
    assert sum(len(c.layers(line.units)) for c in line.chunks) == 6
    for fmt, writer in WRITERS.items():
        if line.virtual == 1 or fmt in ("megatron", "fqn"):
            assert writer(line)["format"] == fmt


def hf_onnx(path, layers: int = 3) -> None:
    """A small ONNX model whose node names are those torch.onnx gives a Hugging Face decoder."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits, nodes, x = [], [], "ids"

    def op(kind: str, name: str, ins: list[str], **kw) -> str:
        out = name + "_out"
        nodes.append(helper.make_node(kind, ins, [out], name=name, **kw))
        return out

    def weight(name: str, *shape: int) -> str:
        inits.append(numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name))
        return name

    h = op("Gather", "/model/embed_tokens/Gather", [weight("emb", 100, 16), x])
    for i in range(layers):
        a = op("MatMul", f"/model/layers.{i}/self_attn/q_proj/MatMul", [h, weight(f"q{i}", 16, 16)])
        a = op("Softmax", f"/model/layers.{i}/self_attn/Softmax", [a], axis=-1)
        m = op("MatMul", f"/model/layers.{i}/mlp/down_proj/MatMul", [a, weight(f"d{i}", 16, 16)])
        h = op("Add", f"/model/layers.{i}/Add_1", [h, m])
    h = op("Mul", "/model/norm/Mul_1", [h, weight("g", 16)])
    y = op("MatMul", "/lm_head/MatMul", [h, weight("head", 16, 100)])
    graph = helper.make_graph(nodes, "hf", [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 8])],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def test_onnx_import_keeps_module_paths_for_units_and_fqn(tmp_path) -> None:
    hf_onnx(tmp_path / "hf.onnx")
    part = tmp_path / "hf.part"
    r = run_part("convert", str(tmp_path / "hf.onnx"), "--objective", "bottleneck", "--group-by", "layer",
                 "-o", str(part))
    assert r.returncode == 0, r.stderr
    assert 'module "model.layers.1.mlp.down_proj"' in part.read_text()
    from partdsl.dsl.parser import parse_file

    spec = parse_file(part)
    u = units(spec)
    assert u.modules == (("model.embed_tokens",), ("model.layers.0",), ("model.layers.1",), ("model.layers.2",),
                         ("model.norm", "lm_head"))
    assert {nd.group for nd in spec.graph.nodes} == {"embedding", "model_layers_0", "model_layers_1",
                                                      "model_layers_2", "head"}
    plan = tmp_path / "plan.json"
    r = run_part("solve", str(part), "--json", "--time-limit", "5")
    assert r.returncode == 0, r.stderr
    plan.write_text(r.stdout)
    r = run_part("export", str(part), "--plan", str(plan), "--format", "fqn", "--json")
    assert r.returncode == 0, r.stderr
    flat = [m for chunk in json.loads(r.stdout)["module_paths_per_model_part"] for m in chunk]
    assert flat == ["model.embed_tokens", "model.layers.0", "model.layers.1", "model.layers.2", "model.norm", "lm_head"]


def test_group_by_module_depth() -> None:
    spec = SpecBuilder(onnx_like()).device("gpu", 2, link="10 GB/s").minimize("bottleneck").build()
    g = group_by(spec, "module:2")
    groups = {nd.name: nd.group for nd in g.graph.nodes}
    assert groups["_model_layers_1_mlp_down_proj_MatMul"] == "model_layers"  # a NAME the language takes
    assert groups["_lm_head_MatMul"] is None  # its path `lm_head` is shorter than 2: free
    g = group_by(spec, "module:3")
    assert g.graph.nodes[g.graph.index["_model_layers_1_mlp_down_proj_MatMul"]].group == "model_layers_1"
    assert {nd.group for nd in group_by(spec, "module:1").graph.nodes} == {"model", "lm_head"}
    names_only = SpecBuilder(onnx_like(modules=False)).device("gpu", 2, link="10 GB/s").minimize("bottleneck").build()
    with pytest.raises(PartError, match="leaves 0 group"):  # `model_layers_1_mlp_down_proj` is one part deep
        group_by(names_only, "module:2")
    with pytest.raises(PartError, match="not a grouping"):
        group_by(spec, "module:x")


def test_cli_convert_solve_export(tmp_path) -> None:
    src = tmp_path / "d.part"
    assert run_part("generate", "transformer", "--layers", "6", "--hidden", "64", "--heads", "4", "--seq", "16",
                    "--vocab", "1000", "--gpus", "4", "-o", str(src)).returncode == 0
    op = tmp_path / "op.json"
    r = run_part("solve", str(src), "--json", "--method", "greedy")  # one pass: a plan on any machine
    assert r.returncode == 0, r.stderr
    op.write_text(r.stdout)
    out = tmp_path / "layout.json"
    r = run_part("export", str(src), "--plan", str(op), "--format", "megatron", "-o", str(out))
    assert r.returncode == 2 and "split across devices" in r.stderr and "--group-by" in r.stderr
    assert not out.exists()
    grouped = tmp_path / "g.part"
    r = run_part("convert", str(src), "--group-by", "layer", "-o", str(grouped))
    assert r.returncode == 0, r.stderr
    assert "acyclic, colocate by group" in r.stderr
    plan = tmp_path / "plan.json"
    r = run_part("solve", str(grouped), "--json", "--time-limit", "5")
    assert r.returncode == 0, r.stderr
    plan.write_text(r.stdout)
    for fmt in WRITERS:
        r = run_part("export", str(grouped), "--plan", str(plan), "--format", fmt, "-o", str(out))
        if r.returncode == 2:  # an interleaved plan is refused by the one-stage-per-rank formats, a rank
            # without layers by vllm
            assert fmt in ("vllm", "deepspeed") and ("interleaves" in r.stderr or "holds no decoder layer" in r.stderr)
            continue
        assert r.returncode == 0, r.stderr
        doc = json.loads(out.read_text())
        assert doc["format"] == fmt and doc["objective"]["value"] == pytest.approx(json.loads(plan.read_text())["objective"])
        assert "part eval" in r.stdout
    r = run_part("export", str(grouped), "--format", "vllm")
    assert r.returncode == 2 and "--format needs --plan" in r.stderr
    r = run_part("export", str(grouped), "--plan", str(plan), "--format", "vllm", "--mps", "x.mps")
    assert r.returncode == 2 and "one or the other" in r.stderr
    r = run_part("convert", str(src), "--group-by", "module:0")
    assert r.returncode == 2 and "not a grouping" in r.stderr


def test_vllm_even_split_gives_the_remainder_to_the_ranks_before_the_last() -> None:
    from partdsl.plans.baselines import _layer_counts

    assert _layer_counts("vllm", 10, 4) == [2, 3, 3, 2]
    assert _layer_counts("vllm", 32, 8) == [4] * 8
    assert _layer_counts("uniform", 12, 4) == [3] * 4
    with pytest.raises(PartError, match="needs the 5 stages to divide the 12 layers"):
        _layer_counts("uniform", 12, 5)


@pytest.mark.parametrize("seed", range(20))
def test_parameters_split_follows_deepspeeds_dp_written_as_a_recursion(seed: int) -> None:
    """deepspeed_balanced against the recursion it vectorizes (DeepSpeed 0.19's
    partition_balanced; conformance/test_deepspeed.py runs DeepSpeed's own): a split of i
    items into j parts extends the best split of k items into j - 1, least spread first,
    the latest k on a tie."""
    from functools import cache

    from partdsl.plans.baselines import deepspeed_balanced

    rng = np.random.default_rng(seed)
    n, p = int(rng.integers(1, 10)), int(rng.integers(1, 5))
    w = rng.integers(0, 4, n).astype(float)

    @cache
    def best(i: int, j: int) -> tuple[float, float, float, int]:  # (spread, largest, smallest, cut)
        if j == 0:
            return (0.0, 0.0, float("inf"), 0) if i == 0 else (float("inf"),) * 3 + (0,)
        out = (float("inf"), float("inf"), float("inf"), 0)
        for k in range(i):
            _, hi, lo, _ = best(k, j - 1)
            seg = float(w[k:i].sum())
            top, bottom = max(hi, seg), min(lo, seg)
            if top - bottom <= out[0]:
                out = (top - bottom, top, bottom, k)
        return out

    got = deepspeed_balanced(w, p)
    if n <= p:
        assert got == [min(k, n) for k in range(p + 1)]
        return
    want = [n]
    for j in range(p, 0, -1):
        want.append(best(want[-1], j)[3])
    assert got == want[::-1]


def test_parameters_split_of_llama_8b_on_eight_stages() -> None:
    """Issue 71.9: DeepSpeed's current partitioner splits Llama 3 8B's 35 specs (embedding,
    32 layers, norm, head) 2, 5, 5, 5, 5, 4, 4, 2 layers over 8 stages."""
    from partdsl.plans.baselines import deepspeed_balanced

    w = np.array([128256 * 4096] + [218103808] * 32 + [4096, 128256 * 4096], dtype=float)
    b = deepspeed_balanced(w, 8)
    assert [sum(1 <= i <= 32 for i in range(b[r], b[r + 1])) for r in range(8)] == [2, 5, 5, 5, 5, 4, 4, 2]


def test_baselines_take_their_best_order_of_the_device_classes() -> None:
    """Issue 71.9: a baseline is scored under the order of GPUs that suits it best, not
    partdsl's: every distinct order of the classes over the ranks is tried."""
    from partdsl.core.orders import multiset_orders
    from partdsl.plans.baselines import best_ranks

    assert len(list(multiset_orders([0] * 4 + [1] * 4))) == 70
    assert sorted(set(multiset_orders([0, 1, 1]))) == [(0, 1, 1), (1, 0, 1), (1, 1, 0)]
    spec = (SpecBuilder(decoder_graph(Decoder(layers=8, hidden=256, heads=4, seq=64, ffn=1024, vocab=32000)))
            .device("v100", 2, profile="v100").device("h100", 2, profile="h100").minimize("bottleneck").build())
    grouped = group_by(spec, "layer")
    u = units(grouped)
    scores = {}
    for order in multiset_orders(list(spec.platform.device_class)):
        pool = {c: [d for d, k in zip(spec.platform.devices, spec.platform.device_class) if k == c] for c in set(order)}
        ranks = [pool[c].pop(0) for c in order]
        scores[order] = evaluate(spec, baseline(grouped, u, "uniform", ranks)).objective
    ranks, dev = best_ranks(grouped, u, "uniform", lambda d: evaluate(spec, d).objective)
    assert evaluate(spec, dev).objective == min(scores.values()) < scores[(0, 0, 1, 1)]


@pytest.mark.parametrize("objective", ["bottleneck", "latency"])
def test_partdsl_is_never_worse_than_the_splits_people_make(objective: str) -> None:
    """Two GPU generations, training throughput (bottleneck) and serving latency: the layer
    plan, proven optimal, against Megatron's uniform, vLLM's even and DeepSpeed's
    parameters splits over the same ranks, each scored by the evaluator."""
    from partdsl.generators.decoder_graph import decoder_graph
    from partdsl.methods.solve import solve
    from partdsl.plans.baselines import BASELINES, best_ranks

    model = Decoder(layers=8 if objective == "bottleneck" else 4, hidden=256, heads=4, seq=128, vocab=32000,
                    dtype="bf16")  # the latency IP is over operators: 4 layers keep it to seconds
    spec = (SpecBuilder(decoder_graph(model)).device("h100", 2, profile="h100").device("a100", 2, profile="a100")
            .minimize(objective).build())
    grouped = group_by(spec, "layer")
    # the DP over ideals proves the bottleneck plan; Tarnawski's latency IP the latency plan
    r = solve(grouped, method="auto" if objective == "bottleneck" else "exact", time_limit=60)
    assert r.status.value == "optimal"
    ours = evaluate(spec, np.array([spec.platform.devices.index(r.assignment[nd.name]) for nd in spec.graph.nodes]))
    u = units(grouped)
    scores = {k: evaluate(spec, best_ranks(grouped, u, k, lambda d: evaluate(spec, d).objective)[1])
              for k in BASELINES}  # each under the order of GPUs that suits it best
    assert all(ev.feasible for ev in scores.values())
    assert all(ours.objective <= ev.objective * (1 + 1e-9) for ev in scores.values()), \
        (ours.objective, {k: ev.objective for k, ev in scores.items()})
    if objective == "bottleneck":  # the head and embedding weigh on the even splits' last and first stages
        assert max(ev.objective for ev in scores.values()) > ours.objective * 1.05


def test_hugging_face_llama_exported_by_torch_plans_with_its_own_module_names(tmp_path) -> None:
    """examples/llama_tiny.onnx: transformers' LlamaForCausalLM through torch.onnx's dynamo
    exporter (module paths in the `namespace` metadata, names like `node_MatMul_12`)."""
    from tests.support import EXAMPLES

    part = tmp_path / "llama.part"
    r = run_part("convert", str(EXAMPLES / "llama_tiny.onnx"), "--objective", "bottleneck", "--group-by", "layer",
                 "-o", str(part))
    assert r.returncode == 0, r.stderr
    from partdsl.dsl.parser import parse_file

    spec = parse_file(part)
    u = units(spec)
    assert u.layers == 4
    assert u.modules[1:5] == tuple((f"model.layers.{i}",) for i in range(4))
    assert "model.embed_tokens" in u.modules[0] and u.modules[-1] == ("model.norm", "lm_head")
    r = run_part("solve", str(part), "--json", "--time-limit", "10")
    assert r.returncode == 0, r.stderr
    answer = json.loads(r.stdout)
    assert answer["status"] == "optimal"  # the DP over ideals, under the acyclic that --group-by layer adds
    (tmp_path / "plan.json").write_text(r.stdout)
    r = run_part("export", str(part), "--plan", str(tmp_path / "plan.json"), "--format", "fqn", "--json")
    assert r.returncode == 0, r.stderr
    flat = [m for chunk in json.loads(r.stdout)["module_paths_per_model_part"] for m in chunk]
    assert flat[-2:] == ["model.norm", "lm_head"] and flat.index("model.embed_tokens") < flat.index("model.layers.0")
    assert [m for m in flat if m.startswith("model.layers")] == [f"model.layers.{i}" for i in range(4)]
    grouped = group_by(parse_file(part), "module:3")
    assert "model_layers_2" in {nd.group for nd in grouped.graph.nodes}


def test_an_export_refusal_names_the_broken_rule_in_words(tmp_path) -> None:
    """Issue 71.7: an interleaved plan of a `--group-by layer` spec (which is `acyclic`) was
    refused with a Python repr, `Violation(kind='acyclic', ...)`, in the message."""
    from partdsl.dsl.parser import parse_file

    spec_path = Path(__file__).resolve().parents[2] / "examples" / "llama_tiny.part"
    rounds = {"embedding": "gpu[0]", "model_layers_0": "gpu[0]", "model_layers_1": "gpu[1]",
              "model_layers_2": "gpu[0]", "model_layers_3": "gpu[1]", "head": "gpu[1]"}
    plan = tmp_path / "interleaved.json"
    plan.write_text(json.dumps({nd.name: rounds[nd.group] for nd in parse_file(spec_path).graph.nodes
                                if nd.tensor_of is None}))
    r = run_part("export", str(spec_path), "--plan", str(plan), "--format", "megatron")
    assert r.returncode == 2
    assert "violates the spec: acyclic: " in r.stderr and "Violation(" not in r.stderr


def test_an_interleaved_plan_goes_through_the_documented_flow(tmp_path) -> None:
    """Issue 71.7: `--group-by layer` wrote `acyclic`, so no interleaved plan could be solved
    and exported. `--interleave 2` writes `interleave 2` instead: the plan has 2 chunks per
    GPU, round robin, and Megatron's layout has 4 virtual stages; vLLM, which has none,
    refuses it by name."""
    from partdsl.dsl.parser import parse_file

    part = tmp_path / "il.part"
    example = Path(__file__).resolve().parents[2] / "examples" / "llama_tiny.pt2"
    r = run_part("convert", str(example), "--objective", "bottleneck", "--devices", "a100=2", "--group-by", "layer",
                 "--interleave", "2", "-o", str(part))
    assert r.returncode == 0, r.stderr
    spec = parse_file(part)
    assert spec.constraints.interleave == 2 and not spec.constraints.acyclic
    r = run_part("solve", str(part), "--json", "-o", str(tmp_path / "plan.json"))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["status"] == "optimal"  # every cut of its 6 units scored
    r = run_part("export", str(part), "--plan", str(tmp_path / "plan.json"), "--format", "megatron", "--json")
    assert r.returncode == 0, r.stderr
    layout = json.loads(r.stdout)["pipeline_model_parallel_layout"]
    stages = megatron_stages(layout)
    assert len(stages) == 4 and stages[0][0] == "E" and stages[-1][-1] == "L"
    assert sum(s.count("t") for s in stages) == 4
    r = run_part("export", str(part), "--plan", str(tmp_path / "plan.json"), "--format", "vllm")
    assert r.returncode == 2 and "interleaves 2 chunks" in r.stderr
