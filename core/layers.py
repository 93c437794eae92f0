"""A node's layer, from its name (`part check --table`, `part plot` at scale): its `group`
when it has one, else what a user's regular expression captures from the name, else the
name up to its last `/` or `.` (ONNX and torch names: `/encoder/layer.0/attention/MatMul`
-> `/encoder/layer.0/attention`) or up to the first `_` after a layer number (`l3_q` ->
`l3`), else the name itself."""
from __future__ import annotations

import re

from partdsl.core.errors import PartError

_NUMBERED = re.compile(r"^([A-Za-z]*\d+)_")


def layer_pattern(regex: str | None) -> re.Pattern | None:
    if regex is None:
        return None
    try:
        return re.compile(regex)
    except re.error as e:
        raise PartError(f"--layers {regex}: not a regular expression ({e})", None,
                        r"e.g. --layers 'layer\.\d+' or --layers '^(l\d+)_'") from None


def layer_of(name: str, group: str | None, pattern: re.Pattern | None = None) -> str:
    if group:
        return group
    if pattern is not None:
        m = pattern.search(name)
        if m:
            return m.group(1) if m.groups() and m.group(1) is not None else m.group(0)
    cut = max(name.rfind("/"), name.rfind("."))
    if cut > 0:
        return name[:cut]
    m = _NUMBERED.match(name)
    return m.group(1) if m else name
