"""Waiting in tests for what the browser does on its own time (events, loads, closes)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any


async def wait_until(predicate: Callable[[], Any], timeout: float = 5.0) -> None:
    """Poll `predicate` every 20 ms; fail the test if it is not true within `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)
