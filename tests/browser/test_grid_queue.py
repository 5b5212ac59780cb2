"""A session request to a full Selenium Grid: tabpilot gives up at its timeout, the grid drops the
request with the connection, and no session starts later to run until the grid's idle timeout.
The grid is real (hub + node on 127.0.0.1, see the `grid` fixture)."""

from __future__ import annotations

import asyncio
import time

import pytest

from support import SeleniumGrid, wait_until
from tabpilot import ConnectError
from tabpilot._grid import GridSession, create_session


async def test_a_session_request_given_up_on_leaves_the_grid_and_starts_no_session_later(
    grid: SeleniumGrid,
) -> None:
    before = set(grid.session_ids())
    slots = sum(len(node.get("slots", [])) for node in grid.status()["nodes"])
    held: list[GridSession] = []
    try:
        for _ in range(slots - len(before)):
            held.append(await create_session(grid.url))
        assert len(grid.session_ids()) == slots, "every slot is in use"

        asking = asyncio.ensure_future(create_session(grid.url, timeout=3))
        await wait_until(lambda: len(grid.queued()) == 1, timeout=3)  # the grid queues it
        started = time.monotonic()
        with pytest.raises(ConnectError, match="did not start a session within 3 s") as refused:
            await asking
        assert time.monotonic() - started < 4
        assert refused.value.reason == "timeout"
        await wait_until(lambda: not grid.queued(), timeout=5)

        await held.pop().delete()  # a free slot: a request still queued would start in it now
        kept = before | {s.session_id for s in held}
        await wait_until(lambda: set(grid.session_ids()) == kept, timeout=10)
        await asyncio.sleep(3)
        assert set(grid.session_ids()) == kept, "no session started for the request given up on"
    finally:
        for session in held:
            await session.delete()
    assert not grid.sessions_end(keep=before)


async def test_a_session_request_cancelled_in_the_queue_ends_the_session_the_grid_starts_later(
    grid: SeleniumGrid,
) -> None:
    """Whoever asked went (a call cut short) while the request waited in the queue: the process
    goes on, the request stays queued, and the session the grid starts in the next free slot is
    ended at once."""
    before = set(grid.session_ids())
    slots = sum(len(node.get("slots", [])) for node in grid.status()["nodes"])
    held: list[GridSession] = []
    try:
        for _ in range(slots - len(before)):
            held.append(await create_session(grid.url))
        asking = asyncio.ensure_future(create_session(grid.url, timeout=30))
        await wait_until(lambda: len(grid.queued()) == 1, timeout=5)
        asking.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asking

        freed = held.pop()
        await freed.delete()  # the queued request starts in this slot, and is ended
        kept = before | {s.session_id for s in held}
        await wait_until(lambda: not grid.queued(), timeout=10)
        await wait_until(lambda: set(grid.session_ids()) == kept, timeout=15)
        await asyncio.sleep(2)
        assert set(grid.session_ids()) == kept, "the session started for the cancelled request was ended"
    finally:
        for session in held:
            await session.delete()
    assert not grid.sessions_end(keep=before)
