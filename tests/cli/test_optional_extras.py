"""A missing optional package (issue 28, item 'missing optional packages'): every importer,
plot, executor and peer partitioner asks for its package through one helper
(core/solver_errors.optional), so each one exits 5 naming the partdsl extra, never
"internal error"."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

CASES = {  # (absent Python package, the extra, the command line)
    "plot": ("matplotlib", "plot", ["plot", str(EXAMPLES / "tiny.part"), "--output", "{tmp}/tiny.png"]),
    "onnx check": ("onnx", "onnx", ["check", str(EXAMPLES / "onnx_cnn.part")]),
    "onnx convert": ("onnx", "onnx", ["convert", "{tmp}/model.onnx", "--from", "onnx"]),
    "dask executor": ("distributed", "dask", ["sweep", str(EXAMPLES / "tiny.part"), "--executor",
                                               "dask://127.0.0.1:1", "--output", "{tmp}/rows.csv"]),
    "metis": ("pymetis", "peers", ["solve", "{tmp}/plain.part", "--method", "metis"]),
    "scotch": ("pyscotch", "peers", ["solve", "{tmp}/plain.part", "--method", "scotch"]),
    "kahypar": ("mtkahypar", "peers", ["solve", "{tmp}/plain.part", "--method", "kahypar"]),
    "profile": ("torch", "profile", ["profile", "{tmp}/config.json", "--output", "{tmp}/profile.json"]),
}


PLAIN = "graph g { node a { work 1 ms } node b { work 2 ms } a -> b }\nplatform { device gpu[2] { link 1 GB/s } }\n"


@pytest.mark.parametrize("case", CASES)
def test_a_missing_extra_exits_5_naming_it(case: str, tmp_path: Path) -> None:
    package, extra, argv = CASES[case]
    (tmp_path / "model.onnx").write_bytes(b"\x08\x07")  # never read: the import fails first
    (tmp_path / "plain.part").write_text(PLAIN)  # a spec the peers model (tiny.part is contiguous)
    json_out = argv[0] not in ("convert", "profile")  # they write files, no JSON
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv] + (["--json"] if json_out else [])
    code = (f"import sys; sys.modules[{package!r}] = None\n"  # the package is absent
            "from partdsl.cli.main import main\n"
            f"sys.exit(main({argv!r}))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 5, (p.stdout, p.stderr)
    assert f"pip install 'partdsl[{extra}]'" in p.stderr and "internal error" not in p.stderr, p.stderr
    if json_out:
        assert json.loads(p.stdout)["kind"] == "solver_unavailable"
