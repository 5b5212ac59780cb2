"""Per-tab telemetry: console, page errors, network, bodies, WebSocket frames and actions.

Every entry is tagged with the id of its tab (None for entries that belong to no tab) and a
sequence number from one counter shared by all kinds, so one cursor (`last_seq`) covers all.
Entries live in bounded rings (`_ring.Ring`), one per kind, and outlive their tab.

How it is fed: the tab manager calls `attach_context` for every browser context it adopts
(console, page errors, finished and failed requests arrive there, for every page, before the
page's own events) and `attach_page` for every tab (WebSocket events exist only per page).
Listeners run on the event loop that drives every tab, so they only copy a few fields into a
frozen entry; what needs a browser round trip (full headers, bodies) runs in a task of
its own and never raises. `await telemetry.settle()` waits for those tasks.

Memory: Playwright keeps every Request and Response it reports (up to 10,000 of each) and every
console argument handle (up to 100,000) until its driver lets them go, so a busy tab would pin
hundreds of MB in this process. Telemetry copies what it records, then lets go of them: it
disposes the argument handles of each console message (so a listener of your own must read
`message.args` at once, not later), and hands finished requests and responses back
(`_release`) unless they belong to a navigation or a redirect. Measured by `bench/memprobe.py`.

    telemetry = Telemetry()
    manager.add_hooks(context=telemetry.attach_context, page=telemetry.attach_page)
    ...
    result = telemetry.query("logs", tab_id=3)
    result.to_dict()   # {"what": "logs", "entries": [{"seq": .., "tabId": 3, ..}], "dropped": 0, ..}
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast, get_args

from playwright.async_api import BrowserContext, ConsoleMessage, Page, Request, Response, WebError, WebSocket

from ._ring import ALL_TABS, AllTabs, Ring

TelemetryKind = Literal[
    "errors", "logs", "network_waterfall", "network_bodies", "websocket_events", "actions"
]
TELEMETRY_KINDS: tuple[TelemetryKind, ...] = get_args(TelemetryKind)
WebSocketEvent = Literal["open", "sent", "received", "close", "error"]
Direction = Literal["sent", "received"]

REDACTED = "[redacted]"
REDACTED_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})

TEXT_CAP = 8 * 1024
"""Console text, error messages and stacks are cut here: a ring bounds entries, not their size."""
PREVIEW_CAP = 256
"""WebSocket frame previews and action argument strings are cut here."""
MAX_LIMIT = 1000

# Severity for the `level` filter: a level selects itself and everything more severe, like
# DevTools' levels. Console types Playwright reports that are not listed count as "info".
_LEVEL_RANK = {
    "debug": 0,
    "verbose": 0,
    "log": 1,
    "info": 1,
    "warning": 2,
    "warn": 2,
    "error": 3,
    "assert": 3,
}
_LEVELS_ACCEPTED = ("debug", "info", "log", "warning", "warn", "error")

_TEXT_MIME_PARTS = (
    "json",
    "xml",
    "javascript",
    "ecmascript",
    "x-www-form-urlencoded",
    "graphql",
    "csv",
    "yaml",
)
_NO_BODY_STATUS = frozenset({204, 205, 304})
_NO_BODY_TYPES = frozenset({"image", "media", "font", "script", "stylesheet"})
_MAX_IN_FLIGHT = 2000
_ROUND_TRIP_TIMEOUT = 10.0
"""A driver call about a page that is closing can take long to fail; no task waits longer."""


def _cut(text: str, cap: int) -> str:
    if len(text) <= cap:
        return text
    return text[:cap] + f"… [{len(text) - cap} more characters]"


def _mime(headers: Mapping[str, str]) -> str:
    """The media type of a response ('text/html'), without parameters."""
    return headers.get("content-type", "").split(";")[0].strip()


def _is_text_mime(mime: str) -> bool:
    mime = mime.lower()
    return mime.startswith("text/") or any(part in mime for part in _TEXT_MIME_PARTS)


# --- entries ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsoleEntry:
    """A console message (`what="logs"`)."""

    seq: int
    timestamp: float
    tab_id: int | None
    level: str
    text: str
    url: str
    line: int
    column: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp": self.timestamp,
            "tabId": self.tab_id,
            "level": self.level,
            "text": self.text,
            "location": {"url": self.url, "line": self.line, "column": self.column},
        }

    def describe(self) -> str:
        where = f" ({self.url}:{self.line})" if self.url else ""
        return f"[tab {self.tab_id}] #{self.seq} {self.level}: {self.text}{where}"


@dataclass(frozen=True, slots=True)
class ErrorEntry:
    """An uncaught page error (`source="exception"`) or a console.error (`source="console"`)."""

    seq: int
    timestamp: float
    tab_id: int | None
    source: Literal["exception", "console"]
    message: str
    stack: str
    url: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp": self.timestamp,
            "tabId": self.tab_id,
            "source": self.source,
            "message": self.message,
            "stack": self.stack,
            "url": self.url,
        }

    def describe(self) -> str:
        head = f"[tab {self.tab_id}] #{self.seq} {self.source}: {self.message}"
        if self.stack:
            # The first frames tell where; the whole stack is in structured content.
            frames = [line.strip() for line in self.stack.splitlines()[1:4] if line.strip()]
            if frames:
                head += "\n    " + "\n    ".join(frames)
        elif self.url:
            head += f" ({self.url})"
        return head


@dataclass(frozen=True, slots=True)
class NetworkEntry:
    """A finished or failed request (`what="network_waterfall"`). Times in ms; -1 if unknown."""

    seq: int
    timestamp: float
    tab_id: int | None
    method: str
    url: str
    resource_type: str
    status: int | None
    status_text: str
    failure: str | None
    mime_type: str
    started: float
    """When the request started, seconds since the epoch."""
    duration_ms: float
    timing: Mapping[str, float]
    request_body_size: int | None
    response_body_size: int | None
    """From Content-Length; None when the server did not send one (network_bodies has the size read)."""
    navigation: bool
    redirected_from: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp": self.timestamp,
            "tabId": self.tab_id,
            "method": self.method,
            "url": self.url,
            "resourceType": self.resource_type,
            "status": self.status,
            "statusText": self.status_text,
            "failure": self.failure,
            "mimeType": self.mime_type,
            "started": self.started,
            "durationMs": self.duration_ms,
            "timing": dict(self.timing),
            "requestBodySize": self.request_body_size,
            "responseBodySize": self.response_body_size,
            "navigation": self.navigation,
            "redirectedFrom": self.redirected_from,
        }

    def describe(self) -> str:
        outcome = f"FAILED {self.failure}" if self.failure else str(self.status)
        size = f", {self.response_body_size} B" if self.response_body_size is not None else ""
        took = f", {self.duration_ms:.0f} ms" if self.duration_ms >= 0 else ""
        return f"[tab {self.tab_id}] #{self.seq} {self.method} {self.url} → {outcome} ({self.resource_type}{took}{size})"


@dataclass(frozen=True, slots=True)
class BodyEntry:
    """Headers and bodies of one request (`what="network_bodies"`): documents, fetch/XHR, event
    streams and other requests; not images, fonts, media, scripts or stylesheets (see `_wants_body`).

    Text bodies are kept up to the byte cap (`truncated` says it was cut); binary bodies are not
    stored (`omitted="binary"`). `omitted` says why there is no body: binary, too large, disabled,
    no body, unavailable (the page closed before it could be read).
    """

    seq: int
    timestamp: float
    tab_id: int | None
    method: str
    url: str
    status: int | None
    mime_type: str
    request_headers: tuple[tuple[str, str], ...]
    response_headers: tuple[tuple[str, str], ...]
    request_body: str | None
    response_body: str | None
    body_size: int | None
    """The whole response body's size in bytes, when known."""
    truncated: bool
    omitted: str | None
    size: int = field(default=0, compare=False)
    """Bytes this entry holds, for the ring's byte bound."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp": self.timestamp,
            "tabId": self.tab_id,
            "method": self.method,
            "url": self.url,
            "status": self.status,
            "mimeType": self.mime_type,
            "requestHeaders": dict(self.request_headers),
            "responseHeaders": dict(self.response_headers),
            "requestBody": self.request_body,
            "responseBody": self.response_body,
            "bodySize": self.body_size,
            "truncated": self.truncated,
            "binary": self.omitted == "binary",
            "omitted": self.omitted,
        }

    def describe(self) -> str:
        head = f"[tab {self.tab_id}] #{self.seq} {self.method} {self.url} → {self.status} {self.mime_type}"
        if self.response_body is None:
            return f"{head} (body {self.omitted})"
        cut = " (truncated)" if self.truncated else ""
        return f"{head}{cut}\n    {_cut(self.response_body, PREVIEW_CAP)!r}"


@dataclass(frozen=True, slots=True)
class WebSocketEntry:
    """A WebSocket connection opening or closing, or one frame sent or received."""

    seq: int
    timestamp: float
    tab_id: int | None
    socket_id: int
    url: str
    event: WebSocketEvent
    size: int | None
    preview: str | None
    binary: bool
    error: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp": self.timestamp,
            "tabId": self.tab_id,
            "socketId": self.socket_id,
            "url": self.url,
            "event": self.event,
            "size": self.size,
            "preview": self.preview,
            "binary": self.binary,
            "error": self.error,
        }

    def describe(self) -> str:
        head = f"[tab {self.tab_id}] #{self.seq} ws{self.socket_id} {self.event}"
        if self.event in ("sent", "received"):
            body = f"<binary {self.size} B>" if self.binary else f"{self.preview!r} ({self.size} B)"
            return f"{head} {body}"
        if self.event == "error":
            return f"{head}: {self.error} ({self.url})"
        return f"{head} {self.url}"


@dataclass(frozen=True, slots=True)
class ActionEntry:
    """An action the server performed on a tab (`tab_id` None for server-wide ones)."""

    seq: int
    timestamp: float
    tab_id: int | None
    tool: str
    arguments: Mapping[str, object]
    outcome: str
    ok: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp": self.timestamp,
            "tabId": self.tab_id,
            "tool": self.tool,
            "arguments": dict(self.arguments),
            "outcome": self.outcome,
            "ok": self.ok,
        }

    def describe(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.arguments.items())
        mark = "ok" if self.ok else "FAILED"
        return f"[tab {self.tab_id}] #{self.seq} {self.tool}({args}) {mark}: {self.outcome}"


@dataclass(frozen=True, slots=True)
class PendingRequest:
    """A request still waiting for its response or body, as of the query (no sequence number:
    it is state, not history; it becomes a NetworkEntry when it finishes or fails)."""

    tab_id: int | None
    method: str
    url: str
    resource_type: str
    started: float
    """Seconds since the epoch."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "tabId": self.tab_id,
            "method": self.method,
            "url": self.url,
            "resourceType": self.resource_type,
            "started": self.started,
            "waitingMs": round((time.time() - self.started) * 1000),
        }

    def describe(self) -> str:
        waiting = time.time() - self.started
        return f"[tab {self.tab_id}] pending {self.method} {self.url} ({self.resource_type}, waiting {waiting:.1f} s)"


TelemetryEntry = ConsoleEntry | ErrorEntry | NetworkEntry | BodyEntry | WebSocketEntry | ActionEntry


class ObservedEntry(Protocol):
    """What a result entry offers: telemetry entries, and tab events (`TabEvent`) too."""

    @property
    def seq(self) -> int: ...

    @property
    def timestamp(self) -> float: ...

    @property
    def tab_id(self) -> int | None: ...

    def to_dict(self) -> dict[str, Any]: ...

    def describe(self) -> str: ...


@dataclass(frozen=True, slots=True)
class ObserveResult:
    """One page of entries, oldest first, with what the caller needs to read them right.

    `next_cursor` is the `since` to pass next time to get only newer entries; when `has_more`,
    more entries than `limit` matched after the cursor and the next call continues from there.
    Without `since`, a query returns the newest `limit` matches. Cursors are per `what`.
    """

    what: str
    entries: tuple[ObservedEntry, ...]
    currently_tracked_tab: int | None
    filtered_by_tab: int | None
    total_entries_all_tabs: int
    returned_entries: int
    dropped: int
    next_cursor: int
    has_more: bool = False
    pending: tuple[PendingRequest, ...] = ()
    """network_waterfall: requests still in flight that match the tab and url/method filters."""

    def to_dict(self) -> dict[str, Any]:
        extra = (
            {"pending_requests": [p.to_dict() for p in self.pending]}
            if self.what == "network_waterfall"
            else {}
        )
        return {
            "what": self.what,
            "entries": [entry.to_dict() for entry in self.entries],
            "currently_tracked_tab": self.currently_tracked_tab,
            "filtered_by_tab": self.filtered_by_tab,
            "total_entries_all_tabs": self.total_entries_all_tabs,
            "returned_entries": self.returned_entries,
            "dropped": self.dropped,
            "next_cursor": self.next_cursor,
            "has_more": self.has_more,
            **extra,
        }


class EventHistory(Protocol):
    """The tab core's event bus, as `observe_tab_events` reads it."""

    @property
    def last_seq(self) -> int: ...

    @property
    def dropped(self) -> int: ...

    def history(self, *, since: int | None = None, tab_id: int | None = None) -> list[Any]: ...


def _check_limit(limit: int) -> None:
    if not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")


def _body_size(entry: BodyEntry) -> int:
    return entry.size


# --- the recorder ------------------------------------------------------------------------------


class Telemetry:
    """Records what every tab does, per kind, in bounded rings; answers tab-filtered queries.

    `max_entries` bounds each kind's ring; `max_body_bytes` bounds what the bodies ring holds;
    `body_cap` is the most kept of one text body (0: keep no bodies). With `redact`, values of
    Authorization, Proxy-Authorization, Cookie and Set-Cookie headers are replaced by "[redacted]".
    """

    def __init__(
        self,
        *,
        max_entries: int = 5000,
        max_body_bytes: int = 8 * 1024 * 1024,
        body_cap: int = 64 * 1024,
        redact: bool = True,
    ) -> None:
        if body_cap < 0:
            raise ValueError("body_cap must not be negative")
        self.max_entries = max_entries
        self.body_cap = body_cap
        self.redact = redact
        self._seq = 0
        self._logs: Ring[ConsoleEntry] = Ring(max_entries)
        self._errors: Ring[ErrorEntry] = Ring(max_entries)
        self._network: Ring[NetworkEntry] = Ring(max_entries)
        self._bodies: Ring[BodyEntry] = Ring(max_entries, max_bytes=max_body_bytes, size_of=_body_size)
        self._websockets: Ring[WebSocketEntry] = Ring(max_entries)
        self._actions: Ring[ActionEntry] = Ring(max_entries)
        self._rings: dict[TelemetryKind, Ring[Any]] = {
            "errors": self._errors,
            "logs": self._logs,
            "network_waterfall": self._network,
            "network_bodies": self._bodies,
            "websocket_events": self._websockets,
            "actions": self._actions,
        }
        self._tasks: set[asyncio.Task[None]] = set()
        self._in_flight: dict[Request, tuple[Callable[[Page | None], int | None], float]] = {}
        """Requests sent and not yet finished or failed: how to name their tab, when they started."""
        self._responded: dict[Request, Response] = {}
        """Responses of requests still in flight (headers in, body not yet): a request its tab's
        closing cuts short is recorded with its status."""
        self._socket_ids = 0
        self._handles: list[Any] = []
        """Console argument handles waiting to be disposed (one task disposes them in batches)."""
        self._disposing = False
        # Bodies are fetched whole over the driver pipe; past this size only the headers are kept.
        self._fetch_limit = max(body_cap * 16, 1024 * 1024)
        self.body_failures = 0
        """Bodies that could not be read (the page closed, the browser went away)."""
        self.listener_errors = 0
        """Events a listener could not record; a listener never raises into Playwright."""

    # -- cursors -------------------------------------------------------------------------------

    @property
    def last_seq(self) -> int:
        """The sequence number of the newest entry of any kind (0: none yet)."""
        return self._seq

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    def error_counts_since(self, seq: int) -> dict[int, int]:
        """New errors (page errors and console errors) per tab after cursor `seq`."""
        return {tab: n for tab, n in self._errors.counts_since(seq).items() if tab is not None}

    def dropped(self, what: TelemetryKind) -> int:
        return self._ring(what).dropped

    # -- attaching ----------------------------------------------------------------------------

    def attach_context(
        self, context: BrowserContext, tab_id_for_page: Callable[[Page], int | None]
    ) -> Callable[[], None]:
        """Record console messages, page errors and requests of every page of `context`.

        `tab_id_for_page` names a page's tab (registering a page it has not seen yet, so a popup's
        first console line already has its tab). Returns the disposer (safe to call twice).
        """

        def tab_of(page: Page | None) -> int | None:
            return tab_id_for_page(page) if page is not None else None

        def on_console(message: ConsoleMessage) -> None:
            try:
                self._on_console(message, tab_of(message.page))
            except Exception:
                self.listener_errors += 1

        def on_weberror(error: WebError) -> None:
            try:
                self._on_page_error(error, tab_of(error.page))
            except Exception:
                self.listener_errors += 1

        def on_request(request: Request) -> None:
            try:
                self._in_flight[request] = (tab_of, time.time())
                if len(self._in_flight) > _MAX_IN_FLIGHT:
                    # Requests of a page that went away may never finish: record the oldest as
                    # unfinished rather than track it for ever (recorded, so nothing is lost).
                    oldest = next(iter(self._in_flight))
                    self._record_unfinished(oldest, f"still unfinished after {_MAX_IN_FLIGHT} later requests")
            except Exception:
                self.listener_errors += 1

        def on_response(response: Response) -> None:
            try:
                if response.request in self._in_flight:
                    self._responded[response.request] = response
            except Exception:
                self.listener_errors += 1

        def on_request_finished(request: Request) -> None:
            try:
                self._in_flight.pop(request, None)
                self._responded.pop(request, None)
                self._on_request_finished(request, tab_of(_page_of(request)))
            except Exception:
                self.listener_errors += 1

        def on_request_failed(request: Request) -> None:
            try:
                self._in_flight.pop(request, None)
                self._responded.pop(request, None)
                self._record_request(request, tab_of(_page_of(request)), None)
                _release_request(request, None)
            except Exception:
                self.listener_errors += 1

        handlers: list[tuple[str, Callable[[Any], None]]] = [
            ("console", on_console),
            ("weberror", on_weberror),
            ("request", on_request),
            ("response", on_response),
            ("requestfinished", on_request_finished),
            ("requestfailed", on_request_failed),
        ]
        for event, handler in handlers:
            context.on(event, handler)  # type: ignore[call-overload]
        return _disposer(context, handlers)

    def attach_page(self, page: Page, tab_id: int) -> Callable[[], None]:
        """Record the WebSocket connections of one tab. Returns the disposer (safe to call twice)."""

        def on_websocket(socket: WebSocket) -> None:
            try:
                self._watch_socket(socket, tab_id)
            except Exception:
                self.listener_errors += 1

        def on_close(closed: Page) -> None:
            # A page that closes itself right after a load (a sign-in popup's callback) gets no
            # requestfinished for its last requests: record them now, as cut short by the close.
            try:
                for request in [r for r in self._in_flight if _page_of(r) is closed]:
                    self._record_unfinished(request, "the tab closed before the request finished", tab_id)
            except Exception:
                self.listener_errors += 1

        handlers: list[tuple[str, Callable[[Any], None]]] = [("websocket", on_websocket), ("close", on_close)]
        for event, handler in handlers:
            page.on(event, handler)  # type: ignore[call-overload]
        return _disposer(page, handlers)

    def _record_unfinished(self, request: Request, why: str, tab_id: int | None = None) -> None:
        """Record a request that will never finish (as failed, saying why) and stop tracking it."""
        tracked = self._in_flight.pop(request, None)
        response = self._responded.pop(request, None)
        if tab_id is None and tracked is not None:
            tab_id = tracked[0](_page_of(request))
        # With its response in (a page that loaded, then closed itself) it is recorded as answered:
        # only the browser's "finished loading" notice was lost with the tab.
        self._record_request(request, tab_id, response, failure=why if response is None else None)
        if response is not None and _wants_body(request, response):
            # Its body can no longer be read: say so, as for any body lost with its tab.
            self.body_failures += 1
            headers = response.headers
            self._append_body(
                request,
                tab_id,
                response.status,
                _mime(headers),
                request.headers,
                headers,
                None,
                None,
                False,
                "unavailable",
            )
        _release_request(request, response)

    async def settle(self, timeout: float = 5.0) -> None:
        """Wait (up to `timeout` s) until entries that need a browser round trip are recorded."""
        deadline = asyncio.get_running_loop().time() + timeout
        while self._tasks:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                return
            await asyncio.wait(set(self._tasks), timeout=left)

    def _spawn(self, coro: Any) -> None:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- console and errors --------------------------------------------------------------------

    def _on_console(self, message: ConsoleMessage, tab_id: int | None) -> None:
        level = message.type
        text = _cut(message.text, TEXT_CAP)
        location = message.location
        url = location.get("url", "") or ""
        now = time.time()
        self._logs.append(
            ConsoleEntry(
                self._next(),
                now,
                tab_id,
                level,
                text,
                url,
                location.get("lineNumber", 0),
                location.get("columnNumber", 0),
            )
        )
        if level == "error" or level == "assert":
            self._errors.append(ErrorEntry(self._next(), now, tab_id, "console", text, "", url))
        self._dispose_args(message)

    def _dispose_args(self, message: ConsoleMessage) -> None:
        # Each argument is a handle to a page object that the driver (and the page) would keep
        # until the tab closes: the text above is all that is recorded of them.
        args = getattr(message, "args", None)
        if not args:
            return
        self._handles.extend(args)
        if not self._disposing:
            self._disposing = True
            self._spawn(self._dispose_handles())

    async def _dispose_handles(self) -> None:
        try:
            while self._handles:
                batch, self._handles = self._handles, []
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(_ROUND_TRIP_TIMEOUT):
                        await asyncio.gather(*(h.dispose() for h in batch), return_exceptions=True)
        finally:
            self._disposing = False

    def _on_page_error(self, web_error: WebError, tab_id: int | None) -> None:
        error = web_error.error
        message = error.message or error.name or "Error"
        stack = error.stack or ""
        url = ""
        with contextlib.suppress(Exception):  # location is recent in Playwright
            url = web_error.location.get("url", "") or ""
        self._errors.append(
            ErrorEntry(
                self._next(),
                time.time(),
                tab_id,
                "exception",
                _cut(message, TEXT_CAP),
                _cut(stack, TEXT_CAP),
                url,
            )
        )

    # -- network -------------------------------------------------------------------------------

    def _on_request_finished(self, request: Request, tab_id: int | None) -> None:
        # Set when the response arrived, before this event (Playwright 1.5x without the property
        # takes the driver round trip instead).
        response: Response | None = getattr(request, "existing_response", None)
        self._record_request(request, tab_id, response)
        if response is None:
            self._spawn(self._fetch_response_then_body(request, tab_id))
        elif _wants_body(request, response):
            self._spawn(self._record_body(request, tab_id, response))
        else:
            _release_request(request, response)

    def _record_request(
        self, request: Request, tab_id: int | None, response: Response | None, *, failure: str | None = None
    ) -> None:
        timing = request.timing
        started = timing.get("startTime", -1)
        duration = timing.get("responseEnd", -1)
        redirected = request.redirected_from
        headers = response.headers if response is not None else {}
        length = headers.get("content-length", "")
        post = request.post_data_buffer
        self._network.append(
            NetworkEntry(
                self._next(),
                time.time(),
                tab_id,
                request.method,
                request.url,
                request.resource_type,
                response.status if response is not None else None,
                response.status_text if response is not None else "",
                failure or request.failure,
                _mime(headers),
                started / 1000 if started > 0 else -1,
                float(duration),
                cast("dict[str, float]", dict(timing)),
                len(post) if post is not None else None,
                int(length) if length.isdigit() else None,
                request.is_navigation_request(),
                redirected.url if redirected is not None else None,
            )
        )

    async def _fetch_response_then_body(self, request: Request, tab_id: int | None) -> None:
        try:
            async with asyncio.timeout(_ROUND_TRIP_TIMEOUT):
                response = await request.response()
        except Exception:
            self.body_failures += 1
            return
        if response is not None and _wants_body(request, response):
            await self._record_body(request, tab_id, response)
        else:
            _release_request(request, response)

    async def _record_body(self, request: Request, tab_id: int | None, response: Response) -> None:
        """Full headers (with cookies, which the event's headers lack) and the text body: one task
        per request, never raising. A page that closed meanwhile leaves `omitted="unavailable"`."""
        try:
            headers = response.headers
            mime = _mime(headers)
            length_header = headers.get("content-length", "")
            length = int(length_header) if length_header.isdigit() else None
            status = response.status
            omitted: str | None = None
            if request.method == "HEAD" or status in _NO_BODY_STATUS or length == 0:
                omitted = "no body"
            elif not _is_text_mime(mime):
                omitted = "binary"
            elif self.body_cap == 0:
                omitted = "disabled"
            elif length is not None and length > self._fetch_limit:
                omitted = "too large"
            calls: list[Any] = [request.all_headers(), response.all_headers()]
            if omitted is None:
                calls.append(response.body())
            try:
                async with asyncio.timeout(_ROUND_TRIP_TIMEOUT):
                    got = await asyncio.gather(*calls, return_exceptions=True)
            except TimeoutError:
                got = [TimeoutError()] * len(calls)
            request_headers = got[0] if isinstance(got[0], dict) else request.headers
            response_headers = got[1] if isinstance(got[1], dict) else headers
            body: str | None = None
            truncated = False
            if omitted is None:
                raw = got[2]
                if isinstance(raw, bytes):
                    length = len(raw)
                    truncated = length > self.body_cap
                    # Cutting bytes may split a character: drop the partial one rather than garble it.
                    body = raw[: self.body_cap].decode("utf-8", errors="ignore" if truncated else "replace")
                else:
                    self.body_failures += 1
                    omitted = "unavailable"
            self._append_body(
                request,
                tab_id,
                status,
                mime,
                request_headers,
                response_headers,
                body,
                length,
                truncated,
                omitted,
            )
        except Exception:
            self.listener_errors += 1
        finally:
            _release_request(request, response)

    def _append_body(
        self,
        request: Request,
        tab_id: int | None,
        status: int,
        mime: str,
        request_headers: Mapping[str, str],
        response_headers: Mapping[str, str],
        body: str | None,
        length: int | None,
        truncated: bool,
        omitted: str | None,
    ) -> None:
        request_body: str | None = None
        post = request.post_data_buffer
        if post and self.body_cap:
            request_body = post[: self.body_cap].decode("utf-8", errors="replace")
        req_h = self._headers(request_headers)
        resp_h = self._headers(response_headers)
        size = (
            len(body or "")
            + len(request_body or "")
            + sum(len(k) + len(v) for k, v in req_h)
            + sum(len(k) + len(v) for k, v in resp_h)
            + 200  # the entry itself
        )
        self._bodies.append(
            BodyEntry(
                self._next(),
                time.time(),
                tab_id,
                request.method,
                request.url,
                status,
                mime,
                req_h,
                resp_h,
                request_body,
                body,
                length,
                truncated,
                omitted,
                size,
            )
        )

    def _headers(self, headers: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
        if not self.redact:
            return tuple(headers.items())
        return tuple((k, REDACTED if k.lower() in REDACTED_HEADERS else v) for k, v in headers.items())

    # -- WebSocket -----------------------------------------------------------------------------

    def _watch_socket(self, socket: WebSocket, tab_id: int) -> None:
        self._socket_ids += 1
        socket_id = self._socket_ids
        url = socket.url

        def record(
            event: WebSocketEvent, payload: str | bytes | None = None, error: str | None = None
        ) -> None:
            try:
                size: int | None = None
                preview: str | None = None
                binary = isinstance(payload, bytes)
                if isinstance(payload, str):
                    # Cheap size for ASCII (the usual case); exact bytes otherwise.
                    size = len(payload) if payload.isascii() else len(payload.encode("utf-8", "replace"))
                    preview = _cut(payload, PREVIEW_CAP)
                elif isinstance(payload, bytes):
                    size = len(payload)
                self._websockets.append(
                    WebSocketEntry(
                        self._next(), time.time(), tab_id, socket_id, url, event, size, preview, binary, error
                    )
                )
            except Exception:
                self.listener_errors += 1

        record("open")
        socket.on("framesent", lambda payload: record("sent", payload))
        socket.on("framereceived", lambda payload: record("received", payload))
        socket.on("close", lambda _socket: record("close"))
        socket.on("socketerror", lambda message: record("error", error=str(message)))

    # -- actions -------------------------------------------------------------------------------

    def record_action(
        self, tab_id: int | None, tool: str, arguments: Mapping[str, object], outcome: str, *, ok: bool
    ) -> None:
        """Note an action the server performed (long argument strings are cut)."""
        args = {
            k: _cut(v, PREVIEW_CAP) if isinstance(v, str) else v
            for k, v in arguments.items()
            if v is not None
        }
        self._actions.append(
            ActionEntry(self._next(), time.time(), tab_id, tool, args, _cut(outcome, TEXT_CAP), ok)
        )

    @staticmethod
    def query_tab_events(
        events: EventHistory,
        *,
        tab_id: int | None = None,
        limit: int = 100,
        since: int | None = None,
        active_tab_id: int | None = None,
    ) -> ObserveResult:
        """`what="tab_events"`: the tab core's event history (`manager.events`), paged like the
        telemetry kinds. Its sequence numbers (and so its cursors) are the event bus's own."""
        _check_limit(limit)
        matched = events.history(since=since, tab_id=tab_id)
        if since is None:
            page, more = matched[-limit:], False
        else:
            page, more = matched[:limit], len(matched) > limit
        return ObserveResult(
            what="tab_events",
            entries=tuple(page),
            currently_tracked_tab=active_tab_id,
            filtered_by_tab=tab_id,
            total_entries_all_tabs=len(events.history()),
            returned_entries=len(page),
            dropped=events.dropped,
            next_cursor=page[-1].seq if more else events.last_seq,
            has_more=more,
        )

    # -- queries -------------------------------------------------------------------------------

    def _ring(self, what: str) -> Ring[Any]:
        ring = self._rings.get(what)  # type: ignore[call-overload]
        if ring is None:
            raise ValueError(f"what must be one of {', '.join(TELEMETRY_KINDS)}; got {what!r}")
        return ring  # type: ignore[no-any-return]

    def query(
        self,
        what: TelemetryKind,
        *,
        tab_id: int | None = None,
        limit: int = 100,
        since: int | None = None,
        level: str | None = None,
        url: str | None = None,
        method: str | None = None,
        status_min: int | None = None,
        status_max: int | None = None,
        direction: Direction | None = None,
        active_tab_id: int | None = None,
    ) -> ObserveResult:
        """Entries of one kind, of one tab (`tab_id`) or of all tabs, oldest first.

        Filters: `level` (logs: that level and more severe), `url` (substring; logs by their
        source location), `method` and `status_min`/`status_max` (network kinds; a failed
        request has no status and matches no status filter), `direction` (websocket_events).
        A filter that does not apply to `what` is an error, so a typo never silently matches all.
        `dropped` counts the entries of this kind evicted so far (of the tab, when `tab_id` is given).
        """
        ring = self._ring(what)
        _check_limit(limit)
        match = _matcher(what, level, url, method, status_min, status_max, direction)
        tab: int | AllTabs = ALL_TABS if tab_id is None else tab_id
        entries, more = ring.select(tab=tab, since=since, limit=limit, match=match)
        more = more and since is not None
        pending: tuple[PendingRequest, ...] = ()
        if what == "network_waterfall" and status_min is None and status_max is None:
            pending = self._pending(tab, match)
        return ObserveResult(
            what=what,
            entries=tuple(entries),
            currently_tracked_tab=active_tab_id,
            filtered_by_tab=tab_id,
            total_entries_all_tabs=len(ring),
            returned_entries=len(entries),
            dropped=ring.dropped_for(tab),
            next_cursor=entries[-1].seq if more else self._seq,
            has_more=more,
            pending=pending,
        )

    def _pending(self, tab: int | AllTabs, match: Callable[[Any], bool] | None) -> tuple[PendingRequest, ...]:
        found: list[PendingRequest] = []
        for request, (tab_of, started) in list(self._in_flight.items()):
            page = _page_of(request)
            if page is not None and page.is_closed():  # it will never finish
                self._record_unfinished(request, "the tab closed before the request finished")
                continue
            tab_id = tab_of(page)
            if tab is not ALL_TABS and tab_id != tab:
                continue
            item = PendingRequest(tab_id, request.method, request.url, request.resource_type, started)
            if match is None or match(item):
                found.append(item)
        return tuple(found)


def _matcher(
    what: TelemetryKind,
    level: str | None,
    url: str | None,
    method: str | None,
    status_min: int | None,
    status_max: int | None,
    direction: Direction | None,
) -> Callable[[Any], bool] | None:
    network = what in ("network_waterfall", "network_bodies")
    for name, value, applies, kinds in (
        ("level", level, what == "logs", "logs"),
        ("url", url, what != "actions", "every kind but actions"),
        ("method", method, network, "network_waterfall and network_bodies"),
        ("statusMin", status_min, network, "network_waterfall and network_bodies"),
        ("statusMax", status_max, network, "network_waterfall and network_bodies"),
        ("direction", direction, what == "websocket_events", "websocket_events"),
    ):
        if value is not None and not applies:
            raise ValueError(f"The {name} filter applies to {kinds}, not to {what}.")
    tests: list[Callable[[Any], bool]] = []
    if level is not None:
        rank = _LEVEL_RANK.get(level.lower())
        if rank is None:
            raise ValueError(f"level must be one of {', '.join(_LEVELS_ACCEPTED)}; got {level!r}")
        tests.append(lambda e: _LEVEL_RANK.get(e.level, 1) >= rank)
    if url:
        tests.append(lambda e: url in e.url)
    if method:
        wanted = method.upper()
        tests.append(lambda e: e.method == wanted)
    if status_min is not None or status_max is not None:
        low = status_min if status_min is not None else 0
        high = status_max if status_max is not None else 999
        tests.append(lambda e: e.status is not None and low <= e.status <= high)
    if direction is not None:
        if direction not in ("sent", "received"):
            raise ValueError(f"direction must be 'sent' or 'received'; got {direction!r}")
        tests.append(lambda e: e.event == direction)
    if not tests:
        return None
    if len(tests) == 1:
        return tests[0]
    return lambda e: all(test(e) for test in tests)


def _page_of(request: Request) -> Page | None:
    # Requests of service workers have no frame, hence no tab.
    try:
        return request.frame.page
    except Exception:
        return None


def _wants_body(request: Request, response: Response) -> bool:
    # A redirect has no body of its own. Images, fonts and media are binary; scripts and
    # stylesheets are static assets, large and many, that would crowd the API responses and
    # documents an agent debugs out of the byte-bounded ring. The waterfall has them all.
    return not 300 <= response.status < 400 and request.resource_type not in _NO_BODY_TYPES


def _disposer(emitter: Any, handlers: list[tuple[str, Callable[[Any], None]]]) -> Callable[[], None]:
    def dispose() -> None:
        while handlers:
            event, handler = handlers.pop()
            with contextlib.suppress(Exception):
                emitter.remove_listener(event, handler)

    return dispose


# --- letting go of Playwright's objects --------------------------------------------------------
#
# Playwright's connection maps every object its driver reported (by guid) until the driver
# disposes it, and the driver disposes requests and responses only 1,000 at a time once it holds
# 10,000 of each (or when their page closes). Each costs several KB here (headers twice, timing,
# futures, event emitters), so 20 busy tabs held about 200 MB of them. Once a finished request
# is recorded, `_release_request` puts a small stand-in in its place in that map: the object
# lives on only while someone else holds it, and whatever the driver later says about the guid
# (only its disposal, for a finished sub-resource request) reaches the stand-in.


class _Released:
    """Stands in for a released object in Playwright's object tables."""

    __slots__ = (
        "__weakref__",
        "_connection",
        "_guid",
        "_object",
        "_objects",
        "_parent",
        "_type",
        "_was_collected",
    )

    def __init__(self, impl: Any) -> None:
        self._connection = impl._connection
        self._guid = impl._guid
        self._type = impl._type
        self._parent = impl._parent
        self._object = weakref.ref(impl)
        self._was_collected = False
        self._objects: dict[str, _Released] = dict(impl._objects)
        """Released children (a request's response): the driver disposes them with their parent."""
        for child in self._objects.values():
            child._parent = self  # not the object: a stand-in must not keep it alive

    @property
    def _channel(self) -> Any:
        # A reference to the guid from the driver: right while the object lives, an error after.
        impl = self._object()
        if impl is None:
            raise RuntimeError(f"{self._type} {self._guid} was released by tabpilot telemetry")
        return impl._channel

    def _dispose(self, reason: str | None) -> None:
        if self._parent is not None and self._parent._objects.get(self._guid) is self:
            del self._parent._objects[self._guid]
        if self._connection._objects.get(self._guid) is self:
            del self._connection._objects[self._guid]
        for child in list(self._objects.values()):
            child._dispose(reason)
        self._objects.clear()
        impl = self._object()
        if impl is not None:
            impl._dispose(reason)

    def _adopt(self, child: Any) -> None:  # never a parent; here for completeness
        raise RuntimeError(f"{self._type} {self._guid} was released by tabpilot telemetry")

    def _debug_scope_state(self) -> Any:
        return {"_guid": self._guid, "objects": []}


def _release(obj: Any) -> None:
    """Swap `obj` (an API object or its implementation) for a `_Released` in Playwright's maps;
    does nothing if those are not what this was written against."""
    impl = getattr(obj, "_impl_obj", obj)
    connection = getattr(impl, "_connection", None)
    objects = getattr(connection, "_objects", None)
    guid = getattr(impl, "_guid", None)
    if not isinstance(objects, dict) or guid is None or objects.get(guid) is not impl:
        return
    children = getattr(impl, "_objects", None)
    if not isinstance(children, dict) or not all(isinstance(c, _Released) for c in children.values()):
        return  # it has live children: leave it alone
    parent = getattr(impl, "_parent", None)
    parent_objects = getattr(parent, "_objects", None)
    stand_in = _Released(impl)
    objects[guid] = stand_in
    if isinstance(parent_objects, dict) and parent_objects.get(guid) is impl:
        parent_objects[guid] = stand_in


def _release_request(request: Request, response: Response | None) -> None:
    """Let go of a finished or failed request and its response, unless the driver may name them
    again: a navigation's response is the result of goto/reload, a redirect's request is the
    `redirectedFrom` of the next one."""
    try:
        if request.is_navigation_request() or request.redirected_to is not None:
            return
        if response is not None and 300 <= response.status < 400:
            return
        if response is not None:
            _release(response)  # first: it may be the request's child
        _release(request)
    except Exception:
        pass
