"""Id spaces: tab ids are positive integers in discovery order, never reused while they are shared."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator


class TabIds:
    """Tab ids for one process (or one server): share one `TabIds` between managers and their
    ids never collide."""

    def __init__(self) -> None:
        self._next = itertools.count(1)

    def __next__(self) -> int:
        return next(self._next)

    def __iter__(self) -> Iterator[int]:
        return self


_DIGITS = re.compile(r"[0-9]+")
_DECIMAL = re.compile(r"[0-9]{1,18}")  # longer: no tab id, and int() of 4,300 digits or more raises


def decimal_id(text: str) -> int | None:
    """A tab id written as a decimal string (`" 3 "` -> 3), else None."""
    stripped = text.strip()
    return int(stripped) if _DECIMAL.fullmatch(stripped) else None


def port_number(text: str) -> int | None:
    """A TCP port written in ASCII digits (`"8080"` -> 8080), 1 to 65535, else None (`"²"` and
    5,000 digits passed `str.isdigit` and made int() raise in its own words)."""
    return int(text) if re.fullmatch(r"[0-9]{1,5}", text) and 0 < int(text) < 65536 else None


def id_text_advice(text: str) -> str:
    """Why a short text with digits in it is no tab id: `"١"` and `"¹"` are not 1."""
    if _DIGITS.fullmatch(text.strip()):
        return "No tab has an id that large."
    digits = any(ch.isdigit() for ch in text) and len(text) < 20
    return "Tab ids are written with the digits 0-9." if digits else ""
