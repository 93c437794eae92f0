"""The first run after an install compiles the numba kernels for some seconds: one line
on the terminal says so (issue 76: about 10 s without a word), and a run that reads
them from numba's cache says nothing. stderr is a pseudo-terminal here, as a user's is;
an empty NUMBA_CACHE_DIR stands for a fresh install."""
from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from partdsl.kernels.jit import HAVE_NUMBA, NOTICE

ROOT = Path(__file__).resolve().parents[2]


def _stderr_on_a_terminal(cache: Path) -> str:
    main, sub = pty.openpty()
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    p = subprocess.Popen([sys.executable, "-m", "partdsl.cli.main", "solve", str(ROOT / "examples" / "tiny.part"),
                          "--method", "dp"], stdout=subprocess.PIPE, stderr=sub, env=env)
    os.close(sub)
    err = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the terminal's far end closed
            break
        if not chunk:
            break
        err += chunk
    p.communicate(timeout=600)
    os.close(main)
    assert p.returncode == 0, err
    return err.decode()


@pytest.mark.slow  # a process of its own (tests/conftest.py: the tiers)
def test_the_first_compile_says_so_once_and_a_cached_run_says_nothing(tmp_path: Path) -> None:
    assert HAVE_NUMBA
    first = _stderr_on_a_terminal(tmp_path)
    assert first.count(NOTICE) == 1, first
    assert NOTICE not in _stderr_on_a_terminal(tmp_path)
