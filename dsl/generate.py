"""Deprecated: REGAL-style graphs are made by `partdsl.dsl.regal`."""
from __future__ import annotations

import warnings

from partdsl.dsl.regal import *  # noqa: F401,F403

warnings.warn("partdsl.dsl.generate is deprecated: use partdsl.dsl.regal", DeprecationWarning, stacklevel=2)
