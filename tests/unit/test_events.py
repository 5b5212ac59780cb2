"""The event bus: listeners (plain and async), their failures, history limits."""

from __future__ import annotations

import asyncio
import logging

import pytest

from tabpilot import EventBus, Query, TabEvent, TabManager, Telemetry, query_tab_events


async def test_an_async_listener_is_run_and_a_failing_listener_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = EventBus()
    heard: list[int | None] = []

    async def heard_later(event: TabEvent) -> None:
        await asyncio.sleep(0)
        heard.append(event.tab_id)

    def broken(event: TabEvent) -> None:
        raise RuntimeError("listener bug")

    async def broken_later(event: TabEvent) -> None:
        raise RuntimeError("async listener bug")

    for listener in (heard_later, broken, broken_later):
        bus.subscribe(listener)
    with caplog.at_level(logging.ERROR, logger="tabpilot._events"):
        bus.emit("tab_opened", 3, "inst_1")  # the broken ones break nothing
        for _ in range(5):
            await asyncio.sleep(0)
    # An `async def` listener was never run (a RuntimeWarning only); failures went unlogged.
    assert heard == [3]
    logged = "\n".join(r.getMessage() + str(r.exc_info) for r in caplog.records)
    assert "listener bug" in logged and "async listener bug" in logged


def test_history_gives_the_last_limit_events_and_none_for_a_limit_of_zero() -> None:
    bus = EventBus()
    for tab_id in (1, 2, 3):
        bus.emit("tab_opened", tab_id, "inst_1")
    assert [e.tab_id for e in bus.history(limit=2)] == [2, 3]
    assert bus.history(limit=0) == []  # it gave every event
    assert [e.tab_id for e in bus.history(limit=9)] == [1, 2, 3]
    with pytest.raises(ValueError, match="limit must be zero or more events, not -1"):
        bus.history(limit=-1)


async def test_a_stream_ends_once_the_bus_ends_after_the_events_it_holds() -> None:
    # `async for` over a stream waited for ever after its manager closed.
    bus = EventBus(stream_queue_size=2)
    seen: list[int | None] = []
    stream = bus.stream()

    async def follow() -> None:
        async for event in stream:
            seen.append(event.tab_id)

    following = asyncio.ensure_future(follow())
    await asyncio.sleep(0)  # subscribed
    for tab in (1, 2, 3):  # one more than the stream holds: counted as dropped
        bus.emit("tab_closed", tab, "inst_1")
    bus.end()
    await asyncio.wait_for(following, 2)
    assert seen == [1, 2] and bus.dropped == 1
    assert stream.missed == 1  # the stream's own: missed at its end


async def test_a_full_stream_tells_its_missed_events_with_the_first_event_after_them() -> None:
    # They were counted only in the bus's dropped, with every other stream's and the history's.
    bus = EventBus()
    stream, roomy = bus.stream(size=2), bus.stream()
    for tab in (1, 2, 3, 4):  # 3 and 4 do not fit
        bus.emit("tab_opened", tab, "inst_1")
    read = [(await stream.__anext__()).tab_id for _ in range(2)]
    assert read == [1, 2] and stream.missed == 0  # the gap comes after them
    bus.emit("tab_opened", 5, "inst_1")
    assert (await stream.__anext__()).tab_id == 5 and stream.missed == 2
    assert roomy.missed == 0 and bus.dropped == 2
    with pytest.raises(TypeError, match="size takes an int"):
        bus.stream(size=2.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="size must be at least 1 event, not 0"):
        bus.stream(size=0)


async def test_a_stream_holds_the_events_from_its_making_not_from_its_first_read() -> None:
    # An async generator: its queue came with the first read, so the usual "read it in a task"
    # missed what came before the task ran (uncounted), and a read after an action waited for ever.
    bus = EventBus()
    stream = bus.stream()
    bus.emit("tab_opened", 1, "inst_1")
    assert (await asyncio.wait_for(stream.__anext__(), 1)).tab_id == 1
    reader = asyncio.ensure_future(stream.__anext__())
    await asyncio.sleep(0)
    await stream.aclose()  # a read waiting ends too
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(reader, 1)
    bus.emit("tab_opened", 2, "inst_1")
    assert bus.dropped == 0  # a closed stream holds nothing, and misses nothing
    dropped = bus.stream()
    del dropped  # a stream its consumer dropped goes by itself: it fills up no queue
    for tab in range(3, 1010):
        bus.emit("tab_opened", tab, "inst_1")
    assert bus.dropped == 9  # 1,009 events in a history of 1,000: only its evictions


def test_a_tab_events_cursor_before_events_the_history_dropped_is_told_it_missed_them() -> None:
    # `missed` was never set for tab events: a reader could not tell its page had a gap.
    bus = EventBus(history_size=2)
    for tab in (1, 2, 3):
        bus.emit("tab_opened", tab, "inst_1")
    gap = query_tab_events(bus, Query("tab_events", since=0))
    assert gap.missed and [e.tab_id for e in gap.entries] == [2, 3]
    whole = query_tab_events(bus, Query("tab_events", since=1))
    assert not whole.missed and [e.tab_id for e in whole.entries] == [2, 3]


def test_a_tabs_tab_events_count_only_that_tabs_dropped_events_as_the_other_kinds_do() -> None:
    # `dropped` of tab_events was the whole history's even when a tab was asked for.
    bus = EventBus(history_size=3)
    for tab in (1, 1, 2, 2, 2):
        bus.emit("tab_opened", tab, "inst_1")  # tab 1's two events are evicted
    assert query_tab_events(bus, Query("tab_events")).dropped == 2
    assert query_tab_events(bus, Query("tab_events", tab_id=1)).dropped == 2
    quiet = query_tab_events(bus, Query("tab_events", tab_id=2, since=0))
    assert (quiet.dropped, quiet.missed) == (0, False)  # tab 2 lost nothing after cursor 0
    assert query_tab_events(bus, Query("tab_events", tab_id=1, since=0)).missed
    # An event a full stream could not hold is its tab's too.
    stream = bus.stream(size=1)
    bus.emit("tab_opened", 3, "inst_1")
    bus.emit("tab_opened", 4, "inst_1")
    assert [query_tab_events(bus, Query("tab_events", tab_id=t)).dropped for t in (3, 4)] == [0, 1]
    assert bus.history(limit=5) == bus.history()[-3:] and len(bus.history(limit=2)) == 2
    del stream


def test_wrong_numbers_and_listeners_are_refused_at_the_call_that_takes_them() -> None:
    # history(since="2") failed deep inside ("'<=' not supported between instances of 'int' and
    # 'str'"), since=True read as 1 and since=2.5 as 2; subscribe(None) was taken and then failed,
    # logged, on every event; TabManager(event_history=0) blamed "max_entries", a name it has not.
    bus = EventBus()
    for tab in (1, 2, 3):
        bus.emit("tab_opened", tab, "inst_1")
    for given in ("2", 2.5, True):
        with pytest.raises(TypeError, match=r"since takes an int, an event's seq .*; it was given"):
            bus.history(since=given)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"since must be zero or more \(an event's seq\), not -1"):
        bus.history(since=-1)
    for given in ("2", 2.0, True):
        with pytest.raises(TypeError, match="limit takes an int, how many of the newest events"):
            bus.history(limit=given)  # type: ignore[arg-type]
    assert [e.seq for e in bus.history(since=0)] == [1, 2, 3] and len(bus.history(since=1, limit=1)) == 1
    with pytest.raises(
        TypeError, match=r"listener takes a function called with each TabEvent.*None \(NoneType\)"
    ):
        bus.subscribe(None)  # type: ignore[arg-type]
    bus.emit("tab_opened", 4, "inst_1")  # nothing was subscribed: nothing fails
    with pytest.raises(ValueError, match="event_history must be at least 1 event, not 0"):
        TabManager(event_history=0)
    with pytest.raises(TypeError, match="event_history takes an int, the most events the history keeps"):
        TabManager(event_history="5")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="max_entries takes an int, the most entries kept of each kind"):
        Telemetry(max_entries="5")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_entries must be at least 1 entry, not 0"):
        Telemetry(max_entries=0)
