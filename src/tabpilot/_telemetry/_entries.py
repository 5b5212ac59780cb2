"""What telemetry records: one frozen entry type per kind, and a page of entries (`ObserveResult`).

Every entry carries its sequence number (one counter for all kinds, so one cursor covers all),
when it was recorded, and the id of its tab (None: it belongs to no tab). `to_dict()` uses
camelCase keys.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Literal, Protocol, get_args

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


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def camel_dict(entry: Any, *, skip: tuple[str, ...] = (), **extra: Any) -> dict[str, Any]:
    """An entry's fields under camelCase keys (`skip` left out, `extra` added or replacing)."""
    found = {_camel(f.name): getattr(entry, f.name) for f in fields(entry) if f.name not in skip}
    found.update(extra)
    return found


def cut(text: str, cap: int) -> str:
    if len(text) <= cap:
        return text
    return text[:cap] + f"… [{len(text) - cap} more characters]"


@dataclass(frozen=True, slots=True)
class ConsoleEntry:
    """A console message (`what="logs"`): the page's own (`source="console"`: console.log and the
    like) or one the browser logged for the page, with its kind as Chromium names it (`network`:
    a resource that failed to load; `security`: a blocked request or a CSP violation;
    `violation`, `intervention`, `deprecation`, `javascript`, `rendering`, `other`, ...).
    `line` and `column` count from 1, as editors and error stacks do (0: not known)."""

    seq: int
    timestamp: float
    tab_id: int | None
    level: str
    text: str
    url: str
    line: int
    column: int
    source: str = "console"

    def to_dict(self) -> dict[str, Any]:
        return camel_dict(
            self,
            skip=("url", "line", "column"),
            location={"url": self.url, "line": self.line, "column": self.column},
        )


@dataclass(frozen=True, slots=True)
class ErrorEntry:
    """An uncaught page error (`source="exception"`), a console.error (`source="console"`), or an
    error the browser logged for the page (`source="browser"`: a resource that failed to load, a
    blocked request, ...; its console line says which kind)."""

    seq: int
    timestamp: float
    tab_id: int | None
    source: Literal["exception", "console", "browser"]
    message: str
    stack: str
    url: str

    def to_dict(self) -> dict[str, Any]:
        return camel_dict(self)


class Timing(Mapping[str, float]):
    """A request's timing phases in ms (Chromium's ResourceTiming: `sendStart`, `receiveHeadersEnd`
    and the rest; -1 for a phase that did not happen), read like a dict.

    Held compactly: the waterfall keeps thousands of entries, and a dict per entry (with its own
    copies of some twenty names, decoded anew from every event) cost about 2 KB of each. The names
    are one tuple shared by every entry whose event named the same phases; the values are an
    array of doubles.
    `requestTime` (a clock reading that the other phases are offsets from) is left out, and so is
    anything that is not a number.
    """

    __slots__ = ("_names", "_values")
    _shapes: ClassVar[dict[tuple[str, ...], tuple[str, ...]]] = {}
    """Every name an event's timing had -> the names kept (a Chromium sends the same few sets)."""
    _MAX_SHAPES: ClassVar[int] = 64

    def __init__(self, phases: Mapping[str, Any] | None = None) -> None:
        phases = phases or {}
        every = tuple(phases)
        names = Timing._shapes.get(every)
        if names is None:
            names = _numeric_phases(phases)
            if len(Timing._shapes) < Timing._MAX_SHAPES:
                Timing._shapes[every] = names
        try:
            values = array("d", [phases[name] for name in names])
        except TypeError:  # a phase that is not a number this time
            names = _numeric_phases(phases)
            values = array("d", [phases[name] for name in names])
        self._names: tuple[str, ...] = names
        self._values: array[float] = values

    def __getitem__(self, name: str) -> float:
        try:
            return self._values[self._names.index(name)]
        except ValueError:
            raise KeyError(name) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __repr__(self) -> str:
        return f"Timing({dict(self)!r})"


def _numeric_phases(phases: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(
        name for name, value in phases.items() if type(value) in (int, float) and name != "requestTime"
    )


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
    download: bool = False
    """The browser took the answer as a file to download (not a failure: Chromium reports the
    request as aborted once the download takes it over)."""

    def to_dict(self) -> dict[str, Any]:
        return camel_dict(self, timing=dict(self.timing))


@dataclass(frozen=True, slots=True)
class BodyEntry:
    """Headers and bodies of one request (`what="network_bodies"`): documents, fetch/XHR, event
    streams and other requests; not images, fonts, media, scripts or stylesheets (see `_wants_body`).

    Text bodies are kept up to the byte cap (`truncated` says it was cut); binary bodies are not
    stored (`omitted="binary"`). `omitted` says why there is no body: binary, too large, disabled,
    no body, unavailable (the page closed before it could be read), busy (too many bodies were
    waiting to be read: it was not read).
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
    request_binary: bool = False
    """The request's body was bytes, not text: not kept (`request_body` is None)."""

    def to_dict(self) -> dict[str, Any]:
        return camel_dict(
            self,
            skip=("size",),
            requestHeaders=dict(self.request_headers),
            responseHeaders=dict(self.response_headers),
            binary=self.omitted == "binary",
        )


@dataclass(frozen=True, slots=True)
class WebSocketEntry:
    """A WebSocket connection opening or closing, or one frame sent or received. `error` is an
    error's message; on a close, why the connection ended when its page went away (Chromium
    reports no close then)."""

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
        return camel_dict(self)


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
        return camel_dict(self, arguments=dict(self.arguments))


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
        return camel_dict(self, waitingMs=round((time.time() - self.started) * 1000))


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


@dataclass(frozen=True, slots=True)
class ObserveResult:
    """One page of entries, oldest first, with what the caller needs to read them right.

    `next_cursor` is the `since` to pass next time to get only newer entries; when `has_more`,
    more entries than `limit` matched after the cursor and the next call continues from there.
    Without `since`, a query returns the newest `limit` matches. Every kind is numbered from one
    counter, so a cursor from one kind serves any other (and `tab_events` too when the recorder
    numbers with the event bus, as the server's does: `Telemetry(numbering=manager.events)`).
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
    older: bool = False
    """Without `since`: more entries matched before the newest `limit` returned (read them from
    `since=0`)."""
    pending: tuple[PendingRequest, ...] = ()
    """network_waterfall: requests still in flight that match the tab and url/method filters."""
    missed: bool = False
    """With `since`: entries newer than it were dropped before this read (the buffer keeps the
    newest), so the entries do not follow on from the cursor; they may not have matched the
    filters. `dropped` counts every one dropped."""

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
            "older": self.older,
            "missed": self.missed,
            **extra,
        }
