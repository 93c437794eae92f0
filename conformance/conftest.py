"""The framework conformance tier (issue 71): plans partdsl exports, handed to the
frameworks' own code. `make test-frameworks` runs it in its own virtual environment
(.venv-frameworks) with the newest releases of torch (the CPU build), transformers,
megatron-core, torchtitan and DeepSpeed (conformance/requirements.txt); `make test` and
`make demo` never need them.

Each model is built by `transformers` with random weights (a Llama, a Mistral and a Qwen2
shape), exported by `torch.export` to a .pt2 and planned as a user would:
`part convert M.pt2 --group-by layer`, `part solve`, `part export --format F --json`."""
from __future__ import annotations

from pathlib import Path

import pytest

# the tests' folder is on sys.path (pytest inserts a test file's folder when it has no __init__.py)
from support import FAMILIES, TOKENS, Plans, hf_model


@pytest.fixture(scope="session")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each family's model as torch.export writes it."""
    import torch

    out = {}
    folder = tmp_path_factory.mktemp("pt2")
    for family in FAMILIES:
        model = hf_model(family)
        ids = torch.randint(0, 512, (1, TOKENS), generator=torch.Generator().manual_seed(1))
        out[family] = folder / f"{family}.pt2"
        torch.export.save(torch.export.export(model, (ids,), kwargs={"use_cache": False}), str(out[family]))
    return out


@pytest.fixture
def plans(tmp_path: Path, exported: dict[str, Path]):  # type: ignore[no-untyped-def]
    """plans(family, devices, interleave=1) -> Plans."""
    def make(family: str, devices: str, interleave: int = 1) -> Plans:
        folder = tmp_path / f"{family}-{devices.replace(',', '_').replace('=', '')}-v{interleave}"
        folder.mkdir()
        return Plans(folder, exported[family], devices, interleave)
    return make
