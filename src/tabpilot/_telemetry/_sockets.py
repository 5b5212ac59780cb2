"""One tab's WebSocket connections, from its target session's `Network.webSocket*` events.

Each connection shows twice, as DevTools shows it:
- in the waterfall (`network_waterfall`), as the `ws://` request among the tab's requests: a row
  once the handshake is answered (status 101), or once it failed (`failure` says why: a refused
  connection, or the server's answer: `Unexpected response code: 403`, status 403); a handshake
  under way is a pending request;
- in `websocket_events`: open, every frame in both directions, errors and the close.

Chromium reports no close for a connection whose page went away (its tab closed, or it navigated
to a new document): the feed ends those here, each with a close whose `error` says why.

Connections are tracked while open, at most `MAX_SOCKETS` per tab: beyond that the oldest is
let go (a handshake still under way is recorded as unfinished, an open connection's later frames
are not recorded).
"""

from __future__ import annotations

import base64
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

from ._entries import (
    PREVIEW_CAP,
    NetworkEntry,
    PendingRequest,
    TelemetryKind,
    WebSocketEntry,
    WebSocketEvent,
    cut,
)

MAX_SOCKETS = 500
"""Connections of one tab tracked at once."""
_RESPONSE_CODE = re.compile(r"response code: (\d{3})")


class SocketSink(Protocol):
    """What the connections of a tab need of the recorder (`Telemetry`)."""

    def next_seq(self) -> int: ...

    def next_socket_id(self) -> int: ...

    def append(self, what: TelemetryKind, entry: Any) -> None: ...


class _Socket:
    __slots__ = ("answered", "id", "started", "started_ts", "url")

    def __init__(self, socket_id: int, url: str) -> None:
        self.id = socket_id
        self.url = url
        self.started = time.time()
        """When the connection was asked for, seconds since the epoch (the handshake's wall time)."""
        self.started_ts: float | None = None
        """The handshake's CDP timestamp (seconds, monotonic): the row's duration counts from it."""
        self.answered = False
        """The handshake has its waterfall row (answered, or failed)."""


class TabSockets:
    """The WebSocket connections of one tab; see the module docstring."""

    def __init__(self, sink: SocketSink, tab_id: int) -> None:
        self._sink = sink
        self.tab_id = tab_id
        self._sockets: OrderedDict[str, _Socket] = OrderedDict()

    def handlers(self) -> dict[str, Callable[[dict[str, Any]], None]]:
        """The events read here, by CDP method."""
        return {
            "Network.webSocketCreated": self._on_created,
            "Network.webSocketWillSendHandshakeRequest": self._on_handshake,
            "Network.webSocketHandshakeResponseReceived": self._on_answered,
            "Network.webSocketFrameSent": lambda p: self._on_frame(p, "sent"),
            "Network.webSocketFrameReceived": lambda p: self._on_frame(p, "received"),
            "Network.webSocketFrameError": self._on_error,
            "Network.webSocketClosed": self._on_closed,
        }

    def pending(self) -> list[PendingRequest]:
        """Handshakes under way, as requests in flight."""
        return [
            PendingRequest(self.tab_id, "GET", s.url, "websocket", s.started)
            for s in self._sockets.values()
            if not s.answered
        ]

    def end_all(self, gone: str) -> None:
        """The page of every connection went (`gone` says how: "the tab closed", "the page navigated
        away", ...): each is closed, and a handshake still under way never finished."""
        for socket in self._sockets.values():
            if socket.answered:
                self._event(socket, "close", error=f"{gone} while the connection was open")
            else:
                why = f"{gone} before the handshake finished"
                self._row(socket, None, None, "", why)
                self._event(socket, "close", error=why)
        self._sockets.clear()

    # -- events ----------------------------------------------------------------------------------

    def _on_created(self, params: dict[str, Any]) -> None:
        socket = self._sockets[params["requestId"]] = _Socket(
            self._sink.next_socket_id(), params.get("url", "")
        )
        self._event(socket, "open")
        if len(self._sockets) > MAX_SOCKETS:
            _, oldest = self._sockets.popitem(last=False)
            if not oldest.answered:
                self._row(oldest, None, None, "", f"still connecting after {MAX_SOCKETS} later connections")

    def _on_handshake(self, params: dict[str, Any]) -> None:
        socket = self._sockets.get(params["requestId"])
        if socket is not None:
            socket.started = params.get("wallTime") or socket.started
            socket.started_ts = params.get("timestamp")

    def _on_answered(self, params: dict[str, Any]) -> None:
        socket = self._sockets.get(params["requestId"])
        if socket is None or socket.answered:
            return
        response = params.get("response", {})
        self._row(
            socket, params.get("timestamp"), response.get("status"), response.get("statusText", ""), None
        )

    def _on_frame(self, params: dict[str, Any], event: WebSocketEvent) -> None:
        socket = self._sockets.get(params["requestId"])
        if socket is None:
            return
        frame = params.get("response", {})
        payload = frame.get("payloadData", "")
        if frame.get("opcode") == 2:  # binary: the payload is base64
            self._event(socket, event, size=len(base64.b64decode(payload or "")), binary=True)
        else:
            size = len(payload) if payload.isascii() else len(payload.encode("utf-8", "replace"))
            self._event(socket, event, size=size, preview=cut(payload, PREVIEW_CAP))

    def _on_error(self, params: dict[str, Any]) -> None:
        socket = self._sockets.get(params["requestId"])
        if socket is None:
            return
        message = str(params.get("errorMessage", ""))
        if not socket.answered:
            # The handshake failed: its row, with the server's answer where it gave one.
            code = _RESPONSE_CODE.search(message)
            self._row(
                socket, params.get("timestamp"), int(code[1]) if code else None, "", message or "failed"
            )
        self._event(socket, "error", error=message)

    def _on_closed(self, params: dict[str, Any]) -> None:
        socket = self._sockets.pop(params["requestId"], None)
        if socket is None:
            return
        if not socket.answered:
            self._row(socket, params.get("timestamp"), None, "", "closed before the handshake finished")
        self._event(socket, "close")

    # -- entries ---------------------------------------------------------------------------------

    def _row(
        self,
        socket: _Socket,
        finished_ts: float | None,
        status: int | None,
        status_text: str,
        failure: str | None,
    ) -> None:
        socket.answered = True
        if finished_ts is not None and socket.started_ts is not None:
            duration = max((finished_ts - socket.started_ts) * 1000, 0.0)
        else:
            duration = max((time.time() - socket.started) * 1000, 0.0)
        sink = self._sink
        sink.append(
            "network_waterfall",
            NetworkEntry(
                sink.next_seq(),
                time.time(),
                self.tab_id,
                "GET",
                socket.url,
                "websocket",
                status,
                status_text,
                failure,
                "",
                socket.started,
                duration,
                {},
                None,
                None,
                False,
                None,
            ),
        )

    def _event(
        self,
        socket: _Socket,
        event: WebSocketEvent,
        *,
        size: int | None = None,
        preview: str | None = None,
        binary: bool = False,
        error: str | None = None,
    ) -> None:
        sink = self._sink
        sink.append(
            "websocket_events",
            WebSocketEntry(
                sink.next_seq(),
                time.time(),
                self.tab_id,
                socket.id,
                socket.url,
                event,
                size,
                preview,
                binary,
                error,
            ),
        )
