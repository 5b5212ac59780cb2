"""One tab's telemetry: the CDP events of its target session turned into entries.

The feed enables the Network and Runtime domains on the tab's own target session (attached the
moment the target exists, so a popup's first request and console line are seen; Runtime alone for
a recorder without `network`) and reads:
- `Runtime.consoleAPICalled`, `Runtime.exceptionThrown`, `Log.entryAdded`: console messages
  (the page's and the browser's) and page errors;
- `Network.requestWillBeSent` ... `loadingFinished`/`loadingFailed` (+ the `ExtraInfo` events for
  cookies and raw headers): the waterfall; bodies by `Network.getResponseBody` once loaded;
- `Network.webSocket*`: connections, frames, closes, and the handshake as a waterfall row
  (`_sockets`); `Runtime.executionContextsCleared`: a new document, which ends the old one's.
A document that loaded before Network was on (the attach races Playwright's short hold of a new
popup) is recovered from the page's navigation timing (`_timing`), and so is the end of one whose
start and answer the feed heard (the browser reports those, the page the end); a hop of a redirect
chain that started before is recorded from its answer, and the hops before it are counted as
dropped. A cross-site iframe or a dedicated worker of the tab (or a shared worker it started)
has a feed of its own on its own target's session; a request that starts in one feed and ends in
another (the iframe's document, the worker's script) is handed over between them
(`Sink.hand_over`), and the raw headers the page's target hears of a worker's request are put on
it where it is.

A new worker waits at its start for the sessions attached to it, but Chromium lets it run as soon as
one of them says so, and Playwright's driver says so at once: the worker's script can finish
loading, and its first requests go out, before its feed's Network.enable is in place. The script's
row is then settled once the worker answers an evaluation (its script has run): recorded as
loaded, with what was seen of it. A worker's request whose start the feed never saw is counted as
dropped when it ends; it is never recorded half-known.

Messages arrive as raw JSON. Those the feed does not use are skipped before parsing; past a
per-tab rate the feed drops what it cannot keep before parsing it, and counts it as dropped.
Console lines at error level have a rate of their own (a flood of other lines never cuts them);
one cut is counted as a dropped error too. The browser's own lines (`Log.entryAdded`) are few
(each follows a load, a request, ... of the page) and are parsed before the rate, so that every
line is kept or counted exactly once: the page's target hears each line of the tab's workers there
too (the worker's feed keeps or counts it), and a missing icon's line at error level is no error.

The browser's own console messages for the page (`Log.entryAdded`: a resource that failed to
load, a blocked request, a CSP violation, a refused `window.close()`, ...) are console entries
too, with Chromium's name for their kind as their source; those at error level are errors.

A page that logs past that rate is limited at the source as well: the feed puts a small script
in it (now and in every later document of the tab) that passes console calls at the same rate,
drops the rest and says how many (and how many of them were errors, which have their own rate
there too), at most once a second, in a console line only this feed recognizes. Every process
between the page and tabpilot (Playwright's driver gets every console event of the page) then
carries a trickle instead of the flood. Quiet tabs never get the script.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import secrets
import sys
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

from .._cdp import WORKER_TYPES, TargetSession
from ._entries import (
    REDACTED,
    REDACTED_HEADERS,
    TEXT_CAP,
    BodyEntry,
    ConsoleEntry,
    ErrorEntry,
    NetworkEntry,
    PendingRequest,
    TelemetryKind,
    Timing,
    cut,
)
from ._limits import LIMITER_URL, Bucket, console_limiter
from ._sockets import TabSockets
from ._timing import NAVIGATION_TIMING, document_entry

MAX_IN_FLIGHT = 2000
MAX_BROWSER_FRAMES = 100
"""Frames of the browser's own viewer remembered per feed (a page with more PDF iframes is rare)."""
FINISH_GRACE = 2.0
"""Seconds after its tab went within which a tab's session is expected to close."""
SCRIPT_GRACE = 1.0
"""Seconds after a worker first ran code within which its script's own end is expected to arrive."""
RELEASE_EVERY = 200
"""Console messages after which the feed lets the page free the objects they showed."""

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
_ERROR_LEVEL = re.compile(r'"type":\s*"(?:error|assert)"')
"""A `Runtime.consoleAPICalled` at error level, told from its raw JSON by the console call's
`type` (the values shown inside an event have types of their own, never these: a string's quotes
would be escaped)."""
_LOG_LEVELS = {"verbose": "debug", "info": "info", "warning": "warning", "error": "error"}
"""Chromium's log levels as console levels (`console.debug` is "debug")."""
_NO_BODY_STATUS = frozenset({204, 205, 304})
_EMPTY_STATUS = frozenset({204, 205})
"""Answers that have no body by definition: their end is the response itself."""
_NO_BODY_TYPES = frozenset({"image", "media", "font", "script", "stylesheet"})
BROWSER_OWN = ("chrome://", "chrome-extension://mhjfbmdgcfjbbpaeojofohoefgiehjai/")
"""Requests for these URLs are the browser's own: not recorded. Chromium's PDF viewer, in a frame
of the page, loads some 120 to 200 resources, from chrome:// or (Chromium 156) from its built-in
extension, whose id is the same in every Chromium; a web page cannot load them."""
_CONTROL = re.compile("[\x00-\x08\x0e-\x1f]")
"""Characters no text body holds: a body of bytes (Chromium hands a request's as text)."""


def _downloaded(request: _Request) -> bool:
    """Whether an aborted document request was the browser's download: an answer the server sent
    as an attachment, or as bytes of no type (what Chromium saves instead of showing)."""
    response = request.response
    if request.resource_type != "document" or response is None or response.status is None:
        return False
    if not 200 <= response.status < 300:
        return False
    disposition = request.headers()[1].get("content-disposition", "")
    return disposition.strip().lower().startswith("attachment") or response.mime == "application/octet-stream"


def is_text_mime(mime: str) -> bool:
    mime = mime.lower()
    return mime.startswith("text/") or any(part in mime for part in _TEXT_MIME_PARTS)


def _redacted(headers: Mapping[str, str], redact: bool) -> tuple[tuple[str, str], ...]:
    if not redact:
        return tuple(headers.items())
    return tuple((k, REDACTED if k.lower() in REDACTED_HEADERS else v) for k, v in headers.items())


def render_value(obj: Mapping[str, Any]) -> str:
    """A console argument as text, the way Playwright's `ConsoleMessage.text` shows it (a boolean
    as JavaScript writes it: `true`)."""
    kind = obj.get("type")
    if kind == "undefined":
        return "undefined"
    if "value" in obj:
        value = obj["value"]
        if isinstance(value, dict | list):
            return json.dumps(value)
        if isinstance(value, bool):
            return "true" if value else "false"
        return "null" if value is None else str(value)
    if obj.get("unserializableValue"):
        return str(obj["unserializableValue"])
    preview = obj.get("preview")
    if preview and obj.get("subtype") == "array":
        return "[" + ", ".join(str(p.get("value", "")) for p in preview.get("properties", [])) + "]"
    if preview and obj.get("description") == "Object":
        return (
            "{"
            + ", ".join(f"{p.get('name')}: {p.get('value', '')}" for p in preview.get("properties", []))
            + "}"
        )
    return str(obj.get("description", kind or ""))


_SPECIFIER = re.compile("%[sdifoOc%]")


def console_text(args: list[Mapping[str, Any]]) -> str:
    """A console call's arguments as one line, as DevTools shows it: when the first is text with
    `%` in it, it is a format string whose `%s`, `%d`/`%i` (an integer), `%f`, `%o`/`%O` take the
    next arguments in turn and `%c` takes one (its CSS) and shows nothing; `%%` is `%`; a
    specifier with no argument left stays as written, and the arguments left over follow. A lone
    argument is shown as it is (nothing to fill in)."""
    if len(args) < 2:  # most lines: the one check on the hot path
        return render_value(args[0]) if args else ""
    form = args[0].get("value")
    if not isinstance(form, str) or "%" not in form or args[0].get("type") != "string":
        return " ".join(render_value(arg) for arg in args)
    rest = args[1:]
    taken = 0

    def fill(match: re.Match[str]) -> str:
        nonlocal taken
        kind = match[0][1]
        if kind == "%":
            return "%"
        if taken == len(rest):
            return match[0]
        arg = rest[taken]
        taken += 1
        if kind == "c":
            return ""
        if kind in "dif":
            value = arg.get("value")
            if arg.get("type") != "number" or not isinstance(value, int | float):
                return "NaN" if arg.get("type") != "bigint" else render_value(arg)
            return str(int(value)) if kind != "f" or float(value).is_integer() else str(value)
        return render_value(arg)

    return " ".join([_SPECIFIER.sub(fill, form), *(render_value(arg) for arg in rest[taken:])])


def shared(text: Any) -> str:
    """One copy of a string that many entries repeat (header names and values, URLs, methods,
    frame and document ids, MIME types; a line a page logs again and again, a body a polled URL
    answers again and again): every event is decoded anew, and the logs, the waterfall, the
    bodies and the requests in flight keep thousands of them. `sys.intern` keeps a string only
    while something holds it."""
    return sys.intern(text) if type(text) is str else str(text)


def _shared_headers(headers: Mapping[str, Any] | None) -> dict[str, str]:
    """Headers as kept: names in lower case, names and values `shared`."""
    return {shared(k.lower()): shared(v) for k, v in (headers or {}).items()}


class _Response:
    """What a request's row and body entry read of its CDP response, kept while the request is in
    flight; not the rest of it (security details, connection, protocol, ...)."""

    __slots__ = ("headers", "mime", "status", "status_text", "timing")

    def __init__(self, response: Mapping[str, Any]) -> None:
        status = response.get("status")
        self.status: int | None = int(status) if isinstance(status, int | float) else None
        self.status_text = shared(response.get("statusText", ""))
        self.mime = shared(response.get("mimeType", ""))
        self.headers = _shared_headers(response.get("headers"))
        self.timing = Timing(response.get("timing"))


_NO_RESPONSE = _Response({})
"""A request that got no response: no status, type, headers or timing."""


class _Request:
    """A request still in flight: what the waterfall row will need."""

    __slots__ = (
        "extra_request_headers",
        "extra_response_headers",
        "frame_id",
        "hops",
        "loader_id",
        "method",
        "navigation",
        "post_data",
        "redirected_from",
        "request_headers",
        "resource_type",
        "response",
        "started",
        "started_ts",
        "url",
    )

    def __init__(self, params: dict[str, Any], redirected_from: str | None) -> None:
        request = params.get("request", {})
        self.method = shared(request.get("method", "GET"))
        self.url = shared(request.get("url", ""))
        self.resource_type = shared(str(params.get("type", "Other")).lower())
        self.started: float = params.get("wallTime") or time.time()
        self.started_ts: float = params.get("timestamp", 0.0)
        self.request_headers = _shared_headers(request.get("headers"))
        self.post_data: str | None = request.get("postData")
        self.redirected_from = redirected_from
        self.hops = 0
        """The rows of its redirect chain recorded before it."""
        self.navigation = self.resource_type == "document"
        self.loader_id = shared(params.get("loaderId", ""))
        self.frame_id = shared(params.get("frameId", ""))
        self.response: _Response | None = None
        self.extra_request_headers: dict[str, str] | None = None
        self.extra_response_headers: dict[str, str] | None = None

    def headers(self) -> tuple[dict[str, str], dict[str, str]]:
        """Request and response headers, names in lower case, the raw (cookie-bearing) ones first."""
        request = {**self.request_headers, **(self.extra_request_headers or {})}
        response = {**(self.response or _NO_RESPONSE).headers, **(self.extra_response_headers or {})}
        return request, response


class Sink(Protocol):
    """Where a feed puts what it reads: the recorder (`Telemetry`)."""

    body_cap: int
    fetch_limit: int
    max_event_rate: float
    redact: bool
    network: bool
    body_failures: int
    listener_errors: int

    def next_seq(self) -> int: ...

    def next_socket_id(self) -> int: ...

    def append(self, what: TelemetryKind, entry: Any) -> None: ...

    def shed(self, what: TelemetryKind, tab_id: int, count: int = 1) -> None: ...

    def read_body(self, read: Callable[[], Awaitable[None]]) -> bool:
        """Run `read` soon; False: too many reads wait already, and it is not run."""

    def browser_frame(self, tab_id: int, frame_id: str) -> bool:
        """Whether a feed of the tab heard this frame's document was the browser's own."""

    def hand_over(self, tab_id: int, request_id: str, to: TabFeed, *, take: bool = True) -> _Request | None:
        """A request in flight in another feed of the tab, taken from it for `to` (or, without
        `take`, left where it is)."""


class TabFeed:
    """Reads one tab's target session into its recorder; see the module docstring."""

    def __init__(self, sink: Sink, session: TargetSession, tab_id: int) -> None:
        self._sink = sink
        self._session = session
        self.tab_id = tab_id
        self._in_flight: OrderedDict[str, _Request] = OrderedDict()
        self._early_extra: OrderedDict[str, dict[str, dict[str, str]]] = OrderedDict()
        self._sockets = TabSockets(sink, tab_id)
        self._console_seen = 0
        self.browser_frames: set[str] = set()
        """Frames of the tab whose document is the browser's own (its PDF viewer's), as heard here."""
        self._browser_own: bool | None = None
        """This feed's frame is such a frame (None: not known yet)."""
        self._finished = False
        self._then: Callable[[], object] = lambda: None
        """Run once the feed has finished (`stop`)."""
        self._limited = False
        self._saw_document = False
        self._document: _Request | None = None
        """The newest document request of the tab's top frame seen."""
        self._recovered_end_due = False
        """The document recovered from timing was still loading: its end, unseen, is not dropped."""
        self._recovering: asyncio.Future[None] | None = None
        self._marker = f"tabpilot-dropped-{secrets.token_hex(8)}:"
        """What the page-side limiter's count line starts with (a page cannot guess it)."""
        self._console_budget = Bucket(sink.max_event_rate, sink.max_event_rate * 2)
        self._error_budget = Bucket(sink.max_event_rate, sink.max_event_rate * 2)
        """Error-level console lines have a rate of their own: a flood of others never cuts them."""
        self._network_budget = Bucket(sink.max_event_rate, sink.max_event_rate * 2)
        self._handlers: dict[str, Callable[[dict[str, Any]], None]] = {
            "Runtime.consoleAPICalled": self._on_console,
            "Runtime.exceptionThrown": self._on_exception,
            "Log.entryAdded": self._on_log_entry,
            "Network.requestWillBeSent": self._on_request,
            "Network.requestWillBeSentExtraInfo": self._on_request_extra,
            "Network.responseReceived": self._on_response,
            "Network.responseReceivedExtraInfo": self._on_response_extra,
            "Network.loadingFinished": self._on_finished,
            "Network.loadingFailed": self._on_failed,
            "Runtime.executionContextsCleared": self._on_new_document,
            **self._sockets.handlers(),
        }
        self._dispose = session.on_events(self._handlers, self._on_raw)

    def start(self) -> None:
        """Enable the domains (sent at once: the page may be about to load)."""
        limit = self._sink.fetch_limit
        enabled = (
            self._session.send(
                "Network.enable", {"maxResourceBufferSize": limit, "maxTotalBufferSize": limit * 8}
            )
            if self._sink.network
            else None
        )
        self._session.enable("Runtime")
        self._session.send("Log.enable")
        if enabled is None or (self._session.parent is not None and self._session.kind not in WORKER_TYPES):
            return  # no network to record; an iframe's document is requested by its parent's target
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # a feed driven by hand, outside a loop: no page to ask
        recover = (
            self._settle_worker_script if self._session.kind in WORKER_TYPES else self._recover_navigation
        )
        self._recovering = loop.create_task(recover(enabled))

    async def _recover_navigation(self, enabled: Awaitable[Any]) -> None:
        """Record the page's document request if it went before the feed could see it.

        The attach and the domains race Playwright, which holds a new popup only while it sets the
        page up: on a busy machine (for a link's `target=_blank` popup, often on any) a popup's
        first document can load before Network is on. The page's own navigation timing still has it
        (URL, status, size, timing; the method and headers are not known: the row says GET); see
        `_timing`. Of its redirects the page knows only how many there were: those are counted as
        dropped. The browser reports a document's start and answer, the page its end: a feed can
        hear the first two and not the end (`_settle_document`)."""
        try:
            await enabled
            if self._finished:
                return
            answer = await self._session.send(
                "Runtime.evaluate", {"expression": NAVIGATION_TIMING, "returnByValue": True, "silent": True}
            )
        except Exception:
            return
        if self._finished:
            return
        timing = answer.get("result", {}).get("value")
        if self._saw_document:
            self._settle_document(timing)
            return
        entry = document_entry(timing, self._sink.next_seq, self.tab_id)
        if entry is not None:
            self._saw_document = True
            self._sink.append("network_waterfall", entry)
            if timing.get("redirects"):  # of which the page knows only how many there were
                self._sink.shed("network_waterfall", self.tab_id, int(timing["redirects"]))
            self._recovered_end_due = not timing.get("end")

    def _settle_document(self, timing: Any) -> None:
        """The document request the feed saw, completed from the page's navigation timing: the
        hops of its redirect chain that went before Network was on are counted as dropped, and an
        end the page reached before its Network was on (Chromium reports none then) is taken from
        the timing. The page answers the timing after every event it sent, so a document still in
        flight whose answer the timing says is in will hear no more of it."""
        document = self._document
        if document is None or not isinstance(timing, dict) or timing.get("url") != document.url:
            return  # not that document's timing (none yet, or the page has gone on to another)
        missed = int(timing.get("redirects") or 0) - document.hops
        if missed > 0:
            self._sink.shed("network_waterfall", self.tab_id, missed)
        request_id = next((i for i, r in self._in_flight.items() if r is document), None)
        if request_id is None or not timing.get("end"):
            return
        del self._in_flight[request_id]
        if document.response is None:
            document.response = _Response({"status": timing.get("status")})
        answered = float(timing["end"]) / 1000
        self._finished_with(
            request_id, document, {"timestamp": document.started_ts + max(0.0, answered - document.started)}
        )

    async def _settle_worker_script(self, enabled: Awaitable[Any]) -> None:
        """Record the worker's script as loaded if its end went before the feed could hear it (see
        the module docstring). Its request started in the page's target under the worker's target
        id; once the worker answers an evaluation its script has run, and the script's own end
        (if the feed hears it at all) comes within `SCRIPT_GRACE`."""
        try:
            await enabled
            await self._session.send("Runtime.evaluate", {"expression": "0", "silent": True})
            await asyncio.sleep(SCRIPT_GRACE)
        except Exception:
            return  # the worker stopped before it ran: its feed's end records what it had
        # Still in flight here or in the page's feed (even if the worker stopped meanwhile): the
        # worker ran it, so it loaded; its end was not heard, so it has no duration.
        script = self._ending(self._session.target_id)
        if script is not None:
            self._record(script, None, None)

    def stop(self, then: Callable[[], object] = lambda: None) -> None:
        """The tab is gone. Its session still delivers what the target sent before it went (the
        close can be heard first); once the session closes, requests the tab cut short are
        recorded as such, never forgotten, and `then()` runs. A session that does not close soon
        is finished anyway."""
        self._then = then
        self._session.on_close(self._finish)
        asyncio.get_running_loop().call_later(FINISH_GRACE, self._finish)

    def _finish(self) -> None:
        if self._finished:
            return
        self._finished = True
        self._dispose()
        gone = {
            "iframe": "its iframe went away",
            "worker": "its worker stopped",
            # Recorded while the tab that started it is open: it may serve other tabs on.
            "shared_worker": "its worker stopped or its tab closed",
        }.get(self._session.kind, "the tab closed")
        for request_id in list(self._in_flight):
            self._record_unfinished(request_id, f"{gone} before the request finished")
        self._sockets.end_all(gone)
        self._then()

    # -- dispatch ----------------------------------------------------------------------------

    def _on_raw(self, method: str, raw: str) -> None:
        handler = self._handlers[method]  # on_events passes only these (dataReceived, ...: never parsed)
        if method == "Runtime.consoleAPICalled":
            if self._marker in raw:
                self._on_limited(raw)
                return
            if not self._console_admitted(error=_ERROR_LEVEL.search(raw) is not None):
                self._console_heard()  # what it showed is kept in the page all the same
                return
        elif method == "Network.requestWillBeSent" and not self._network_budget.take():
            self._sink.shed("network_waterfall", self.tab_id)
            return
        try:
            handler(json.loads(raw)["params"])
        except Exception:
            self._sink.listener_errors += 1

    # -- console and errors --------------------------------------------------------------------

    def _console_admitted(self, *, error: bool) -> bool:
        """Take a console line within the tab's rate (error-level lines have their own); past it,
        count it as dropped (and as a dropped error if it would have been one), once, and put
        the limiter in the page."""
        if (self._error_budget if error else self._console_budget).take():
            return True
        self._sink.shed("logs", self.tab_id)
        if error:
            self._sink.shed("errors", self.tab_id)
        if not self._limited:
            self._limit_console()
        return False

    def _limit_console(self) -> None:
        """Put the console limiter in the page, now and in the tab's later documents."""
        self._limited = True
        source = console_limiter(self._sink.max_event_rate, self._marker)
        self._session.send("Page.addScriptToEvaluateOnNewDocument", {"source": source})
        self._session.send("Runtime.evaluate", {"expression": source, "silent": True})

    def _on_limited(self, raw: str) -> None:
        """The limiter's line: how many console calls the page dropped since its previous one,
        and how many of them were errors."""
        try:
            (arg,) = json.loads(raw)["params"]["args"]
            count, errors = map(int, str(arg["value"]).removeprefix(self._marker).split("/"))
        except (KeyError, TypeError, ValueError):
            self._sink.listener_errors += 1
            return
        self._sink.shed("logs", self.tab_id, count)
        if errors:
            self._sink.shed("errors", self.tab_id, errors)

    def _on_console(self, params: dict[str, Any]) -> None:
        level = shared(params.get("type", "log"))
        text = shared(cut(console_text(params.get("args") or []), TEXT_CAP))
        frames = (params.get("stackTrace") or {}).get("callFrames") or [{}]
        if self._limited:  # the page's own call, not the limiter's wrapper
            frames = [f for f in frames if f.get("url") != LIMITER_URL] or [{}]
        frame = frames[0]
        self._console_line(
            level,
            text,
            shared(frame.get("url", "")),
            frame.get("lineNumber"),
            frame.get("columnNumber"),
            "console",
            "console" if level in ("error", "assert") else None,
        )
        self._console_heard()

    def _console_heard(self) -> None:
        """One more console message heard, kept or dropped: the page keeps the objects each showed
        for this session until they are released, every RELEASE_EVERY messages."""
        self._console_seen += 1
        if self._console_seen % RELEASE_EVERY == 0:
            self._session.send("Runtime.releaseObjectGroup", {"objectGroup": "console"})

    def _on_log_entry(self, params: dict[str, Any]) -> None:
        entry = params.get("entry") or {}
        for arg in entry.get("args") or []:
            if arg.get("objectId"):  # the page keeps what an entry showed until released
                self._session.send("Runtime.releaseObject", {"objectId": arg["objectId"]})
        source = shared(entry.get("source", "other"))
        if source == "worker":
            return  # a worker's own line, which the worker's feed records
        level = _LOG_LEVELS.get(entry.get("level", ""), "info")
        frame = ((entry.get("stackTrace") or {}).get("callFrames") or [{}])[0]
        url = shared(entry.get("url") or frame.get("url", ""))
        # The icon a browser asks for by itself, of a site that has none, is not the page's error.
        error = level == "error" and not (source == "network" and urlsplit(url).path == "/favicon.ico")
        if not self._console_admitted(error=error):
            return
        text = shared(cut(str(entry.get("text", "")), TEXT_CAP))
        line = entry.get("lineNumber", frame.get("lineNumber"))
        self._console_line(level, text, url, line, None, source, "browser" if error else None)

    def _console_line(
        self,
        level: str,
        text: str,
        url: str,
        line: int | None,
        column: int | None,
        source: str,
        error: Literal["console", "browser"] | None,
    ) -> None:
        """Record a console entry of this tab, and with it an error entry when `error` names its
        source. `line` and `column` as CDP gives them, from 0 (None: not given)."""
        sink, now = self._sink, time.time()
        # Counted from 1 as editors and error stacks count them; 0: not known.
        line, column = (
            (line + 1 if isinstance(line, int) else 0),
            (column + 1 if isinstance(column, int) else 0),
        )
        sink.append(
            "logs", ConsoleEntry(sink.next_seq(), now, self.tab_id, level, text, url, line, column, source)
        )
        if error is not None:
            sink.append("errors", ErrorEntry(sink.next_seq(), now, self.tab_id, error, text, "", url))

    def _on_exception(self, params: dict[str, Any]) -> None:
        details = params.get("exceptionDetails", {})
        exception = details.get("exception") or {}
        description = str(exception.get("description") or "")
        if "value" in exception:
            message, stack = str(exception["value"]), ""
        elif description:
            head = description.splitlines()[0]
            name = str(exception.get("className") or "")
            message = head.split(": ", 1)[1] if name and head.startswith(name + ":") else head
            stack = description
        else:
            message, stack = str(details.get("text") or "Error"), ""
        sink = self._sink
        sink.append(
            "errors",
            ErrorEntry(
                sink.next_seq(),
                time.time(),
                self.tab_id,
                "exception",
                cut(message, TEXT_CAP),
                cut(stack, TEXT_CAP),
                details.get("url", ""),
            ),
        )

    # -- network -------------------------------------------------------------------------------

    def _on_request(self, params: dict[str, Any]) -> None:
        if str((params.get("request") or {}).get("url", "")).startswith(BROWSER_OWN):
            # The browser's own viewer inside the page (a PDF's): no page can ask for one. Its
            # frame's feed leaves out all its frame asks for (the PDF again, for the viewer).
            if params.get("type") == "Document" and params.get("frameId"):
                self.browser_frames.add(params["frameId"])
                if len(self.browser_frames) > MAX_BROWSER_FRAMES:
                    self.browser_frames.pop()
            return
        if self._browser_own is None:
            # Asked once, at the frame's first request: the parent's feed heard its document first.
            self._browser_own = self._session.kind == "iframe" and self._sink.browser_frame(
                self.tab_id, self._session.target_id
            )
        if self._browser_own:
            return
        request_id = params["requestId"]
        redirected_from, hops = None, 0
        previous = self._in_flight.pop(request_id, None)
        if previous is None and "redirectResponse" in params:
            previous = self._hop_unseen(params)
        if previous is not None and "redirectResponse" in params:
            # One request id for every hop of a redirect chain: the previous hop ends here.
            previous.response = _Response(params["redirectResponse"])
            self._record(previous, params.get("timestamp", previous.started_ts), None)
            redirected_from, hops = previous.url, previous.hops + 1
        request = _Request(params, redirected_from)
        request.hops = hops
        if request.navigation:
            self._saw_document = True
            if request.frame_id == self._session.target_id:
                self._document = request
        for field, headers in self._early_extra.pop(request_id, {}).items():
            setattr(request, field, headers)
        self._in_flight[request_id] = request
        if len(self._in_flight) > MAX_IN_FLIGHT:
            # Requests that never finish (a hung server) are recorded rather than tracked for ever.
            oldest = next(iter(self._in_flight))
            self._record_unfinished(oldest, f"still unfinished after {MAX_IN_FLIGHT} later requests")

    def _find(self, request_id: str, *, take: bool = True) -> _Request | None:
        """The request in flight with this id: this feed's, or another feed's of the tab, then
        taken over unless `take` is False (a cross-site iframe's document request starts in its
        parent's target and ends in its own; a worker's script too, and the page's target hears
        the raw headers of the worker's requests, which end in the worker's)."""
        request = self._in_flight.get(request_id)
        if request is None:
            request = self._sink.hand_over(self.tab_id, request_id, self, take=take)
            if request is not None and take:
                self._in_flight[request_id] = request
        return request

    def _ending(self, request_id: str) -> _Request | None:
        """The request in flight with this id, as `_find` finds it, out of flight: it ends here."""
        request = self._in_flight.pop(request_id, None)
        return request if request is not None else self._sink.hand_over(self.tab_id, request_id, self)

    def holds(self, request_id: str) -> _Request | None:
        """This feed's request in flight with this id."""
        return self._in_flight.get(request_id)

    def give_up(self, request_id: str) -> _Request | None:
        """This feed's request in flight with this id, no longer this feed's (`_find`)."""
        return self._in_flight.pop(request_id, None)

    def _extra(self, params: dict[str, Any], field: str) -> None:
        request = self._find(params["requestId"], take=False)
        if request is not None:
            setattr(request, field, _shared_headers(params.get("headers")))
            return
        # ExtraInfo may come before its request's event: keep it briefly.
        self._early_extra.setdefault(params["requestId"], {})[field] = _shared_headers(params.get("headers"))
        while len(self._early_extra) > 200:
            self._early_extra.popitem(last=False)

    def _on_request_extra(self, params: dict[str, Any]) -> None:
        self._extra(params, "extra_request_headers")

    def _on_response_extra(self, params: dict[str, Any]) -> None:
        self._extra(params, "extra_response_headers")

    def _on_response(self, params: dict[str, Any]) -> None:
        request = self._find(params["requestId"])
        if request is None:
            request = self._started_unseen(params)
            if request is None:
                return
        request.response = _Response(params.get("response") or {})
        if request.navigation and request.frame_id == self._session.target_id:
            # The main frame commits a new document (its frame id is the target's): what the old
            # one still had in flight is cancelled, and Chromium says nothing more about it.
            for request_id, other in list(self._in_flight.items()):
                if other.loader_id != request.loader_id and other.frame_id == request.frame_id:
                    self._record_unfinished(request_id, "the page navigated away before the request finished")

    def _on_new_document(self, _params: dict[str, Any]) -> None:
        """The target's top frame committed a new document (Chromium clears the contexts only
        then: not for a download or a 204, which leave the page as it was). The old document's
        WebSockets went with it, and Chromium says nothing more about them."""
        self._sockets.end_all("the page navigated away")

    def _started_unseen(self, params: dict[str, Any]) -> _Request | None:
        """A page's request whose start went before Network was on (a popup's first fetch, on a
        busy machine), answered now: in flight from its response on (its method and request
        headers not known: the row gives no method). Not a worker's (counted as dropped when it
        ends, module docstring), nor a document (the navigation recovery has it)."""
        kind = str(params.get("type", "Other"))
        if self._session.kind in WORKER_TYPES or kind == "Document":
            return None
        response = params.get("response") or {}
        if str(response.get("url", "")).startswith(BROWSER_OWN):
            return None  # the browser's own, as in `_on_request`
        request = self._answered(params, response)
        self._in_flight[params["requestId"]] = request
        return request

    def _hop_unseen(self, params: dict[str, Any]) -> _Request | None:
        """The hop a redirect leaves, of a chain whose start went before Network was on (a popup's
        first document, on a busy machine): known from its answer, as `_started_unseen`. A
        worker's is counted as dropped (module docstring)."""
        if self._session.kind in WORKER_TYPES:
            self._sink.shed("network_waterfall", self.tab_id)
            return None
        return self._answered(params, params["redirectResponse"])

    @staticmethod
    def _answered(params: dict[str, Any], response: Mapping[str, Any]) -> _Request:
        """A request known from its answer only (the row gives no method)."""
        started = (response.get("timing") or {}).get("requestTime") or params.get("timestamp", 0.0)
        return _Request(
            {
                "request": {"url": response.get("url", ""), "method": ""},
                "type": params.get("type", "Other"),
                "timestamp": started,
                "wallTime": time.time() - max(0.0, params.get("timestamp", started) - started),
                "loaderId": params.get("loaderId", ""),
                "frameId": params.get("frameId", ""),
            },
            None,
        )

    def _unseen(self) -> None:
        """A request ended whose start and answer this feed never saw: a worker's that went before
        its Network.enable (module docstring) is counted as dropped, and so is a page's once its
        document is accounted for (before, it may be the document, which the navigation recovery
        has; so is the first such end after it recovered a document still loading)."""
        if self._recovered_end_due:
            self._recovered_end_due = False
        elif self._session.kind in WORKER_TYPES or self._saw_document:
            self._sink.shed("network_waterfall", self.tab_id)

    def _on_finished(self, params: dict[str, Any]) -> None:
        request_id = params["requestId"]
        request = self._ending(request_id)
        if request is None:
            self._unseen()
            return
        self._finished_with(request_id, request, params)

    def _finished_with(self, request_id: str, request: _Request, params: dict[str, Any]) -> None:
        self._record(request, params.get("timestamp", request.started_ts), None)
        if request.response is not None and self._wants_body(request):
            self._body(request_id, request)

    def _on_failed(self, params: dict[str, Any]) -> None:
        request_id = params["requestId"]
        request = self._ending(request_id)
        if request is None:
            self._unseen()
            return
        failure = params.get("errorText") or ("net::ERR_ABORTED" if params.get("canceled") else "failed")
        status = (request.response or _NO_RESPONSE).status
        if status in _EMPTY_STATUS and failure == "net::ERR_ABORTED":
            # Chromium cancels the body of a 204 or 205 the page never reads; there is none, so
            # the request got its whole answer: it finished.
            self._finished_with(request_id, request, params)
            return
        if failure == "net::ERR_ABORTED" and _downloaded(request):
            # The download took the answer over: the file's fate is the download's (its events).
            self._record(request, params.get("timestamp", request.started_ts), None, download=True)
            return
        # Why the browser refused it, where it says (DevTools' Status column): a blocked request's
        # reason, or the CORS policy's ("net::ERR_FAILED" alone says nothing).
        blocked = params.get("blockedReason")
        cors = (params.get("corsErrorStatus") or {}).get("corsError")
        why = blocked or (f"CORS: {cors}" if cors else None)
        self._record(
            request, params.get("timestamp", request.started_ts), f"{failure} ({why})" if why else failure
        )

    def _record_unfinished(self, request_id: str, why: str) -> None:
        request = self._in_flight.pop(request_id, None)
        if request is None:
            return
        # With its response in (a page that loaded, then closed itself) it is recorded as answered:
        # only the browser's "finished loading" notice was lost with the tab.
        self._record(request, None, why if request.response is None else None)
        if request.response is not None and self._wants_body(request):
            self._sink.body_failures += 1
            self._body_entry(request, None, None, False, "unavailable")

    def _body(self, request_id: str, request: _Request) -> None:
        """Record the body entry of a finished request, reading its text body if it has one."""
        sink, response = self._sink, request.response or _NO_RESPONSE
        _, headers = request.headers()

        def fields(data: dict[str, Any] | None) -> tuple[str | None, int | None, bool, str | None]:
            return body_fields(
                data,
                mime=response.mime,
                status=response.status,
                method=request.method,
                content_length=headers.get("content-length", ""),
                cap=sink.body_cap,
                limit=sink.fetch_limit,
            )

        known = fields(None)
        if known[3] != "unavailable":
            self._body_entry(request, *known)
            return

        async def read() -> None:
            try:
                data = await asyncio.wait_for(
                    self._session.send("Network.getResponseBody", {"requestId": request_id}), 10
                )
            except Exception:
                sink.body_failures += 1  # the page closed or navigated away first
                data = None
            self._body_entry(request, *fields(data))

        if not sink.read_body(read):
            self._body_entry(request, None, known[1], False, "busy")

    @staticmethod
    def _wants_body(request: _Request) -> bool:
        # A redirect has no body of its own. Images, fonts and media are binary; scripts and
        # stylesheets are static assets, large and many, that would crowd the API responses and
        # documents an agent debugs out of the byte-bounded ring. The waterfall has them all.
        status = (request.response or _NO_RESPONSE).status or 0
        return not 300 <= status < 400 and request.resource_type not in _NO_BODY_TYPES

    def _record(
        self, request: _Request, finished_ts: float | None, failure: str | None, *, download: bool = False
    ) -> None:
        response = request.response or _NO_RESPONSE
        _, response_headers = request.headers()
        length = response_headers.get("content-length", "")
        duration = (finished_ts - request.started_ts) * 1000 if finished_ts else -1.0
        sink = self._sink
        sink.append(
            "network_waterfall",
            NetworkEntry(
                sink.next_seq(),
                time.time(),
                self.tab_id,
                request.method,
                request.url,
                request.resource_type,
                response.status,
                response.status_text,
                failure,
                response.mime,
                request.started,
                max(duration, 0.0) if finished_ts else -1.0,
                response.timing,
                len(request.post_data.encode()) if request.post_data is not None else None,
                int(length) if length.isdigit() else None,
                request.navigation,
                request.redirected_from,
                download,
            ),
        )

    def _body_entry(
        self, request: _Request, body: str | None, size: int | None, truncated: bool, omitted: str | None
    ) -> None:
        sink = self._sink
        response = request.response or _NO_RESPONSE
        request_headers, response_headers = (_redacted(h, sink.redact) for h in request.headers())
        post = request.post_data
        binary = post is not None and _CONTROL.search(post) is not None  # bytes Chromium gave as text
        request_body = post[: sink.body_cap] if post and sink.body_cap and not binary else None
        held = (
            len(body or "")
            + len(request_body or "")
            + sum(len(k) + len(v) for k, v in (*request_headers, *response_headers))
            + 200  # the entry itself
        )
        sink.append(
            "network_bodies",
            BodyEntry(
                sink.next_seq(),
                time.time(),
                self.tab_id,
                request.method,
                request.url,
                response.status,
                response.mime,
                request_headers,
                response_headers,
                request_body,
                body,
                size,
                truncated,
                omitted,
                held,
                binary,
            ),
        )

    # -- state ---------------------------------------------------------------------------------

    def pending(self) -> list[PendingRequest]:
        return [
            PendingRequest(self.tab_id, r.method, r.url, r.resource_type, r.started)
            for r in self._in_flight.values()
        ] + self._sockets.pending()


def body_fields(
    data: dict[str, Any] | None,
    *,
    mime: str,
    status: int | None,
    method: str,
    content_length: str,
    cap: int,
    limit: int,
) -> tuple[str | None, int | None, bool, str | None]:
    """What a body entry holds, given `Network.getResponseBody`'s answer (None: not fetched):
    (text, size in bytes, truncated, why omitted)."""
    length = int(content_length) if content_length.isdigit() else None
    if method == "HEAD" or status in _NO_BODY_STATUS or length == 0:
        return None, length, False, "no body"
    if not is_text_mime(mime):
        return None, length, False, "binary"
    if cap == 0:
        return None, length, False, "disabled"
    if length is not None and length > limit:
        return None, length, False, "too large"
    if data is None:
        return None, length, False, "unavailable"
    raw = (
        base64.b64decode(data.get("body", ""))
        if data.get("base64Encoded")
        else str(data.get("body", "")).encode()
    )
    truncated = len(raw) > cap
    # Cutting bytes may split a character: drop the partial one rather than garble it.
    text = shared(raw[:cap].decode("utf-8", errors="ignore" if truncated else "replace"))
    return text, len(raw), truncated, None
