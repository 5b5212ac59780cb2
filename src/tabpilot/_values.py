"""A script's result as plain JSON values, whatever JavaScript gave back.

Playwright turns a page's values into Python ones: a `Date` into a `datetime`, a `RegExp` into a
compiled pattern, a `URL` into a parsed URL, an `Error` into an exception, `NaN` and `Infinity` into
floats JSON has no words for, and an object that contains itself into a dict that contains itself.
`json_value` turns each into what JSON can carry and a reader recognises, as JavaScript would
print it: an ISO date, `/x/gi`, the URL, `Error: message`, `"NaN"`, and `"[Circular]"` where an
object holds one of its own ancestors (an object met twice side by side is written twice).
"""

from __future__ import annotations

import datetime
import math
import re
from typing import Any

JsonValue = None | bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"]

_FLAGS = ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"))


def json_value(value: Any) -> JsonValue:
    """`value` (as Playwright returns a script's result) with only JSON types in it."""
    return _convert(value, ())


def _convert(value: Any, ancestors: tuple[int, ...]) -> JsonValue:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return (
            int(value) if value.is_integer() and abs(value) < 2**53 else value
        )  # -0 and 2.0 read as JS prints them
    if isinstance(value, datetime.datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=datetime.UTC)
        return moment.astimezone(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    if isinstance(value, re.Pattern):
        flags = "".join(letter for flag, letter in _FLAGS if value.flags & flag)
        return f"/{value.pattern}/{flags}"
    if isinstance(value, BaseException):
        return f"{type(value).__name__}: {value}"
    if hasattr(value, "geturl"):  # a URL object
        return str(value.geturl())
    if isinstance(value, dict | list | tuple):
        if id(value) in ancestors:
            return "[Circular]"
        inner = (*ancestors, id(value))
        if isinstance(value, dict):
            return {str(k): _convert(v, inner) for k, v in value.items()}
        return [_convert(v, inner) for v in value]
    return str(value)


__all__ = ["JsonValue", "json_value"]
