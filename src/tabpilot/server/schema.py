"""Tool input schemas without pydantic's boilerplate: what a model reads in every tool list.

Dropped: each property's generated `title` ("Tabid"), `default: null` and `default: false`
(left out means none, or off), and the `null` branch of an optional argument (`anyOf: [{type: integer}, {type: null}]` becomes `type: integer`): an
argument left out is the way to say "none". Validation is unchanged: the SDK validates calls
against the full model.
"""

from __future__ import annotations

from typing import Any

_NULL = {"type": "null"}


def lean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of a tool's input schema without the boilerplate (see the module docstring)."""
    lean: dict[str, Any] = _lean(schema)
    return lean


def _lean(node: Any) -> Any:
    if isinstance(node, list):
        return [_lean(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "default" and (value is None or value is False):
            continue  # left out means none, or off
        if key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {name: _lean(sub) for name, sub in value.items()}  # names, not keywords
            continue
        out[key] = _lean(value)
    branches = out.get("anyOf")
    if isinstance(branches, list) and _NULL in branches:
        rest = [b for b in branches if b != _NULL]
        del out["anyOf"]
        if len(rest) == 1:
            out = {**rest[0], **out}
        elif all(set(b) == {"type"} for b in rest):
            out["type"] = [b["type"] for b in rest]
        else:
            out["anyOf"] = rest
    return out
