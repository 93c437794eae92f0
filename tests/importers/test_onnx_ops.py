"""Issue 28, defect 6: every ONNX operator is costed (against a hand count here) or listed
by name; what the cost model cannot cost is reported (`--unknown-ops warn|zero|error`),
and symbolic input dimensions come from `--input-shape` or are refused by name."""
from __future__ import annotations

import warnings
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, defs, helper, numpy_helper
from partdsl import ImportOptions, PartError, UncostedOperators, parse
from partdsl.importers import onnx_ops
from partdsl.importers.onnx_import import import_onnx

from tests.support import run_part
from tests.support.onnx_models import save as _save

F = TensorProto.FLOAT


def _weights(name: str, *shape: int):  # type: ignore[no-untyped-def]
    import numpy as np

    return numpy_helper.from_array(np.ones(shape, dtype=np.float32), name)


def _flops(path: Path, **kw) -> dict[str, float]:  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UncostedOperators)  # every operator here is costed
        return {n.name: n.flops for n in import_onnx(path, "g", options=ImportOptions(**kw)).nodes}


def test_every_standard_operator_is_costed_or_named() -> None:
    """The catalogue covers every operator of the standard opsets it was checked against;
    an operator of a newer opset is reported at import, never costed silently."""
    ops = {s.name for s in defs.get_all_schemas_with_history()
           if s.domain in ("", "ai.onnx") and s.since_version <= onnx_ops.CATALOGUE_OPSET}
    assert len(ops) > 180
    missing = [op for op in sorted(ops) if onnx_ops.unmodelled_reason(helper.make_node(op, [], [])) ==
               "not in the cost model"]
    assert not missing
    assert onnx_ops.unmodelled_reason(helper.make_node("If", [], [])) == "not modelled (control flow)"
    assert onnx_ops.unmodelled_reason(helper.make_node("Frob", [], [], domain="com.example")) == \
        "not in the cost model (domain com.example)"


def test_einsum_fastgelu_and_lstm_against_hand_counts(tmp_path: Path) -> None:
    """The issue's three: Einsum, com.microsoft FastGelu and LSTM imported with 0 FLOPs."""
    # x [N, 8, 16] . W [16, 4] by Einsum -> [N, 8, 4]: 8 x 16 x 4 multiply-adds per sample
    # FastGelu on [N, 8, 4]: 8 FLOPs per element (tanh approximation)
    # LSTM over that [N, 8, 4] sequence (layout 1: batch first, so 8 steps), hidden 6, one
    #   direction: per step the products W x (4H x 4) and R h (4H x 6), 2 x (96 + 144) FLOPs,
    #   plus 9 per hidden unit for the gates
    nodes = [helper.make_node("Einsum", ["x", "w"], ["e"], name="ein", equation="bij,jk->bik"),
             helper.make_node("FastGelu", ["e"], ["g"], name="gelu", domain="com.microsoft"),
             helper.make_node("LSTM", ["g", "W", "R"], ["y"], name="lstm", hidden_size=6, layout=1)]
    path = _save(tmp_path / "m.onnx", nodes, [helper.make_tensor_value_info("x", F, ["N", 8, 16])],
                 [helper.make_tensor_value_info("y", F, None)],
                 [_weights("w", 16, 4), _weights("W", 1, 24, 4), _weights("R", 1, 24, 6)],
                 (("", 21), ("com.microsoft", 1)))
    got = _flops(path)
    assert got["ein"] == 2 * 8 * 16 * 4
    assert got["gelu"] == 8 * 8 * 4
    assert got["lstm"] == 8 * (2 * (96 + 144) + 9 * 6)


def test_conv_with_symbolic_height_and_width(tmp_path: Path) -> None:
    """Symbolic H and W: refused by name (no FLOPs guessed), resolved by --input-shape."""
    nodes = [helper.make_node("Conv", ["img", "k"], ["c"], name="conv", pads=[1, 1, 1, 1])]
    path = _save(tmp_path / "c.onnx", nodes, [helper.make_tensor_value_info("img", F, ["N", 3, "H", "W"])],
                 [helper.make_tensor_value_info("c", F, None)], [_weights("k", 16, 3, 3, 3)])
    with pytest.raises(PartError) as e:
        import_onnx(path, "g")
    assert "input 'img'" in e.value.message and "symbolic dimension 'H'" in e.value.message
    assert "--input-shape img=1x3xNxN" in (e.value.hint or "")
    got = _flops(path, input_shapes=(("img", (1, 3, 24, 32)),))
    assert got["conv"] == 2 * 16 * 24 * 32 * 3 * 9  # same padding: 16 x 24 x 32 outputs, 27 MACs each
    for bad, what in ((("pixels", (1, 3, 2, 2)),), "no input of"), ((("img", (1, 3, 2)),), "3 dimensions given"):
        with pytest.raises(PartError, match=what):
            import_onnx(path, "g", options=ImportOptions(input_shapes=bad))


def test_attention_operators(tmp_path: Path) -> None:
    """com.microsoft Attention holds its q/k/v projection: 2 S in 3h for it, 2 S S h for
    the scores and again for the weighted values, 5 heads S S for the softmax."""
    S, d, heads = 10, 12, 2
    nodes = [helper.make_node("Attention", ["x", "w"], ["a"], name="att", domain="com.microsoft", num_heads=heads)]
    path = _save(tmp_path / "a.onnx", nodes, [helper.make_tensor_value_info("x", F, ["N", S, d])],
                 [helper.make_tensor_value_info("a", F, ["N", S, d])], [_weights("w", d, 3 * d)],
                 (("", 21), ("com.microsoft", 1)))
    assert _flops(path)["att"] == 2 * S * d * 3 * d + 4 * S * S * d + 5 * heads * S * S


UNKNOWN = """graph g = import "u.onnx" as onnx
platform { device gpu[1] { profile a100 } }
minimize latency by tasks
"""


def _unknown(tmp_path: Path) -> Path:
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Frob", ["r"], ["f1"], name="frob1", domain="com.example"),
             helper.make_node("Frob", ["f1"], ["f2"], name="frob2", domain="com.example")]
    _save(tmp_path / "u.onnx", nodes, [helper.make_tensor_value_info("x", F, ["N", 4])],
          [helper.make_tensor_value_info("f2", F, ["N", 4])], opsets=(("", 21), ("com.example", 1)))
    (tmp_path / "u.part").write_text(UNKNOWN)
    return tmp_path / "u.part"


def test_unknown_operators_warn_zero_or_error(tmp_path: Path) -> None:
    spec_file = _unknown(tmp_path)
    with pytest.warns(UncostedOperators, match=r"2 operators of 'u.onnx'.*com.example:Frob x2"):
        spec = parse(UNKNOWN, str(spec_file))
    assert spec.dense.n == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parse(UNKNOWN, str(spec_file), imports=ImportOptions("zero"))
    with pytest.raises(PartError, match="cost model cannot cost") as e:
        parse(UNKNOWN, str(spec_file), imports=ImportOptions("error"))
    assert e.value.span is not None and e.value.span.line == 1


def _main(capsys, *argv: str) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    from partdsl.cli.main import main

    code = main(list(argv))
    return code, capsys.readouterr().err


def test_the_command_line_reports_unknown_operators(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    spec_file = _unknown(tmp_path)
    code, err = _main(capsys, "check", str(spec_file))
    assert code == 0, err
    assert "warning: 2 operators of 'u.onnx' the cost model cannot cost: com.example:Frob x2" in err
    assert "Traceback" not in err and "UserWarning" not in err
    code, err = _main(capsys, "check", str(spec_file), "--unknown-ops", "error")
    assert code == 2 and "^" in err and "com.example:Frob x2" in err
    code, err = _main(capsys, "check", str(spec_file), "--unknown-ops", "zero")
    assert code == 0 and "warning" not in err
    code, err = _main(capsys, "convert", str(tmp_path / "u.onnx"), "-o", str(tmp_path / "out.part"),
                      "--unknown-ops", "error")
    assert code == 2 and "com.example:Frob" in err
    p = run_part("check", str(spec_file))  # the installed command too: one plain line on stderr
    assert p.returncode == 0 and "warning: 2 operators of 'u.onnx'" in p.stderr and "Traceback" not in p.stderr


def test_input_shape_on_the_command_line(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")]
    _save(tmp_path / "s.onnx", nodes, [helper.make_tensor_value_info("x", F, ["N", "T", 8])],
          [helper.make_tensor_value_info("y", F, None)], [_weights("w", 8, 4)])
    (tmp_path / "s.part").write_text(UNKNOWN.replace("u.onnx", "s.onnx"))
    code, err = _main(capsys, "check", str(tmp_path / "s.part"))
    assert code == 2 and "symbolic dimension 'T'" in err and "--input-shape x=1xNx8" in err
    code, err = _main(capsys, "check", str(tmp_path / "s.part"), "--input-shape", "x=1x16x8", "--json")
    assert code == 0, err
    code, err = _main(capsys, "check", str(tmp_path / "s.part"), "--input-shape", "x=1 by 16")
    assert code == 2 and "is not NAME=DIMS" in err


LIGHT = Path(__file__).resolve().parents[2] / "data" / "onnx-light"
# multiply-adds per image (G) as torchvision's model documentation lists them ("GFLOPS")
PUBLISHED_GMACS = {"resnet50": 4.09, "vgg19": 19.63, "densenet121": 2.83}


@pytest.mark.parametrize("net", PUBLISHED_GMACS)
def test_model_zoo_graphs_match_their_published_size(net: str) -> None:
    """Graphs nobody here wrote (the ONNX model zoo's, data/onnx-light/SOURCE.md): every
    operator costed, and the FLOPs (a multiply-add counts 2) within 3% of the published
    multiply-adds, the element-wise operators on top."""
    got = sum(_flops(LIGHT / f"light_{net}.onnx").values()) / 2e9
    assert got == pytest.approx(PUBLISHED_GMACS[net], rel=0.03)


def test_alexnet_with_lrn_and_dropout_is_costed_in_full() -> None:
    """LRN is costed (window size + 3 per element), Dropout moves data: nothing refused."""
    g = import_onnx(LIGHT / "light_bvlc_alexnet.onnx", "g", options=ImportOptions("error"))
    model = onnx.load(str(LIGHT / "light_bvlc_alexnet.onnx"))
    assert {"LRN", "Dropout"} <= {nd.op_type for nd in model.graph.node}
    assert sum(n.flops for n in g.nodes) > 0
