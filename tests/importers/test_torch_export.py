"""torch.export programs in, without torch (importers/torch_export.py): examples/llama_tiny.pt2
is transformers' LlamaForCausalLM saved by torch.export.save (examples/make_llama_tiny.py
regenerates it with torch, a dev-only tool). The import's FLOPs and parameter bytes against
the model's analytic counts, module paths from nn_module_stack, the plan it leads to, and
every bad file refused with the file and what is wrong, exit 2, nothing written."""
from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest
from partdsl import parse
from partdsl.convert.to_part import torch_export_to_part
from partdsl.core.errors import PartError
from partdsl.importers.cost_model import profile
from partdsl.importers.import_options import ImportOptions, UncostedOperators
from partdsl.importers.torch_export import import_torch_export

from tests.support import EXAMPLES, run_part

PT2 = EXAMPLES / "llama_tiny.pt2"
HIDDEN, FFN, LAYERS, VOCAB, SEQ = 32, 86, 4, 512, 16  # examples/make_llama_tiny.py


def test_flops_params_and_modules_of_a_llama() -> None:
    g = import_torch_export(PT2, "llama")
    linear = [nd for nd in g.nodes if re.fullmatch(r"linear(_\d+)?", nd.name)]
    per_layer = 4 * 2 * SEQ * HIDDEN * HIDDEN + 3 * 2 * SEQ * HIDDEN * FFN  # q k v o, gate up down
    assert sum(nd.flops for nd in linear) == LAYERS * per_layer + 2 * SEQ * HIDDEN * VOCAB
    weights = VOCAB * HIDDEN * 2 + LAYERS * (4 * HIDDEN * HIDDEN + 3 * HIDDEN * FFN + 2 * HIDDEN) + HIDDEN
    assert abs(sum(nd.params for nd in g.nodes) - 4 * weights) <= 64  # fp32; the rotary table is a 16-byte buffer
    mods = {nd.module for nd in linear}
    assert {f"model.layers.{i}.self_attn.q_proj" for i in range(LAYERS)} <= mods and "lm_head" in mods
    attn = [nd for nd in g.nodes if nd.name.startswith("scaled_dot_product_attention")]
    assert len(attn) == LAYERS
    assert all(nd.flops == 4 * (4 * SEQ * SEQ * (HIDDEN // 4) + 5 * SEQ * SEQ) for nd in attn)  # 4 heads
    names = {nd.name for nd in g.nodes}
    assert "to" not in names and "n_to" in names  # `to` is a keyword of the language


def test_a_pt2_plans_to_hugging_face_module_lists(tmp_path: Path) -> None:
    part = tmp_path / "llama.part"
    r = run_part("convert", str(PT2), "--objective", "bottleneck", "--group-by", "layer", "-o", str(part))
    assert r.returncode == 0, r.stderr
    r = run_part("solve", str(part), "--json", "--time-limit", "10")
    assert r.returncode == 0 and json.loads(r.stdout)["status"] == "optimal", r.stderr
    (tmp_path / "plan.json").write_text(r.stdout)
    r = run_part("export", str(part), "--plan", str(tmp_path / "plan.json"), "--format", "fqn", "--json")
    assert r.returncode == 0, r.stderr
    flat = [m for chunk in json.loads(r.stdout)["module_paths_per_model_part"] for m in chunk]
    assert flat == ["model.embed_tokens", "model.rotary_emb"] + [f"model.layers.{i}" for i in range(LAYERS)] \
        + ["model.norm", "lm_head"]


def rewritten(tmp_path: Path, change) -> Path:  # type: ignore[no-untyped-def]
    """A copy of the example with its program JSON changed."""
    out = tmp_path / "changed.pt2"
    with zipfile.ZipFile(PT2) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename.endswith("models/model.json"):
                doc = json.loads(data)
                change(doc)
                data = json.dumps(doc).encode()
            dst.writestr(item, data)
    return out


def test_bad_files_are_refused_by_name(tmp_path: Path) -> None:
    def version(doc: dict) -> None:
        doc["schema_version"]["major"] = 99

    not_zip = tmp_path / "model.pt2"
    not_zip.write_text("not a zip")
    empty = tmp_path / "empty.pt2"
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("m/archive_format", "pt2")
    cases = [(not_zip, "is not a .pt2 archive"), (empty, "holds no serialized program"),
             (rewritten(tmp_path, version), "schema version 99, and partdsl reads 8.x")]
    for path, says in cases:
        out = tmp_path / "out.part"
        r = run_part("convert", str(path), "-o", str(out))
        assert r.returncode == 2 and says in r.stderr and path.name in r.stderr, r.stderr
        assert not out.exists()


def test_an_operator_the_catalogue_does_not_know(tmp_path: Path) -> None:
    def rename(doc: dict) -> None:
        nodes = doc["graph_module"]["graph"]["nodes"]
        first = next(n for n in nodes if n["target"] == "torch.ops.aten.silu.default")
        first["target"] = "torch.ops.aten.frobnicate.default"

    path = rewritten(tmp_path, rename)
    with pytest.warns(UncostedOperators, match="frobnicate x1"):
        g = import_torch_export(path, "g")
    assert g.nodes
    with pytest.raises(PartError, match="frobnicate x1 .not in the ATen catalogue."):
        import_torch_export(path, "g", options=ImportOptions(unknown_ops="error"))


def test_outputs_read_by_different_calls_are_tensors_of_their_own(tmp_path: Path) -> None:
    """A call with two outputs, each read by another call (as `split` or `topk`): each output
    is its own tensor, sent only to the calls that read it (Tarnawski App. B), as the ONNX
    import does; before, both calls were charged the sum of the two."""
    import copy

    names: dict[str, str] = {}

    def second_output(doc: dict) -> None:
        g = doc["graph_module"]["graph"]
        readers: dict[str, list[dict]] = {}
        for n in (n for n in g["nodes"] if n.get("outputs")):  # calls, not assertions
            for a in n.get("inputs", []):
                t = a.get("arg", {}).get("as_tensor", {}).get("name")
                if t is not None and n not in readers.setdefault(t, []):
                    readers[t].append(n)
        x = next(n for n in g["nodes"] if "as_tensor" in (n.get("outputs") or [{}])[0]
                 and len(readers.get(n["outputs"][0]["as_tensor"]["name"], [])) >= 2
                 and g["tensor_values"][n["outputs"][0]["as_tensor"]["name"]]["sizes"][-1].get("as_int", 0) >= 32)
        a = x["outputs"][0]["as_tensor"]["name"]
        meta = copy.deepcopy(g["tensor_values"][a])
        meta["sizes"][-1] = {"as_int": meta["sizes"][-1]["as_int"] // 4}  # a quarter of the first output
        g["tensor_values"][a + "_second"] = meta
        x["outputs"].append({"as_tensor": {"name": a + "_second"}})
        last = readers[a][-1]  # now reads the second output
        for arg in last["inputs"]:
            if arg.get("arg", {}).get("as_tensor", {}).get("name") == a:
                arg["arg"]["as_tensor"]["name"] = a + "_second"
        names.update(first=a, reader=last["outputs"][0]["as_tensor"]["name"])

    before = import_torch_export(PT2, "g")
    g = import_torch_export(rewritten(tmp_path, second_output), "g")
    src = g.nodes[g.index[names["first"]]]
    whole = before.nodes[before.index[names["first"]]].out
    assert whole and src.out is None and not before.carriers
    sent = sorted((g.nodes[i].out, [g.nodes[b].name for a, b in g.edges if a == i]) for i, s in g.carriers)
    assert len(sent) == 2 and all(s == g.index[names["first"]] for _, s in g.carriers)
    assert sent[0] == (whole / 4, [names["reader"]])  # the second output goes to its one reader only
    assert sent[1][0] == whole and names["reader"] not in sent[1][1] and sent[1][1]
    converted = parse(torch_export_to_part(rewritten(tmp_path, second_output))).graph  # as sized hops
    assert sorted((converted.nodes[i].out, [converted.nodes[b].name for a, b in converted.edges if a == i])
                  for i, _ in converted.carriers) == sent


def test_a_tied_weight_is_one_shared_tensor(tmp_path: Path) -> None:
    """Issue 71, item 6: GPT-2 ties its LM head to its embedding, and each reader counted the
    weight (1.64x GPT-2's parameters). Here the LM head is made to read the embedding's
    weight: both readers `share` it, once in the graph's weights, and the untied example
    shares nothing."""
    def tie(doc: dict) -> None:
        for n in doc["graph_module"]["graph"]["nodes"]:
            for a in n.get("inputs", []):
                t = a.get("arg", {}).get("as_tensor", {})
                if t.get("name") == "p_lm_head_weight":
                    t["name"] = "p_model_embed_tokens_weight"

    tied, plain = import_torch_export(rewritten(tmp_path, tie), "g"), import_torch_export(PT2, "g")
    readers = [nd for nd in tied.nodes if nd.shares]
    assert len(readers) == 2 and {nd.shares for nd in readers} == {(("p_model_embed_tokens_weight", readers[0].weights),)}
    size = readers[0].weights
    assert size > 0 and all(nd.params == 0 for nd in readers)
    head = max(plain.nodes, key=lambda nd: nd.params if "lm_head" in (nd.module or "") else 0)
    assert head.params == size  # the untied head's own weight: the tied model has one copy fewer
    assert sum(nd.params for nd in tied.nodes) + size == pytest.approx(sum(nd.params for nd in plain.nodes) - size)
    assert not any(nd.shares for nd in plain.nodes)

def test_views_shapes_and_constants_cost_nothing_and_still_carry_their_tensor() -> None:
    """Issue 72, item 3: a view launches no kernel, so it has no work on any device (before:
    the 38 us launch overhead each; the embedding's 51 shape and mask operators cost 1.98 ms
    against 2.85 ms for a whole decoder layer). Its output still crosses devices."""
    spec = parse(torch_export_to_part(PT2, "bottleneck", devices={"a100": 2}))
    d, nodes = spec.dense, spec.graph.nodes
    views = [i for i, nd in enumerate(nodes)
             if re.fullmatch(r"(view|transpose|unsqueeze|expand|arange)(_\d+)?", nd.name)]
    assert len(views) > 20 and (d.work[views] == 0).all()
    assert all(nodes[i].out for i in views)  # their tensors are sent like any other
    kernels = [i for i, nd in enumerate(nodes) if re.fullmatch(r"(linear|mul|add)(_\d+)?", nd.name)]
    assert (d.work[kernels, 0] >= profile("a100").overhead * 1e3).all()
