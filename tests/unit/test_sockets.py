"""One tab's WebSocket connections stay bounded however many a page opens (a recording sink)."""

from __future__ import annotations

from support import RecordingSink as Sink
from tabpilot import WebSocketEntry
from tabpilot._telemetry._sockets import MAX_SOCKETS, TabSockets


def test_connections_beyond_the_cap_let_the_oldest_go_recorded_as_unfinished() -> None:
    sink = Sink()
    sockets = TabSockets(sink, tab_id=7)
    events = sockets.handlers()
    for n in range(MAX_SOCKETS + 1):
        events["Network.webSocketCreated"]({"requestId": f"r{n}", "url": f"ws://127.0.0.1:1/{n}"})

    assert len(sockets.pending()) == MAX_SOCKETS
    (row,) = sink.rows()
    assert (row.url, row.tab_id, row.status) == ("ws://127.0.0.1:1/0", 7, None)
    assert row.failure == f"still connecting after {MAX_SOCKETS} later connections"
    events["Network.webSocketFrameReceived"]({"requestId": "r0", "response": {"payloadData": "late"}})
    assert not any(isinstance(e, WebSocketEntry) and e.event == "received" for _, e in sink.entries)


def test_a_closed_connection_is_forgotten_and_the_tabs_end_records_handshakes_under_way() -> None:
    sink = Sink()
    sockets = TabSockets(sink, tab_id=7)
    events = sockets.handlers()
    events["Network.webSocketCreated"]({"requestId": "open", "url": "ws://127.0.0.1:1/open"})
    events["Network.webSocketWillSendHandshakeRequest"](
        {"requestId": "open", "timestamp": 10.0, "wallTime": 5.0}
    )
    events["Network.webSocketHandshakeResponseReceived"](
        {
            "requestId": "open",
            "timestamp": 10.25,
            "response": {"status": 101, "statusText": "Switching Protocols"},
        }
    )
    events["Network.webSocketClosed"]({"requestId": "open", "timestamp": 11.0})
    events["Network.webSocketCreated"]({"requestId": "hanging", "url": "ws://127.0.0.1:1/hanging"})
    assert [p.url for p in sockets.pending()] == ["ws://127.0.0.1:1/hanging"]

    sockets.end_all("the tab closed")
    assert sockets.pending() == []
    answered, hanging = sink.rows()
    assert (answered.status, answered.started, answered.duration_ms, answered.failure) == (
        101,
        5.0,
        250.0,
        None,
    )
    assert (hanging.url, hanging.failure) == (
        "ws://127.0.0.1:1/hanging",
        "the tab closed before the handshake finished",
    )
