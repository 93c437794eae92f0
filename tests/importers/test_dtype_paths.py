"""A dtype a device has no fast path for is costed at its FP32 rate, and said so once
(issue 72, item 2: bf16 on a V100 fell back to FP32 silently, 35x an A100's time)."""
from __future__ import annotations

import warnings

import pytest
from partdsl.importers import cost_model


def test_a_missing_fast_path_is_said_once_with_the_rate_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cost_model, "_TOLD", set())
    v100 = cost_model.profile("v100")
    with pytest.warns(UserWarning, match=r"v100 has no bf16 fast path: .* FP32 rate, 14 TFLOP/s; its fast path: fp16"):
        t_bf16 = v100.time_ms(1e12, 0.0, 0.0, 1, "bf16")
    assert t_bf16 == pytest.approx(v100.time_ms(1e12, 0.0, 0.0, 1, "fp32"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once: a second bf16 operator says nothing
        v100.time_ms(1e12, 0.0, 0.0, 1, "bf16")
        cost_model.profile("a100").time_ms(1e12, 0.0, 0.0, 1, "bf16")  # a fast path: nothing to say
        v100.time_ms(1e12, 0.0, 0.0, 1, "fp16")


def test_part_generate_says_which_device_runs_a_dtype_at_fp32(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tests.support import run_part

    p = run_part("generate", "transformer", "--layers", "2", "--dtype", "bf16", "--profile", "v100",
                 "-o", str(tmp_path / "v.part"))
    assert p.returncode == 0, p.stderr
    assert p.stderr.count("v100 has no bf16 fast path") == 1 and "Traceback" not in p.stderr
