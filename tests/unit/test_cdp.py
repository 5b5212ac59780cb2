"""Reading a raw CDP message's method without parsing it, and passing each event of a target to
the handlers that asked for its method (pure logic)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from tabpilot._cdp import TargetSessions, event_method


@pytest.mark.parametrize(
    ("raw", "method"),
    [
        ('{"method":"Page.windowOpen","params":{"url":"x"}}', "Page.windowOpen"),
        # The extension's relay writes what Python's json.dumps writes: a space after the colon.
        (json.dumps({"method": "Runtime.bindingCalled", "params": {}}), "Runtime.bindingCalled"),
        # Any other shape is parsed: the method is found wherever it is.
        ('{"params":{"a":1},"method":"Network.loadingFinished"}', "Network.loadingFinished"),
        ('{ "method" : "Log.entryAdded" }', "Log.entryAdded"),
        # An answer, a broken message, something that is not an object: no method.
        ('{"id":3,"result":{}}', ""),
        ('{"method":"Page.windowOp', ""),
        ("[1, 2]", ""),
    ],
)
def test_the_method_of_a_raw_message(raw: str, method: str) -> None:
    assert event_method(raw) == method


def test_a_method_that_only_starts_with_the_name_is_not_taken_for_it() -> None:
    # The tracker asks for Page.windowOpen exactly: a longer name must not pass for it.
    assert event_method('{"method":"Page.windowOpened","params":{}}') == "Page.windowOpened"


class FakeRoot:
    """A browser-level session that only delivers what the test gives it (pure dispatch logic)."""

    def __init__(self) -> None:
        self.listeners: dict[str, Callable[[dict[str, Any]], None]] = {}

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return {"sessionId": "S1"} if method == "Target.attachToTarget" else {}

    def on(self, event: str, handler: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        self.listeners[event] = handler
        return lambda: None

    def deliver(self, message: dict[str, Any]) -> None:
        self.listeners["Target.receivedMessageFromTarget"](
            {"sessionId": "S1", "message": json.dumps(message)}
        )


async def test_a_target_session_passes_each_event_only_to_those_that_asked_for_its_method() -> None:
    root = FakeRoot()
    session = TargetSessions(root).attach("T1")
    for _ in range(10):  # the attach is answered
        await asyncio.sleep(0)
    assert session.session_id == "S1"
    seen: list[tuple[str, str, Any]] = []

    def record(name: str) -> Callable[[str, str], None]:
        return lambda method, raw: seen.append((name, method, json.loads(raw)["params"]))

    session.on_events(("Page.windowOpen",), record("windows"))
    dispose = session.on_events(["Network.requestWillBeSent", "Network.loadingFinished"], record("network"))

    def broken(method: str, raw: str) -> None:
        raise RuntimeError("a consumer's bug")

    session.on_events(["Page.windowOpen"], broken)
    root.deliver({"method": "Network.dataReceived", "params": {"n": 1}})
    root.deliver({"method": "Page.windowOpen", "params": {"n": 2}})
    root.deliver({"method": "Network.loadingFinished", "params": {"n": 3}})
    dispose()
    root.deliver({"method": "Network.requestWillBeSent", "params": {"n": 4}})
    root.deliver({"method": "Page.windowOpen", "params": {"n": 5}})
    assert seen == [
        ("windows", "Page.windowOpen", {"n": 2}),
        ("network", "Network.loadingFinished", {"n": 3}),
        ("windows", "Page.windowOpen", {"n": 5}),
    ]
    assert session.handler_errors == 2  # counted, and the other handlers still ran


async def test_a_domain_is_enabled_once_however_many_users_of_the_session_need_it() -> None:
    # The title observer and telemetry both need Runtime: one enable crosses the wire.
    root = FakeRoot()
    forwarded: list[str] = []
    sent = root.send

    async def send(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        if method == "Target.sendMessageToTarget" and params:
            forwarded.append(json.loads(params["message"])["method"])
        return await sent(method, params)

    root.send = send  # type: ignore[method-assign]
    session = TargetSessions(root).attach("T1")
    first, second = session.enable("Runtime"), session.enable("Runtime")
    session.enable("Log")
    for _ in range(10):
        await asyncio.sleep(0)
    assert first is second
    assert forwarded == ["Runtime.enable", "Log.enable"]
