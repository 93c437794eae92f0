"""The one table of input formats (importers/formats.py): every row's readers resolve,
`import ... as` and `part convert --from` offer exactly its names, and detection by suffix
picks the row that says so."""
from __future__ import annotations

from pathlib import Path

import pytest
from partdsl import PartError, parse
from partdsl.importers.formats import BY_NAME, CONVERTIBLE, FORMATS, IMPORTABLE, guess

from tests.support import run_part


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_every_row_names_readers_that_exist(fmt) -> None:  # type: ignore[no-untyped-def]
    assert fmt.graph or fmt.convert, fmt.name
    if fmt.graph:
        assert callable(fmt.reader())
    if fmt.convert:
        assert callable(fmt.converter())


def test_import_as_offers_the_table_s_graph_formats(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(PartError) as e:
        parse('graph g = import "x.json" as tflite\nplatform { device acc[1] }', str(tmp_path / "s.part"))
    assert "unknown import format 'tflite'" in e.value.message
    assert e.value.hint == "formats: " + ", ".join(IMPORTABLE)


def test_convert_from_offers_the_table_s_converters() -> None:
    p = run_part("convert", "x.json", "--from", "tflite")
    assert p.returncode == 2
    assert "{" + ",".join(CONVERTIBLE) + "}" in p.stderr


@pytest.mark.parametrize("name,expected", [("m.onnx", "onnx"), ("m.ONNX", "onnx"), ("p.pt2", "torch-export"),
                                           ("g.pbtxt", "regal"), ("s.part", "part"), ("g.json", None),
                                           ("g.txt", None)])
def test_suffixes_pick_one_row(name: str, expected: str | None) -> None:
    f = guess(Path(name), tuple(BY_NAME))
    assert (f.name if f else None) == expected
    assert guess(Path("g.json"), CONVERTIBLE).name == "dnn-partitioning"  # the one JSON format convert reads
