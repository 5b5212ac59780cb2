"""The event bus: callbacks, async iterators and a bounded history with cursors."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncGenerator, Callable
from typing import Any

from ._types import EventType, TabEvent

Listener = Callable[[TabEvent], None]


class EventBus:
    """Delivers every tab event to callbacks and streams, and keeps the last `history_size`."""

    def __init__(self, *, history_size: int = 1000, stream_queue_size: int = 1000) -> None:
        self._history: deque[TabEvent] = deque(maxlen=history_size)
        self._listeners: list[Listener] = []
        self._queues: list[asyncio.Queue[TabEvent]] = []
        self._stream_queue_size = stream_queue_size
        self._seq = 0
        self.dropped = 0
        """Events evicted from the history, plus events a slow stream consumer missed."""

    @property
    def last_seq(self) -> int:
        return self._seq

    def next_seq(self) -> int:
        """Take the next sequence number: the bus's own events and whatever else is numbered with
        it (`Telemetry(numbering=events)`) share one sequence, so one cursor serves them all."""
        self._seq += 1
        return self._seq

    def emit(self, type: EventType, tab_id: int | None, instance_id: str | None, **data: Any) -> TabEvent:
        event = TabEvent(self.next_seq(), time.time(), type, tab_id, instance_id, data)
        if len(self._history) == self._history.maxlen:
            self.dropped += 1
        self._history.append(event)
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # a broken subscriber must not break the browser's event loop
                pass
        for queue in self._queues:
            try:
                queue.put_nowait(event)
            except asyncio.QueueFull:
                self.dropped += 1
        return event

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` for every event; returns the disposer (safe to call twice)."""
        self._listeners.append(listener)

        def dispose() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return dispose

    def history(
        self, *, since: int | None = None, tab_id: int | None = None, limit: int | None = None
    ) -> list[TabEvent]:
        """Events with a sequence number above `since`, oldest first, optionally of one tab."""
        events = [
            e
            for e in self._history
            if (since is None or e.seq > since) and (tab_id is None or e.tab_id == tab_id)
        ]
        return events[-limit:] if limit else events

    async def stream(self) -> AsyncGenerator[TabEvent, None]:
        """Yield events as they happen, from now on, until the consumer stops iterating."""
        queue: asyncio.Queue[TabEvent] = asyncio.Queue(self._stream_queue_size)
        self._queues.append(queue)
        try:
            while True:
                yield await queue.get()
        finally:
            self._queues.remove(queue)
