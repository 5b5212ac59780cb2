"""Every request over stdio gets an answer, even one the SDK cannot read.

The SDK's stdio transport drops a line its JSON-RPC model refuses (arguments nested a few hundred
levels deep, a lone surrogate such as `"\\ud800"`) without a reply, so the client waits forever
(the SDK's HTTP transport answers 400). `guard_stdin()` puts a filter between the process's stdin
and the SDK: fd 0 becomes a pipe fed by a thread that passes every line through unchanged, except
a request the SDK would refuse: that one is rewritten into the same request (same id and method)
without its unreadable part, marked with `INVALID_ARGUMENTS`, so the server answers it with an
error that says what was wrong. A line with no id to answer is passed on as it is.
"""

from __future__ import annotations

import json
import os
import re
import threading
from typing import Any

from mcp.types import jsonrpc_message_adapter
from pydantic import ValidationError

INVALID_ARGUMENTS = "__tabpilot_unreadable_arguments__"
"""The argument a rewritten tools/call carries: why its real arguments could not be read."""

_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')
_METHOD = re.compile(rb'"method"\s*:\s*"([A-Za-z0-9_/.$-]+)"')
_NAME = re.compile(rb'"name"\s*:\s*"([A-Za-z0-9_.-]+)"')
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def guard_stdin() -> None:
    """Route fd 0 through the filter (call before the SDK's stdio transport starts)."""
    source = os.dup(0)
    read_end, write_end = os.pipe()
    os.dup2(read_end, 0)
    os.close(read_end)
    threading.Thread(target=_pump, args=(source, write_end), name="tabpilot-stdin", daemon=True).start()


def _pump(source: int, sink: int) -> None:
    with open(source, "rb") as lines, open(sink, "wb", buffering=0) as out:
        for line in lines:
            try:
                out.write(checked(line))
            except BrokenPipeError:  # the server stopped reading: it is on its way out
                return
    # Leaving closes the pipe: the SDK sees the end of stdin, as it would have.


def checked(line: bytes) -> bytes:
    """`line` as it is, or, if the SDK would drop it unanswered, the answerable request it becomes."""
    if not line.strip():
        return line
    try:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
        return line
    except Exception as exc:  # what the SDK would do with it: drop it
        reason = _reason(line, exc)
    request = _request_parts(line)
    if request is None:
        return line  # no id: nothing can be answered
    request_id, method, tool = request
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if method == "tools/call" and tool is not None:
        message["params"] = {"name": tool, "arguments": {INVALID_ARGUMENTS: reason}}
    return json.dumps(message).encode() + b"\n"


def _reason(line: bytes, error: Exception) -> str:
    said = str(error).lower()
    if "surrogate" in said or ("hex escape" in said and _SURROGATE.search(line)):
        return "it holds a lone surrogate (such as \\ud800), which is not valid Unicode text"
    if "recursion" in said or "depth" in said:
        return "it is nested too deeply"
    errors = error.errors() if isinstance(error, ValidationError) else []
    what = str(errors[0].get("msg", "")) if errors else type(error).__name__
    return f"it is not valid JSON-RPC ({what[:200]})"


def _request_parts(line: bytes) -> tuple[int | str, str, str | None] | None:
    """The id, method and tool name of a request, read leniently (the line may not parse)."""
    found_id, method, name = _ID.search(line), _METHOD.search(line), _NAME.search(line)
    if found_id is None or method is None:
        return None
    try:
        request_id: int | str = json.loads(found_id.group(1))
    except ValueError:
        return None
    tool = name.group(1).decode() if name is not None else None
    return request_id, method.group(1).decode(), tool
