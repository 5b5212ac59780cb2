"""A tab's input turns: actions that use its pointer, keyboard and focus run one at a time, in the
order they asked (`Tab.input_turn`). The queue alone, on a tab with no page (the browser tests
in tests/server/test_server_actions.py show it on real pages)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from tabpilot import Tab, TabNotFoundError
from tabpilot._tab import TabHost


class Host:
    """What `input_turn` asks of its host: the open tabs, for the error once the tab closed."""

    def open_tabs(self) -> list[Any]:
        return []


def make_tab() -> Tab:
    return Tab(1, cast(TabHost, Host()), target_id=None, opener_id=None, cause="tool")


async def test_turns_go_in_the_order_asked_and_one_at_a_time() -> None:
    tab = make_tab()
    ran: list[int] = []
    running: set[int] = set()

    async def act(n: int) -> None:
        async with tab.input_turn():
            assert not running, "two actions held the turn at once"
            running.add(n)
            await asyncio.sleep(0)
            ran.append(n)
            running.discard(n)

    await asyncio.gather(*(act(n) for n in range(5)))
    assert ran == [0, 1, 2, 3, 4]


async def test_an_action_cancelled_while_waiting_gives_up_its_place_and_the_rest_go_on() -> None:
    tab, ran = make_tab(), []
    release = asyncio.Event()

    async def act(n: int, *, hold: bool = False) -> None:
        async with tab.input_turn():
            if hold:
                await release.wait()
            ran.append(n)

    first = asyncio.ensure_future(act(0, hold=True))
    given_up = asyncio.ensure_future(act(1))
    last = asyncio.ensure_future(act(2))
    await asyncio.sleep(0)
    given_up.cancel()
    release.set()
    await asyncio.gather(first, last)
    assert given_up.cancelled() and ran == [0, 2]


async def test_actions_waiting_for_their_turn_fail_when_the_tab_closes() -> None:
    tab = make_tab()
    release = asyncio.Event()

    async def act() -> None:
        async with tab.input_turn():
            await release.wait()

    holder = asyncio.ensure_future(act())
    waiting = [asyncio.ensure_future(act()) for _ in range(2)]
    await asyncio.sleep(0)
    tab.mark_closed()
    for failed in await asyncio.gather(*waiting, return_exceptions=True):
        assert isinstance(failed, TabNotFoundError) and failed.tab_id == 1
    assert not holder.done()  # the page's own work fails it, not the queue
    release.set()
    await holder
    with pytest.raises(TabNotFoundError):
        async with tab.input_turn():
            pass
