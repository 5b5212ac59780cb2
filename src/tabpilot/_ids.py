"""Id spaces: tab ids are positive integers in discovery order, never reused while they are shared."""

from __future__ import annotations

import itertools
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
