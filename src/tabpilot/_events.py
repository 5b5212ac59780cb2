"""The event bus: callbacks, async iterators and a bounded history with cursors."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from ._errors import check_count, check_tab_id
from ._ring import ALL_TABS, Ring
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


class EventStream:
    """`EventBus.stream()`: its events from its making on, as an async iterator (`async for`).

    It holds at most `size` unread events. Those that come while it is full are not held, and
    `missed` tells how many, at the place they were missing: it grows as the first event after
    them is yielded (or as the iteration ends, for those at the end)::

        told = 0
        async for event in stream:
            if stream.missed > told:  # stream.missed - told events came just before this one
                gap = [e for e in bus.history(since=previous.seq) if e.seq < event.seq]
                told = stream.missed
            previous = event

    (the history holds them while they are among its last events). The bus's `dropped` counts
    them too.
    """

    def __init__(self, bus: EventBus, size: int) -> None:
        self._bus = bus
        self._queue: asyncio.Queue[tuple[int, TabEvent] | None] = asyncio.Queue(size)
        """Each event with the number of events missed just before it (None: the end)."""
        self._gap = 0
        """Events missed since the last one held: told with the next one held, or at the end."""
        self.missed = 0
        """Events this stream did not hold (it was full) before the events it has yielded."""
        bus._streams.add(self)

    def offer(self, event: TabEvent | None) -> bool:
        """Hold `event` (None: the bus ended) for the consumer; False when the stream is full (an
        event not held is counted in `missed` once the consumer reads past it)."""
        try:
            self._queue.put_nowait(None if event is None else (self._gap, event))
        except asyncio.QueueFull:
            if event is not None:
                self._gap += 1
            return False
        if event is not None:
            self._gap = 0
        return True

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> TabEvent:
        if self not in self._bus._streams or (self._bus.ended and self._queue.empty()):
            self._end()
            raise StopAsyncIteration
        held = await self._queue.get()
        if held is None:  # the end (`EventBus.end`)
            self._end()
            await self.aclose()
            raise StopAsyncIteration
        gap, event = held
        self.missed += gap
        return event

    def _end(self) -> None:
        """The iteration ends: events missed after the last one yielded are told now."""
        self.missed += self._gap
        self._gap = 0

    async def aclose(self) -> None:
        """Stop the stream: it holds no more events, and its iteration ends (a read waiting too)."""
        if self in self._bus._streams:
            self._bus._streams.discard(self)
            self.offer(None)


class EventBus:
    """Delivers every tab event to callbacks and streams, and keeps the last `history_size`."""

    def __init__(
        self, *, history_size: int = 1000, stream_queue_size: int = 1000, numbers: EventNumbers | None = None
    ) -> None:
        check_count(
            history_size, "history_size", "the most events the history keeps", minimum=1, unit="event"
        )
        check_count(
            stream_queue_size,
            "stream_queue_size",
            "the most unread events a stream holds",
            minimum=1,
            unit="event",
        )
        self._history: Ring[TabEvent] = Ring(history_size)
        """The last events, with what was dropped counted per tab as for telemetry's kinds."""
        self._listeners: list[Listener] = []
        self._running: set[asyncio.Future[Any]] = set()
        """Calls of `async def` listeners under way (held here: the loop keeps only weak refs)."""
        self._streams: weakref.WeakSet[EventStream] = weakref.WeakSet()
        """Streams being read (a stream its consumer dropped goes by itself)."""
        self._ended = False
        self._stream_queue_size = stream_queue_size
        self._numbers = numbers or EventNumbers()

    @property
    def dropped(self) -> int:
        """Events evicted from the history, plus events a slow stream consumer missed (each
        stream's own are its `missed`)."""
        return self._history.dropped

    def dropped_for(self, tab_id: int | None) -> int:
        """`dropped`, of one tab's events (None: of those of no tab)."""
        return self._history.dropped_for(tab_id)

    @property
    def evicted_through(self) -> int:
        """The sequence number of the newest event evicted from the history (0: none): a cursor
        before it missed events."""
        return self._history.evicted_seq

    def missed_after(self, since: int, *, tab_id: int | None = None) -> bool:
        """Whether events newer than cursor `since` (of tab `tab_id`, if given) were evicted."""
        return self._history.missed_after(ALL_TABS if tab_id is None else tab_id, since)

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
        for stream in list(self._streams):
            if not stream.offer(event):
                self._history.count_dropped(tab_id)
        return event

    def _listener_done(self, running: asyncio.Future[Any]) -> None:
        self._running.discard(running)
        if not running.cancelled() and running.exception() is not None:
            logger.error("an event listener failed", exc_info=running.exception())

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` for every event (an `async def` one is run as a task); returns the
        disposer (safe to call twice). A listener's exception is logged, never raised; one that
        cannot be called is refused here (it failed, logged, on every event)."""
        if not callable(listener):
            raise TypeError(
                "listener takes a function called with each TabEvent (a plain or an async def one); it was "
                f"given {repr(listener)[:60]} ({type(listener).__name__})."
            )
        self._listeners.append(listener)

        def dispose() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return dispose

    def history(
        self, *, since: int | None = None, tab_id: int | None = None, limit: int | None = None
    ) -> list[TabEvent]:
        """The events the history holds with a sequence number above `since`, oldest first,
        optionally of one tab; with `limit`, only the last `limit` of them.

        The history holds the last `history_size` events only: those evicted before this call
        are not in the list, and nothing in it says so. When `since < evicted_through`, events
        after `since` were evicted: the list does not follow on from that cursor.
        `query_tab_events(bus, Query("tab_events", since=...))` reads the same history, a page at
        a time, and says so (`missed`)."""
        if since is not None:
            check_count(
                since, "since", "an event's seq (0: from the first)", minimum=0, unit="(an event's seq)"
            )
        if limit is not None:
            check_count(limit, "limit", "how many of the newest events to give", minimum=0, unit="events")
        if tab_id is not None:
            check_tab_id(tab_id)
        tab = ALL_TABS if tab_id is None else tab_id
        held = self._history.count_for(tab)
        if not held:
            return []
        events, _ = self._history.select(tab=tab, since=since, limit=held)
        return events if limit is None else events[max(len(events) - limit, 0) :]

    def stream(self, *, size: int | None = None) -> EventStream:
        """The events from now on (this call, not the first read: events between the two are
        not lost), as an async iterator, until the consumer stops (`aclose`, or drops it) or the
        bus ends (`end`: its manager closed), once the events it holds are yielded. It holds at
        most `size` unread events (by default the bus's `stream_queue_size`, 1,000); its `missed`
        tells the events it could not hold, and where."""
        if size is None:
            size = self._stream_queue_size
        else:
            check_count(size, "size", "the most unread events a stream holds", minimum=1, unit="event")
        return EventStream(self, size)

    def end(self) -> None:
        """No more events come (the manager closed): every stream ends once it has yielded what
        it holds (an `async for` over one waited for ever)."""
        self._ended = True
        for stream in list(self._streams):
            stream.offer(None)  # a full one ends once read (`EventStream.__anext__`)

    @property
    def ended(self) -> bool:
        return self._ended
