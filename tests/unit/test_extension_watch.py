"""The extension watch: one connect of the user's browser at a time, whoever asks for it (the
extension's arrival, a call that needs the browser). A fake bridge and a fake connect; the real
race, under load, is in tests/server/test_server_extension.py (a call and the extension's return
each connected an instance: the user's tabs came back twice, once under new ids)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import cast

import pytest

from tabpilot import ConnectError, ExtensionBridge
from tabpilot._extension_watch import ExtensionWatch


class Bridge:
    address = "127.0.0.1:9999"

    def __init__(self) -> None:
        self.connected = False
        self.listeners: list[Callable[[], None]] = []

    def on_connect(self, listener: Callable[[], None]) -> Callable[[], None]:
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener)

    def arrive(self) -> None:
        """The extension connects."""
        self.connected = True
        for listener in list(self.listeners):
            listener()


class Browser:
    """What connecting does: `release` lets a connect finish, `fail` makes it raise."""

    def __init__(self) -> None:
        self.connects = 0
        self.instances = 0
        self.release = asyncio.Event()
        self.fail: Exception | None = None

    async def connect(self, bridge: ExtensionBridge) -> None:
        self.connects += 1
        await self.release.wait()
        if self.fail is not None:
            raise self.fail
        self.instances += 1

    def watch(self) -> tuple[ExtensionWatch, ExtensionBridge, Bridge]:
        fake = Bridge()
        watch = ExtensionWatch(self.connect, lambda _bridge: self.instances > 0, lambda: False)
        bridge = cast(ExtensionBridge, fake)
        watch.watch(bridge)
        return watch, bridge, fake


async def test_a_call_that_needs_the_browser_joins_the_connect_the_extensions_arrival_started() -> None:
    browser = Browser()
    watch, bridge, fake = browser.watch()
    fake.arrive()
    await asyncio.sleep(0)
    call = asyncio.ensure_future(watch.connect(bridge))
    await asyncio.sleep(0.01)
    assert not call.done()  # it waits for the connect under way
    browser.release.set()
    await asyncio.wait_for(call, 5)
    assert (browser.connects, browser.instances) == (1, 1)


async def test_the_extensions_arrival_during_a_calls_connect_starts_no_second_one() -> None:
    browser = Browser()
    watch, bridge, fake = browser.watch()
    fake.connected = True  # connected, its instance lost: a call asks for the browser first
    call = asyncio.ensure_future(watch.connect(bridge))
    await asyncio.sleep(0.01)
    fake.arrive()  # the extension's hello is heard while the call connects
    browser.release.set()
    await asyncio.wait_for(call, 5)
    await watch.arrived(5)
    assert (browser.connects, browser.instances) == (1, 1)
    # With its instance open, neither asks again.
    fake.arrive()
    await watch.connect(bridge)
    assert browser.connects == 1


async def test_a_failed_connect_reaches_the_call_that_waits_for_it_and_the_log_when_none_does(
    caplog: pytest.LogCaptureFixture,
) -> None:
    browser = Browser()
    browser.fail = ConnectError("the extension left while its browser was being connected")
    browser.release.set()
    watch, bridge, fake = browser.watch()
    fake.connected = True
    with pytest.raises(ConnectError, match="the extension left"):
        await watch.connect(bridge)
    with caplog.at_level(logging.ERROR, logger="tabpilot"):
        fake.arrive()
        await watch.arrived(5)
        await asyncio.sleep(0)
    assert browser.connects == 2
    assert "connecting the browser of the tabpilot extension failed" in caplog.text


async def test_a_call_cut_short_leaves_the_connect_running_for_the_next() -> None:
    browser = Browser()
    watch, bridge, fake = browser.watch()
    fake.connected = True
    call = asyncio.ensure_future(watch.connect(bridge))
    await asyncio.sleep(0.01)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    browser.release.set()
    await watch.arrived(5)
    assert (browser.connects, browser.instances) == (1, 1)
