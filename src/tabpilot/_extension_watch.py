"""Keeping an instance on the browser behind an extension bridge, whenever the extension connects.

`ExtensionWatch` belongs to one `TabManager`: it gets the manager's way of connecting a bridge
and of telling whether a bridge already has an open instance, injected, never reached for.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ._bridge import ExtensionBridge

logger = logging.getLogger("tabpilot")


class ExtensionWatch:
    """The bridges a manager watches, and the connects under way."""

    def __init__(
        self,
        connect: Callable[[ExtensionBridge], Awaitable[Any]],
        in_use: Callable[[ExtensionBridge], bool],
        closed: Callable[[], bool],
    ) -> None:
        self._connect, self._in_use, self._closed = connect, in_use, closed
        self._watched: dict[ExtensionBridge, Callable[[], None]] = {}
        self._connects: set[asyncio.Task[None]] = set()

    @property
    def first(self) -> ExtensionBridge | None:
        """The first bridge watched (the one to tell the user about), if any."""
        return next(iter(self._watched), None)

    def watch(self, bridge: ExtensionBridge) -> None:
        """Connect an instance whenever the extension connects to `bridge`, and now if it is
        connected with none (watched already: its instance was closed, and is asked for again)."""
        if bridge not in self._watched:
            self._watched[bridge] = bridge.on_connect(lambda: self._connected(bridge))
        if bridge.connected:
            self._connected(bridge)

    def _connected(self, bridge: ExtensionBridge) -> None:
        if self._closed() or self._in_use(bridge) or self._connects:
            return
        task = asyncio.get_running_loop().create_task(self._connect_now(bridge))
        self._connects.add(task)
        task.add_done_callback(self._connects.discard)

    def bridge_at(self, address: str) -> ExtensionBridge | None:
        """The watched bridge listening at `address` (an extension instance's endpoint), if any."""
        return next((b for b in self._watched if b.address == address), None)

    async def _connect_now(self, bridge: ExtensionBridge) -> None:
        try:
            await self._connect(bridge)
        except Exception:
            logger.exception("connecting the browser of the tabpilot extension failed")

    async def arrived(self, timeout: float) -> None:
        """Wait (up to `timeout` seconds) for a connect that is on its way."""
        if self._connects:
            await asyncio.wait(set(self._connects), timeout=timeout)

    def close(self) -> None:
        for dispose in self._watched.values():
            dispose()
        for task in list(self._connects):
            task.cancel()
