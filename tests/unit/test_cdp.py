"""Reading a raw CDP message's method without parsing it (pure logic)."""

from __future__ import annotations

import json

import pytest

from tabpilot._cdp import event_method


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
