"""Deprecated: REGAL-style graphs are made by `partdsl.generators.regal`."""
from __future__ import annotations

import warnings

from partdsl.generators.regal import *  # noqa: F401,F403

warnings.warn("partdsl.dsl.generate is deprecated: use partdsl.generators.regal", DeprecationWarning, stacklevel=2)
