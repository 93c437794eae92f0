"""Imported first by every benchmark script: a plain message, not a traceback, when the
Python running it has no partdsl (the scripts use the installed package)."""
import importlib.util
import sys

if importlib.util.find_spec("partdsl") is None:
    sys.exit(f"{sys.executable} has no partdsl installed: run `make demo` once, then "
             f"`.venv/bin/python {sys.argv[0]} ...` (or `pip install -e .` in this Python).")
