"""The event bus: callbacks, async iterators and a bounded history with cursors."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from ._types import EventType, TabEvent

Listener = Callable[[TabEvent], None] | Callable[[TabEvent], Awaitable[None]]

logger = logging.getLogger(__name__)


class EventNumbers:
    """The sequence event numbers (and cursors) are taken from: a bus's own, or one several buses
    share (a server's sessions), so that a cursor of one bus never passes over another's numbers."""

    def __init__(self) -> None:
        self.last = 0

    def take(self) -> int:
        self.last += 1
        return self.last


class EventBus:
    """Delivers every tab event to callbacks and streams, and keeps the last `history_size`."""

    def __init__(
        self, *, history_size: int = 1000, stream_queue_size: int = 1000, numbers: EventNumbers | None = None
    ) -> None:
        self._history: deque[TabEvent] = deque(maxlen=history_size)
        self._listeners: list[Listener] = []
        self._running: set[asyncio.Future[Any]] = set()
        """Calls of `async def` listeners under way (held here: the loop keeps only weak refs)."""
        self._queues: list[asyncio.Queue[TabEvent | None]] = []
        self._ended = False
        self._stream_queue_size = stream_queue_size
        self._numbers = numbers or EventNumbers()
        self.dropped = 0
        """Events evicted from the history, plus events a slow stream consumer missed."""
        self.evicted_through = 0
        """The sequence number of the newest event evicted from the history (0: none): a cursor
        before it missed events."""

    @property
    def last_seq(self) -> int:
        """The latest number taken (by this bus, or another sharing its `EventNumbers`)."""
        return self._numbers.last

    def next_seq(self) -> int:
        """Take the next sequence number: the bus's own events and whatever else is numbered with
        it (`Telemetry(numbering=events)`) share one sequence, so one cursor serves them all."""
        return self._numbers.take()

    def emit(self, type: EventType, tab_id: int | None, instance_id: str | None, **data: Any) -> TabEvent:
        event = TabEvent(self.next_seq(), time.time(), type, tab_id, instance_id, data)
        if len(self._history) == self._history.maxlen:
            self.dropped += 1
            if self._history:
                self.evicted_through = self._history[0].seq
        self._history.append(event)
        for listener in list(self._listeners):
            try:
                called = listener(event)
                if inspect.isawaitable(called):  # an `async def` listener runs as a task of its own
                    running = asyncio.ensure_future(called)
                    self._running.add(running)
                    running.add_done_callback(self._listener_done)
            except Exception:  # a broken subscriber must not break the browser's event loop
                logger.exception("an event listener failed on %s of tab %s", type, tab_id)
        for queue in self._queues:
            try:
                queue.put_nowait(event)
            except asyncio.QueueFull:
                self.dropped += 1
        return event

    def _listener_done(self, running: asyncio.Future[Any]) -> None:
        self._running.discard(running)
        if not running.cancelled() and running.exception() is not None:
            logger.error("an event listener failed", exc_info=running.exception())

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` for every event (an `async def` one is run as a task); returns the
        disposer (safe to call twice). A listener's exception is logged, never raised."""
        self._listeners.append(listener)

        def dispose() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return dispose

    def history(
        self, *, since: int | None = None, tab_id: int | None = None, limit: int | None = None
    ) -> list[TabEvent]:
        """Events with a sequence number above `since`, oldest first, optionally of one tab; with
        `limit`, only the last `limit` of them."""
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be zero or more events, not {limit}")
        events = [
            e
            for e in self._history
            if (since is None or e.seq > since) and (tab_id is None or e.tab_id == tab_id)
        ]
        return events if limit is None else events[len(events) - limit :]

    async def stream(self) -> AsyncGenerator[TabEvent, None]:
        """Yield events as they happen, from now on, until the consumer stops iterating or the
        bus ends (`end`: its manager closed), once the events it holds are yielded."""
        queue: asyncio.Queue[TabEvent | None] = asyncio.Queue(self._stream_queue_size)
        self._queues.append(queue)
        try:
            while not (self._ended and queue.empty()):
                event = await queue.get()
                if event is None:  # the end (`end`)
                    return
                yield event
        finally:
            self._queues.remove(queue)

    def end(self) -> None:
        """No more events come (the manager closed): every stream ends once it has yielded what
        it holds (an `async for` over one waited for ever)."""
        self._ended = True
        for queue in self._queues:
            with contextlib.suppress(asyncio.QueueFull):  # a full one ends once read (`stream`)
                queue.put_nowait(None)
