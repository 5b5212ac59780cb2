"""A session request to a full Selenium Grid: tabpilot gives up at its timeout, the grid drops the
request with the connection, and no session starts later to run until the grid's idle timeout.
The grid is real (hub + node on 127.0.0.1, see the `grid` fixture)."""

from __future__ import annotations

import asyncio
import time

import pytest

from support import SeleniumGrid, wait_until
from tabpilot import ConnectError
from tabpilot._grid import create_session


async def test_a_session_request_given_up_on_leaves_the_grid_and_starts_no_session_later(
    grid: SeleniumGrid,
) -> None:
    before = set(grid.session_ids())
    held = await grid.take_every_slot()
    try:
        asking = asyncio.ensure_future(create_session(grid.url, timeout=3))
        await wait_until(lambda: len(grid.queued()) == 1, timeout=3)  # the grid queues it
        started = time.monotonic()
        with pytest.raises(ConnectError, match="did not start a session within 3 s") as refused:
            await asking
        assert time.monotonic() - started < 4
        assert refused.value.reason == "timeout"
        # The grid says why it started none: no guess that its nodes "may" be busy.
        slots = len(grid.session_ids())
        assert f"every one of its {slots} slots for chrome is in use" in refused.value.fact, refused.value
        assert "Close a grid instance you no longer need" in refused.value.advice
        await wait_until(lambda: not grid.queued(), timeout=5)
        await grid.assert_no_late_session(held, before, "no session started for the request given up on")
    finally:
        for session in held:
            await session.delete()
    assert not grid.sessions_end(keep=before)


async def test_a_session_request_no_node_matches_times_out_naming_the_capabilities_not_busy_nodes(
    grid: SeleniumGrid,
) -> None:
    """Slots are free but no node matches a capability (a browserVersion no stereotype states): the
    grid queues the request until it times out. The answer says so, not that the nodes "may have been
    busy" (retrying later would not help)."""
    before = set(grid.session_ids())
    with pytest.raises(ConnectError, match="did not start a session within 3 s") as refused:
        await create_session(grid.url, {"browserVersion": "1.0"}, timeout=3)
    assert refused.value.reason == "timeout"
    assert (
        "slots for chrome are free: no node may match the capabilities asked for (browserVersion='1.0')"
        in (refused.value.fact)
    ), refused.value
    assert f"GET {grid.url}/status" in refused.value.advice and "busy" not in str(refused.value)
    await wait_until(lambda: not grid.queued(), timeout=5)
    assert not grid.sessions_end(keep=before)


async def test_a_session_request_cancelled_in_the_queue_ends_the_session_the_grid_starts_later(
    grid: SeleniumGrid,
) -> None:
    """Whoever asked went (a call cut short) while the request waited in the queue: the process
    goes on, the request stays queued, and the session the grid starts in the next free slot is
    ended at once."""
    before = set(grid.session_ids())
    held = await grid.take_every_slot()
    try:
        asking = asyncio.ensure_future(create_session(grid.url, timeout=30))
        await wait_until(lambda: len(grid.queued()) == 1, timeout=5)
        asking.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asking
        # The queued request starts in the slot freed now, and is ended.
        await grid.assert_no_late_session(
            held, before, "the session started for the cancelled request was ended"
        )
    finally:
        for session in held:
            await session.delete()
    assert not grid.sessions_end(keep=before)
