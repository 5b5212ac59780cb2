"""Keeping an instance on the browser behind an extension bridge, whenever the extension connects.

`ExtensionWatch` belongs to one `TabManager`: it gets the manager's way of connecting a bridge
and of telling whether a bridge already has an open instance, injected, never reached for.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from ._bridge import ExtensionBridge

logger = logging.getLogger("tabpilot")


class ExtensionWatch:
    """The bridges a manager watches, and the connects under way (one per bridge at a time)."""

    def __init__(
        self,
        connect: Callable[[ExtensionBridge], Coroutine[Any, Any, Any]],
        in_use: Callable[[ExtensionBridge], bool],
        closed: Callable[[], bool],
    ) -> None:
        self._connect, self._in_use, self._closed = connect, in_use, closed
        self._watched: dict[ExtensionBridge, Callable[[], None]] = {}
        self._connects: dict[ExtensionBridge, asyncio.Task[Any]] = {}
        self._let_go: set[ExtensionBridge] = set()
        """Bridges whose instance the agent closed: the extension's return connects none."""

    @property
    def first(self) -> ExtensionBridge | None:
        """The first bridge watched (the one to tell the user about), if any."""
        return next(iter(self._watched), None)

    def watch(self, bridge: ExtensionBridge) -> None:
        """Connect an instance whenever the extension connects to `bridge`, and now if it is
        connected with none (watched already: its instance was closed, and is asked for again)."""
        self._let_go.discard(bridge)
        if bridge not in self._watched:

            def arrived() -> None:
                if bridge not in self._let_go:
                    self._connected(bridge)

            self._watched[bridge] = bridge.on_connect(arrived)
        if bridge.connected:
            self._connected(bridge)

    def _connected(self, bridge: ExtensionBridge) -> asyncio.Task[Any] | None:
        """The connect of `bridge`'s browser: the one under way, else a new one if it has no open
        instance (None: it has one, or the manager is closed)."""
        task = self._connects.get(bridge)
        if task is not None:
            return task
        if self._closed() or self._in_use(bridge):
            return None
        task = self._connects[bridge] = asyncio.get_running_loop().create_task(self._connect(bridge))
        task.add_done_callback(lambda done: self._ended(bridge, done))
        return task

    def _ended(self, bridge: ExtensionBridge, task: asyncio.Task[Any]) -> None:
        if self._connects.get(bridge) is task:
            del self._connects[bridge]
        if not task.cancelled() and task.exception() is not None:
            logger.error("connecting the browser of the tabpilot extension failed", exc_info=task.exception())

    async def connect(self, bridge: ExtensionBridge) -> None:
        """Connect `bridge`'s browser now, or join the connect under way: the extension's arrival
        and a call that needs its browser never connect it twice. Raises what that connect raised;
        a cancelled caller leaves the connect running."""
        self._let_go.discard(bridge)
        task = self._connected(bridge)
        if task is not None:
            await asyncio.shield(task)

    def let_go(self, address: str) -> None:
        """The agent closed the instance of the browser behind the bridge at `address`: the
        extension's return (its browser or its service worker restarted) connects none until one
        is asked for again (`watch`, `connect`)."""
        bridge = self.bridge_at(address)
        if bridge is not None:
            self._let_go.add(bridge)

    def bridge_at(self, address: str) -> ExtensionBridge | None:
        """The watched bridge listening at `address` (an extension instance's endpoint), if any."""
        return next((b for b in self._watched if b.address == address), None)

    async def arrived(self, timeout: float) -> None:
        """Wait (up to `timeout` seconds) for the connects on their way."""
        if self._connects:
            await asyncio.wait(set(self._connects.values()), timeout=timeout)

    def close(self) -> None:
        for dispose in self._watched.values():
            dispose()
        for task in list(self._connects.values()):
            task.cancel()
